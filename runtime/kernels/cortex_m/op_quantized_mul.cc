// cortex_m::quantized_mul.out(Tensor self, int self_zero_point, Tensor other,
//     int other_zero_point, int output_zero_point, int output_multiplier, int output_shift, *,
//     Tensor(a!) out)
// int8 multiplication (cortex-m-ops.md §3.10): the product of the zero-point-free inputs,
// requantized, offset and clamped to [-128, 127]. Shapes as quantized_add.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/elementwise.h"

namespace ember::cortex_m {

Error quantized_mul_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_mul";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& other = args[2]->to_tensor();
  Tensor& out = args[7]->to_tensor();
  int32_t zp_a, zp_b, zp_out, mult, shift;
  EMBER_TRY(read_int32(*args[1], op, "self_zero_point", &zp_a));
  EMBER_TRY(read_int32(*args[3], op, "other_zero_point", &zp_b));
  EMBER_TRY(read_int32(*args[4], op, "output_zero_point", &zp_out));
  EMBER_TRY(read_int32(*args[5], op, "output_multiplier", &mult));
  EMBER_TRY(read_int(*args[6], op, "output_shift", kMinShift, kMaxShift, &shift));
  Broadcast mode;
  EMBER_TRY(binary_shapes(self, other, out, op, &mode));
  for_each_pair(self, other, out, mode, [&](int32_t x, int32_t y) {
    const int32_t prod = wrap_mul(wrap_sub(x, zp_a), wrap_sub(y, zp_b));
    return clamp_i32(wrap_add(requantize(prod, mult, shift), zp_out), -128, 127);
  });
  return Error::Ok;
}

}  // namespace ember::cortex_m
