// cortex_m::quantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
//     int quant_max, ScalarType dtype, *, Tensor(a!) out)
// float32 to int8/int16 by the scalar C++ rule (cortex-m-ops.md §3.1): a multiply by the fp32
// reciprocal, rounded half to even, not a division (the two differ at ties).
#include <cmath>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {
namespace {

template <typename Q>
void quantize(const float* x, Q* q, int64_t n, float inv, int32_t zp, int32_t lo, int32_t hi) {
  for (int64_t i = 0; i < n; ++i) {
    const float p = x[i] * inv;
    float r = std::nearbyint(p);
    // NaN and |r| >= 2^31 are undefined in the kernel; Ember maps NaN to the zero point and
    // saturates the rest, so no input can reach an undefined conversion.
    if (std::isnan(r)) r = 0.0f;
    r = std::fmin(std::fmax(r, -1e12f), 1e12f);
    int64_t v = int64_t{zp} + static_cast<int64_t>(r);
    v = v < lo ? lo : (v > hi ? hi : v);
    q[i] = static_cast<Q>(v);
  }
}

}  // namespace

Error quantize_per_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantize_per_tensor";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[6]->to_tensor();
  ScalarType type;
  int32_t type_lo, type_hi, zp, qmin, qmax;
  EMBER_TRY(quantized_dtype(*args[5], op, &type, &type_lo, &type_hi));
  EMBER_TRY(check_dtype(in, ScalarType::Float, op, "input"));
  EMBER_TRY(check_dtype(out, type, op, "out"));
  EMBER_TRY(read_int32(*args[2], op, "zero_point", &zp));
  EMBER_TRY(read_int(*args[3], op, "quant_min", type_lo, type_hi, &qmin));
  EMBER_TRY(read_int(*args[4], op, "quant_max", type_lo, type_hi, &qmax));
  EMBER_CHECK(qmin <= qmax, Error::InvalidArgument, "%s: quant_min %d is above quant_max %d", op,
              qmin, qmax);
  const float scale = static_cast<float>(args[1]->scalar_as_double());
  EMBER_CHECK(std::isfinite(scale) && scale > 0.0f, Error::InvalidArgument,
              "%s: scale %g must be positive and finite as float32", op,
              args[1]->scalar_as_double());
  if (Error e = out.resize(in.sizes()); e != Error::Ok) return add_error_context(e, "%s: out", op);
  EMBER_CHECK(same_layout(in, out), Error::InvalidArgument,
              "%s: input and out must share one dim order", op);
  const float inv = 1.0f / scale;
  if (type == ScalarType::Char) {
    quantize(in.data<float>(), out.data<int8_t>(), in.numel(), inv, zp, qmin, qmax);
  } else {
    quantize(in.data<float>(), out.data<int16_t>(), in.numel(), inv, zp, qmin, qmax);
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
