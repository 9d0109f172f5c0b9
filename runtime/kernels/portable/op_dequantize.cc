// quantized_decomposed::dequantize_per_tensor.out(Tensor input, float scale, int zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None,
//     Tensor(a!) out)
// quantized_decomposed::dequantize_per_tensor.Tensor_out(Tensor input, Tensor scale,
//     Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *,
//     ScalarType? out_dtype=None, Tensor(a!) out)
// quantized_decomposed::dequantize_per_channel.out(Tensor input, Tensor scales,
//     Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *,
//     ScalarType? out_dtype=None, Tensor(a!) out)
// quantized_decomposed::dequantize_per_token.out(Tensor input, Tensor scales,
//     Tensor zero_points, int quant_min, int quant_max, ScalarType dtype,
//     ScalarType output_dtype, *, Tensor(a!) out)
// quantized_decomposed::dequantize_per_channel_group.out(Tensor input, Tensor scales,
//     Tensor? zero_points, int quant_min, int quant_max, ScalarType dtype, int group_size,
//     ScalarType output_dtype, *, Tensor(a!) out)
//
// (x - zero_point) * scale as PyTorch's references compute it (quant_family.h): per tensor in the
// output dtype; per channel, per token and per channel group in the scales' dtype, then converted
// to the output dtype. quant_min and quant_max only describe the input (checked against dtype per
// channel).
#include "runtime/kernels/portable/quant_family.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/promotion.h"

namespace ember {
namespace {

// The output dtype (`out_dtype` when given, else float32) must be floating and out's dtype; out
// gets input's shape. `input` must hold `dtype` when `same_dtype` (per tensor and per channel).
Error check_dequantize_args(const char* op, const Tensor& in, const EValue& dtype_arg,
                            const EValue& out_dtype_arg, bool same_dtype, Tensor& out) {
  ScalarType dtype = ScalarType::Byte;
  EMBER_TRY(scalar_type_arg(op, dtype_arg, &dtype));
  int64_t lo = 0, hi = 0;
  EMBER_CHECK(quantized_dtype_bounds(dtype, &lo, &hi), Error::InvalidArgument,
              "%s: unsupported dtype %s (uint8, int8, int16 or int32)", op, to_string(dtype));
  if (same_dtype) {
    EMBER_CHECK(in.dtype() == dtype, Error::InvalidArgument,
                "%s: Expecting input to have dtype: %s, but got %s", op, to_string(dtype),
                to_string(in.dtype()));
  } else {
    EMBER_CHECK(quantized_dtype_bounds(in.dtype(), &lo, &hi), Error::InvalidArgument,
                "%s: input must be uint8, int8, int16 or int32, got %s", op, to_string(in.dtype()));
  }
  ScalarType out_dtype = ScalarType::Float;
  if (!out_dtype_arg.is_none()) EMBER_TRY(scalar_type_arg(op, out_dtype_arg, &out_dtype));
  EMBER_CHECK(is_floating(out_dtype), Error::InvalidArgument,
              "%s: the output dtype must be floating, got %s", op, to_string(out_dtype));
  EMBER_CHECK(out.dtype() == out_dtype, Error::InvalidArgument, "%s: out has dtype %s, expected %s",
              op, to_string(out.dtype()), to_string(out_dtype));
  return out.resize(in.sizes());
}

Error dequantize_per_tensor(const char* op, double scale, int64_t zero_point,
                            std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[7]->to_tensor();
  EMBER_TRY(check_dequantize_args(op, in, *args[5], *args[6], true, out));
  QuantParams p{groups_per_tensor(in), {}, {}};
  p.scale.value = scale;
  p.zero_point.value = zero_point;
  EMBER_SWITCH_FLOAT_TYPES(out.dtype(), D, (void)0, dequantize_in_out_dtype<D>(in, out, p));
  return Error::Ok;
}

// Grouped dequantize: the arithmetic in the scales' dtype S, converted to out's dtype.
template <typename S>
void run_grouped(const Tensor& in, Tensor& out, const QuantParams& p) {
  EMBER_SWITCH_FLOAT_TYPES(out.dtype(), D, (void)0, dequantize_in_scale_dtype<S, D>(in, out, p));
}

void run_grouped(const Tensor& in, const Tensor& scales, Tensor& out, const QuantParams& p) {
  if (scales.dtype() == ScalarType::Double) {
    run_grouped<double>(in, out, p);
  } else {
    run_grouped<float>(in, out, p);
  }
}

}  // namespace

Error dequantize_per_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return dequantize_per_tensor("dequantize_per_tensor", args[1]->to_double(), args[2]->to_int(),
                               args);
}

