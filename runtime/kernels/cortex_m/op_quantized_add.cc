// cortex_m::quantized_add.out(Tensor self, int self_zero_point, int self_multiplier,
//     int self_shift, Tensor other, int other_zero_point, int other_multiplier, int other_shift,
//     int output_zero_point, int output_multiplier, int output_shift, int activation_min,
//     int activation_max, *, Tensor(a!) out)
// int8 addition (cortex-m-ops.md §3.9): each input, less its (true) zero point and scaled by 2^20,
// is requantized to a common scale; their 32-bit wrapping sum is requantized to the output.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/elementwise.h"

namespace ember::cortex_m {
namespace {

constexpr int kLeftShift = 20;  // the kernel's fixed headroom

struct Side {
  int32_t zp, mult, shift;
};

Error read_side(std::span<EValue*> args, int first, const char* op, const char* zp_name,
                const char* mult_name, const char* shift_name, Side* s) {
  EMBER_TRY(read_int32(*args[first], op, zp_name, &s->zp));
  EMBER_TRY(read_int32(*args[first + 1], op, mult_name, &s->mult));
  return read_int(*args[first + 2], op, shift_name, kMinShift, kMaxShift, &s->shift);
}

}  // namespace

Error quantized_add_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_add";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& other = args[4]->to_tensor();
  Tensor& out = args[13]->to_tensor();
  Side a, b, o;
  EMBER_TRY(read_side(args, 1, op, "self_zero_point", "self_multiplier", "self_shift", &a));
  EMBER_TRY(read_side(args, 5, op, "other_zero_point", "other_multiplier", "other_shift", &b));
  EMBER_TRY(read_side(args, 8, op, "output_zero_point", "output_multiplier", "output_shift", &o));
  int32_t act_min, act_max;
  EMBER_TRY(read_activation(*args[11], *args[12], op, &act_min, &act_max));
  Broadcast mode;
  EMBER_TRY(binary_shapes(self, other, out, op, &mode));
  for_each_pair(self, other, out, mode, [&](int32_t x, int32_t y) {
    const int32_t u = requantize(wrap_shl(wrap_sub(x, a.zp), kLeftShift), a.mult, a.shift);
    const int32_t v = requantize(wrap_shl(wrap_sub(y, b.zp), kLeftShift), b.mult, b.shift);
    const int32_t r = wrap_add(requantize(wrap_add(u, v), o.mult, o.shift), o.zp);
    return clamp_i32(r, act_min, act_max);
  });
  return Error::Ok;
}

}  // namespace ember::cortex_m
