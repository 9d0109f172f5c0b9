// quantized_decomposed::quantize_per_tensor.out(Tensor input, float scale, int zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// quantized_decomposed::quantize_per_tensor.Tensor_out(Tensor input, Tensor scale,
//     Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// quantized_decomposed::quantize_per_channel.out(Tensor input, Tensor scales, Tensor zero_points,
//     int axis, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// quantized_decomposed::quantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points,
//     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
//
// clamp(round(x / scale) + zero_point) as PyTorch's references compute it (quant_family.h): per
// tensor multiplies by float(1.0 / scale) in float32; per channel takes the reciprocal and the
// product in the scales' dtype; per token adds the zero point before rounding, in the promoted
// dtype of input and scales. float16 and bfloat16 inputs are read as float32.
#include "runtime/kernels/portable/quant_family.h"

namespace ember {
namespace {

// Checks shared by the four kernels: a floating input (per tensor and per channel accept float32,
// float16 and bfloat16, as PyTorch; per token also float64), out of the quantized dtype and
// input's shape, and the quant range.
Error check_quantize_args(const char* op, const Tensor& in, const EValue& dtype_arg,
                          int64_t quant_min, int64_t quant_max, bool allow_double, Tensor& out,
                          ScalarType* dtype) {
  EMBER_TRY(scalar_type_arg(op, dtype_arg, dtype));
  const ScalarType t = in.dtype();
  EMBER_CHECK(t == ScalarType::Float || t == ScalarType::Half || t == ScalarType::BFloat16 ||
                  (allow_double && t == ScalarType::Double),
              Error::InvalidArgument,
              "%s: Expecting input to have dtype torch.float32 (or float16, bfloat16), but got "
              "dtype: %s",
              op, to_string(t));
  EMBER_TRY(check_quant_range(op, *dtype, quant_min, quant_max));
  EMBER_CHECK(out.dtype() == *dtype, Error::InvalidArgument,
              "%s: out has dtype %s, not the requested dtype %s", op, to_string(out.dtype()),
              to_string(*dtype));
  return out.resize(in.sizes());
}

// Runs quantize<S, C, O> with O out's integer dtype.
template <typename S, typename C>
void run_quantize(const Tensor& in, Tensor& out, const QuantParams& p, int64_t quant_min,
                  int64_t quant_max, QuantOrder order) {
  switch (out.dtype()) {
    case ScalarType::Byte:
      return quantize<S, C, uint8_t>(in, out, p, quant_min, quant_max, order);
    case ScalarType::Char:
      return quantize<S, C, int8_t>(in, out, p, quant_min, quant_max, order);
    case ScalarType::Short:
      return quantize<S, C, int16_t>(in, out, p, quant_min, quant_max, order);
    default:  // Int: check_quant_range admits no other dtype
      return quantize<S, C, int32_t>(in, out, p, quant_min, quant_max, order);
  }
}

Error quantize_per_tensor(const char* op, const Tensor& in, double scale, int64_t zero_point,
                          std::span<EValue*> args, Tensor& out) {
  const int64_t quant_min = args[3]->to_int(), quant_max = args[4]->to_int();
  ScalarType dtype = ScalarType::Byte;
  EMBER_TRY(check_quantize_args(op, in, *args[5], quant_min, quant_max, false, out, &dtype));
  // Python's 1.0 / scale raises on a zero scale; a kernel cannot, so it refuses.
  EMBER_CHECK(scale != 0.0, Error::InvalidArgument, "%s: scale is zero (float division by zero)",
              op);
  QuantParams p{groups_per_tensor(in), {}, {}};
  p.scale.value = scale;
  p.zero_point.value = zero_point;
  run_quantize<double, float>(in, out, p, quant_min, quant_max, QuantOrder::kRoundThenAdd);
  return Error::Ok;
}

}  // namespace

Error quantize_per_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return quantize_per_tensor("quantize_per_tensor", args[0]->to_tensor(), args[1]->to_double(),
                             args[2]->to_int(), args, args[6]->to_tensor());
}

Error quantize_per_tensor_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "quantize_per_tensor.Tensor";
  const Tensor& scale = args[1]->to_tensor();
  const Tensor& zero_point = args[2]->to_tensor();
  // scale.item() and zero_point.item() in the reference: one element each.
  EMBER_TRY(check_scales(op, scale, 1, "scale"));
  EMBER_TRY(check_zero_points(op, zero_point, 1, "zero_point"));
  const int64_t zp = ZeroPointSource::of(zero_point).at(0);
  return quantize_per_tensor(op, args[0]->to_tensor(), ScaleSource::of(scale).at(0), zp, args,
                             args[6]->to_tensor());
}

Error quantize_per_channel_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "quantize_per_channel";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& scales = args[1]->to_tensor();
  const Tensor& zero_points = args[2]->to_tensor();
  const int64_t quant_min = args[4]->to_int(), quant_max = args[5]->to_int();
  Tensor& out = args[7]->to_tensor();
  ScalarType dtype = ScalarType::Byte;
  EMBER_TRY(check_quantize_args(op, in, *args[6], quant_min, quant_max, false, out, &dtype));
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument, "%s: input must have at least one dim", op);
  int64_t axis = 0;
  EMBER_TRY(wrap_dim(op, args[3]->to_int(), in.dim(), &axis));
  const QuantGroups groups = groups_per_channel(in, static_cast<int>(axis));
  EMBER_TRY(check_scales(op, scales, groups.groups, "scales"));
  EMBER_TRY(check_zero_points(op, zero_points, groups.groups, "zero_points"));
  const QuantParams p{groups, ScaleSource::of(scales), ZeroPointSource::of(zero_points)};
  // 1.0 / scales and the product stay in the scales' dtype (float32 input promotes to float64).
  if (scales.dtype() == ScalarType::Double) {
    run_quantize<double, double>(in, out, p, quant_min, quant_max, QuantOrder::kRoundThenAdd);
  } else {
    run_quantize<float, float>(in, out, p, quant_min, quant_max, QuantOrder::kRoundThenAdd);
  }
  return Error::Ok;
}

Error quantize_per_token_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "quantize_per_token";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& scales = args[1]->to_tensor();
  const Tensor& zero_points = args[2]->to_tensor();
  const int64_t quant_min = args[3]->to_int(), quant_max = args[4]->to_int();
  Tensor& out = args[6]->to_tensor();
  ScalarType dtype = ScalarType::Byte;
  EMBER_TRY(check_quantize_args(op, in, *args[5], quant_min, quant_max, true, out, &dtype));
  const QuantGroups groups = groups_per_token(in);
  // One scale and zero point per token, exactly (the reference's num_tokens check).
  EMBER_TRY(check_scales(op, scales, groups.groups, "scales", false));
  EMBER_TRY(check_zero_points(op, zero_points, groups.groups, "zero_points", false));
  const QuantParams p{groups, ScaleSource::of(scales), ZeroPointSource::of(zero_points)};
  // x * (1.0 / scales): the reciprocal in the scales' dtype, the product in the promoted dtype.
  if (scales.dtype() == ScalarType::Double) {
    run_quantize<double, double>(in, out, p, quant_min, quant_max, QuantOrder::kAddThenRound);
  } else if (in.dtype() == ScalarType::Double) {
    run_quantize<float, double>(in, out, p, quant_min, quant_max, QuantOrder::kAddThenRound);
  } else {
    run_quantize<float, float>(in, out, p, quant_min, quant_max, QuantOrder::kAddThenRound);
  }
  return Error::Ok;
}

}  // namespace ember