Error dequantize_per_tensor_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "dequantize_per_tensor.Tensor";
  const Tensor& scale = args[1]->to_tensor();
  const Tensor& zero_point = args[2]->to_tensor();
  // scale.item() and zero_point.item() in the reference: one element each.
  EMBER_TRY(check_scales(op, scale, 1, "scale"));
  EMBER_TRY(check_zero_points(op, zero_point, 1, "zero_point"));
  const int64_t zp = ZeroPointSource::of(zero_point).at(0);
  return dequantize_per_tensor(op, ScaleSource::of(scale).at(0), zp, args);
}

Error dequantize_per_channel_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "dequantize_per_channel";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& scales = args[1]->to_tensor();
  const int64_t quant_min = args[4]->to_int(), quant_max = args[5]->to_int();
  Tensor& out = args[9]->to_tensor();
  EMBER_TRY(check_dequantize_args(op, in, *args[6], *args[7], true, out));
  EMBER_TRY(check_quant_range(op, in.dtype(), quant_min, quant_max));
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument, "%s: input must have at least one dim", op);
  int64_t axis = 0;
  EMBER_TRY(wrap_dim(op, args[3]->to_int(), in.dim(), &axis));
  QuantParams p{groups_per_channel(in, static_cast<int>(axis)), ScaleSource::of(scales), {}};
  EMBER_TRY(check_scales(op, scales, p.groups.groups, "scales"));
  if (!args[2]->is_none()) {
    const Tensor& zero_points = args[2]->to_tensor();
    EMBER_TRY(check_zero_points(op, zero_points, p.groups.groups, "zero_points"));
    p.zero_point = ZeroPointSource::of(zero_points);
  }
  run_grouped(in, scales, out, p);
  return Error::Ok;
}

Error dequantize_per_token_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "dequantize_per_token";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& scales = args[1]->to_tensor();
  const Tensor& zero_points = args[2]->to_tensor();
  Tensor& out = args[8]->to_tensor();
  // The reference does not compare input's dtype with `dtype`; it only computes with input.
  EMBER_TRY(check_dequantize_args(op, in, *args[5], *args[6], false, out));
  const QuantParams p{groups_per_token(in), ScaleSource::of(scales),
                      ZeroPointSource::of(zero_points)};
  // input - zero_points and * scales broadcast one parameter per token.
  EMBER_TRY(check_scales(op, scales, p.groups.groups, "scales", false));
  EMBER_TRY(check_zero_points(op, zero_points, p.groups.groups, "zero_points", false));
  run_grouped(in, scales, out, p);
  return Error::Ok;
}

// The reference (groupwise-quantized weights, as GPTQ and 8da4w make) reshapes the 2-D input to
// rows of group_size, each with one scale and zero point, and checks neither `dtype` nor the
// quant range.
Error dequantize_per_channel_group_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "dequantize_per_channel_group";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& scales = args[1]->to_tensor();
  int64_t group_size = args[6]->to_int();
  Tensor& out = args[8]->to_tensor();
  EMBER_TRY(check_dequantize_args(op, in, *args[5], *args[7], false, out));
  EMBER_CHECK(group_size > 1, Error::InvalidArgument, "%s: group_size must be > 1, got %lld", op,
              static_cast<long long>(group_size));
  EMBER_CHECK(in.dim() == 2, Error::InvalidArgument, "%s: input must be 2-dimensional, got %d dims",
              op, in.dim());
  const int64_t k = in.size(1);
  // GPTQ dequantizes a single column with one scale per row: the group shrinks to the row. An
  // empty row leaves a group of 0, which the reference fails on (modulo by zero).
  if (group_size > k && scales.dim() > 0 && scales.size(scales.dim() - 1) == 1) group_size = k;
  EMBER_CHECK(group_size > 0 && k % group_size == 0, Error::InvalidArgument,
              "%s: input.shape[-1] (%lld) must be divisible by group_size (%lld)", op,
              static_cast<long long>(k), static_cast<long long>(group_size));
  QuantParams p{groups_of_size(in, group_size), ScaleSource::of(scales), {}};
  // reshape(-1, 1) then broadcasting: one parameter per group, or one for all.
  EMBER_TRY(check_scales(op, scales, p.groups.groups, "scales"));
  if (!args[2]->is_none()) {
    const Tensor& zero_points = args[2]->to_tensor();
    // Any integer dtype: the subtraction then wraps in promote_types(input, zero points), so
    // int8 zero points keep an int8 input's arithmetic in int8. Bool is refused, as ATen's sub
    // refuses it.
    EMBER_CHECK(is_integral(zero_points.dtype(), false), Error::InvalidArgument,
                "%s: zero_points must be uint8, int8, int16, int32 or int64, got %s", op,
                to_string(zero_points.dtype()));
    EMBER_TRY(check_param_count(op, zero_points, p.groups.groups, "zero_points", true));
    p.zero_point = ZeroPointSource::of(zero_points);
    p.zero_point.diff_dtype = promote_types(in.dtype(), zero_points.dtype());
  }
  run_grouped(in, scales, out, p);
  return Error::Ok;
}

}  // namespace ember
