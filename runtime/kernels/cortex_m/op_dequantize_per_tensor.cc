// cortex_m::dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
//     int quant_max, ScalarType dtype, *, Tensor(a!) out)
// int8/int16 to float32: (float)(q - zp) * (float)scale, one fp32 multiply (cortex-m-ops.md §3.2).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

namespace {

template <typename Q>
void dequantize(const Q* q, float* y, int64_t n, float scale, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(wrap_sub(static_cast<int32_t>(q[i]), zp)) * scale;
  }
}

}  // namespace

Error dequantize_per_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::dequantize_per_tensor";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[6]->to_tensor();
  ScalarType type;
  int32_t type_lo, type_hi, zp, qmin, qmax;
  EMBER_TRY(quantized_dtype(*args[5], op, &type, &type_lo, &type_hi));
  EMBER_TRY(check_dtype(in, type, op, "input"));
  EMBER_TRY(check_dtype(out, ScalarType::Float, op, "out"));
  EMBER_TRY(read_int32(*args[2], op, "zero_point", &zp));
  EMBER_TRY(read_int32(*args[3], op, "quant_min", &qmin));
  EMBER_TRY(read_int32(*args[4], op, "quant_max", &qmax));
  EMBER_CHECK(zp >= qmin && zp <= qmax, Error::InvalidArgument,
              "%s: zero_point %d is outside [quant_min, quant_max] = [%d, %d]", op, zp, qmin, qmax);
  if (Error e = out.resize(in.sizes()); e != Error::Ok) return add_error_context(e, "%s: out", op);
  EMBER_CHECK(same_layout(in, out), Error::InvalidArgument,
              "%s: input and out must share one dim order", op);
  const float scale = static_cast<float>(args[1]->scalar_as_double());
  if (type == ScalarType::Char) {
    dequantize(in.data<int8_t>(), out.data<float>(), in.numel(), scale, zp);
  } else {
    dequantize(in.data<int16_t>(), out.data<float>(), in.numel(), scale, zp);
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
