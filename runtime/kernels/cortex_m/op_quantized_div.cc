// cortex_m::quantized_div.out(Tensor self, int self_zero_point, Tensor other,
//     int other_zero_point, int output_zero_point, float output_scale, *, Tensor(a!) out)
// int8/int16 division in fp32 (cortex-m-ops.md §3.11): roundf(((x - zp_a) / (y - zp_b)) * e)
// + zp_out, clamped in float; a zero denominator gives a quotient of 0. Equal shapes only.
#include <cmath>
#include <limits>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {
namespace {

template <typename Q>
void divide(const Q* a, const Q* b, Q* y, int64_t n, int32_t zp_a, int32_t zp_b, int32_t zp_out,
            float e) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  for (int64_t i = 0; i < n; ++i) {
    const int32_t num = wrap_sub(a[i], zp_a), den = wrap_sub(b[i], zp_b);
    const float quot = den == 0 ? 0.0f : static_cast<float>(num) / static_cast<float>(den);
    const float prod = quot * e;  // its own statement: rounded to fp32 before roundf
    // e is finite, so v is never NaN: the float clamp below decides every value.
    const float v = std::round(prod) + static_cast<float>(zp_out);
    y[i] = static_cast<Q>(v < lo ? lo : (v > hi ? hi : v));
  }
}

}  // namespace

Error quantized_div_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_div";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& other = args[2]->to_tensor();
  Tensor& out = args[6]->to_tensor();
  int32_t zp_a, zp_b, zp_out;
  EMBER_TRY(read_int32(*args[1], op, "self_zero_point", &zp_a));
  EMBER_TRY(read_int32(*args[3], op, "other_zero_point", &zp_b));
  EMBER_TRY(read_int32(*args[4], op, "output_zero_point", &zp_out));
  const float e = static_cast<float>(args[5]->scalar_as_double());
  EMBER_CHECK(std::isfinite(e), Error::InvalidArgument,
              "%s: output_scale %g is not finite as float32", op, args[5]->scalar_as_double());
  const ScalarType t = self.dtype();
  EMBER_CHECK(t == ScalarType::Char || t == ScalarType::Short, Error::InvalidArgument,
              "%s: self has dtype %s, expected int8 or int16", op, to_string(t));
  EMBER_TRY(check_dtype(other, t, op, "other"));
  EMBER_TRY(check_dtype(out, t, op, "out"));
  EMBER_CHECK(same_layout(self, other) && same_layout(self, out), Error::InvalidArgument,
              "%s: self, other and out must have equal sizes and dim order (no broadcasting)", op);
  if (t == ScalarType::Char) {
    divide(self.data<int8_t>(), other.data<int8_t>(), out.data<int8_t>(), out.numel(), zp_a, zp_b,
           zp_out, e);
  } else {
    divide(self.data<int16_t>(), other.data<int16_t>(), out.data<int16_t>(), out.numel(), zp_a,
           zp_b, zp_out, e);
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
