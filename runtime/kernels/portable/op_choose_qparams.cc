// quantized_decomposed::choose_qparams.Tensor_out(Tensor input, int quant_min, int quant_max,
//     float eps, ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out)
// quantized_decomposed::choose_qparams_per_token_asymmetric.out(Tensor input, ScalarType dtype,
//     *, Tensor(a!) scale_out, Tensor(b!) zero_point_out)
//
// Affine qparams from the input's range, following PyTorch's references op by op
// (torch.ao.quantization.utils.determine_qparams and _choose_qparams_per_token_asymmetric_impl):
// each step rounds to the dtype ATen gives it, so a float16 input's range is float16 while the
// eps comparison promotes to float32. Outputs are float64 scales and int64 zero points, as there.
// ExecuTorch's own kernel uses another (double precision, nudged) algorithm; Ember follows
// PyTorch, the reference the program was exported and validated with.
#include <cmath>
#include <limits>

#include "runtime/kernels/portable/quant_family.h"
#include "runtime/kernels/portable/util/dispatch.h"

namespace ember {
namespace {

// torch.min / torch.max of two values: NaN propagates.
template <typename T>
T min_nan(T a, T b) {
  if (std::isnan(static_cast<double>(b))) return b;
  return std::isnan(static_cast<double>(a)) || a < b ? a : b;
}
template <typename T>
T max_nan(T a, T b) {
  if (std::isnan(static_cast<double>(b))) return b;
  return std::isnan(static_cast<double>(a)) || a > b ? a : b;
}

// amin and amax of elements [begin, begin + count) in row-major order (NaN propagates).
template <typename T>
void qparams_range_of(const Tensor& t, int64_t begin, int64_t count, T* lo, T* hi) {
  const T* data = t.data<T>();
  const bool dense = t.is_contiguous();
  for (int64_t i = begin; i < begin + count; ++i) {
    const T v = data[dense ? i : offset_of(t, i)];
    *lo = i == begin ? v : min_nan(*lo, v);
    *hi = i == begin ? v : max_nan(*hi, v);
  }
}

// ATen's NaN scales come out as the default quiet NaN, whatever NaN the input held.
double canonical_nan(double v) {
  return std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : v;
}

// int32 arithmetic that wraps as ATen's int32 tensors do.
int32_t wrapping_sub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}

// determine_qparams, per_tensor_affine: min/max widened to include 0 (in T), the scale
// (max - min) / (qmax - qmin) in T, then max(scale, eps) in float32 (eps is a float32 tensor
// of one dim, which wins promotion over the 0-dim T), the zero point qmin - round(min / scale)
// in int32, clamped.
template <typename T>
void choose_per_tensor(const Tensor& in, int32_t qmin, int32_t qmax, double eps, double* scale,
                       int64_t* zero_point) {
  using M = compute_type_t<T>;
  T lo{}, hi{};
  qparams_range_of<T>(in, 0, in.numel(), &lo, &hi);
  const T lo_neg = min_nan(lo, T(0)), hi_pos = max_nan(hi, T(0));
  const T width = T(static_cast<M>(hi_pos) - static_cast<M>(lo_neg));
  // float(quant_max - quant_min): a Python float, read at opmath precision.
  const auto levels = static_cast<double>(static_cast<int64_t>(qmax) - qmin);
  const T s = T(static_cast<M>(width) / static_cast<M>(levels));
  const float s32 = max_nan(static_cast<float>(s), static_cast<float>(eps));
  const float q = std::nearbyint(static_cast<float>(lo_neg) / s32);
  const int32_t zp = wrapping_sub(qmin, float_to_int<int32_t>(q));
  *scale = canonical_nan(static_cast<double>(s32));
  *zero_point = std::min(std::max(zp, qmin), qmax);
}

// _choose_qparams_per_token_asymmetric_impl on one token, every op in T (computed in its opmath
// type and rounded to T); the Python scalars enter at opmath precision.
template <typename T>
void choose_per_token(const Tensor& in, int64_t begin, int64_t count, double* scale,
                      int64_t* zero_point) {
  using M = compute_type_t<T>;
  const M qmin = -128, qmax = 127;
  T lo{}, hi{};
  qparams_range_of<T>(in, begin, count, &lo, &hi);
  const T lo_neg = min_nan(lo, T(0)), hi_pos = max_nan(hi, T(0));
  T s = T(static_cast<M>(T(static_cast<M>(hi_pos) - static_cast<M>(lo_neg))) / (qmax - qmin));
  // clamp(min=eps): eps is float32's, converted to T like a clamp bound.
  const T eps = T(static_cast<M>(std::numeric_limits<float>::epsilon()));
  if (s < eps) s = eps;
  const T descaled_min = T(static_cast<M>(lo_neg) / static_cast<M>(s));
  const T descaled_max = T(static_cast<M>(hi_pos) / static_cast<M>(s));
  const T from_min_error = T(qmin + static_cast<M>(descaled_min));
  const T from_max_error = T(qmax + static_cast<M>(descaled_max));
  const T sum = T(static_cast<M>(from_min_error) + static_cast<M>(from_max_error));
  T zp = static_cast<M>(sum) > 0 ? T(qmin - static_cast<M>(descaled_min))
                                 : T(qmax - static_cast<M>(descaled_max));
  zp = T(clamp_propagating_nan(static_cast<M>(zp), qmin, qmax));
  *scale = canonical_nan(static_cast<double>(static_cast<M>(s)));
  *zero_point = float_to_int<int64_t>(std::nearbyint(static_cast<M>(zp)));
}

// The outs: float64 scales and int64 zero points of `sizes`.
Error check_qparams_outs(const char* op, Tensor& scale_out, Tensor& zero_point_out,
                         std::span<const int32_t> sizes) {
  EMBER_CHECK(scale_out.dtype() == ScalarType::Double, Error::InvalidArgument,
              "%s: scale_out must be float64, got %s", op, to_string(scale_out.dtype()));
  EMBER_CHECK(zero_point_out.dtype() == ScalarType::Long, Error::InvalidArgument,
              "%s: zero_point_out must be int64, got %s", op, to_string(zero_point_out.dtype()));
  EMBER_TRY(scale_out.resize(sizes));
  return zero_point_out.resize(sizes);
}

Error check_floating_input(const char* op, const Tensor& in) {
  const ScalarType t = in.dtype();
  EMBER_CHECK(t == ScalarType::Float || t == ScalarType::Half || t == ScalarType::BFloat16,
              Error::InvalidArgument,
              "%s: Expecting input to have dtype torch.float32/16/b16, but got dtype: %s", op,
              to_string(t));
  return Error::Ok;
}

}  // namespace

Error choose_qparams_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "choose_qparams.Tensor";
  const Tensor& in = args[0]->to_tensor();
  const int64_t quant_min = args[1]->to_int(), quant_max = args[2]->to_int();
  const double eps = args[3]->to_double();
  Tensor& scale_out = args[5]->to_tensor();
  Tensor& zero_point_out = args[6]->to_tensor();
  EMBER_TRY(check_floating_input(op, in));
  ScalarType dtype = ScalarType::Byte;
  EMBER_TRY(scalar_type_arg(op, *args[4], &dtype));
  int64_t lo = 0, hi = 0;
  EMBER_CHECK(quantized_dtype_bounds(dtype, &lo, &hi), Error::InvalidArgument,
              "%s: unsupported target dtype %s (uint8, int8, int16 or int32)", op,
              to_string(dtype));
  EMBER_CHECK(quant_min <= 0 && 0 <= quant_max, Error::InvalidArgument,
              "%s: Used-specified quantization range must include 0.", op);
  EMBER_CHECK(quant_min < quant_max, Error::InvalidArgument,
              "%s: qmin must be strictly less than qmax for user-specified quantization range.",
              op);
  // The zero point is int32 arithmetic in the reference.
  EMBER_CHECK(quant_min >= INT32_MIN && quant_max <= INT32_MAX, Error::InvalidArgument,
              "%s: quant_min and quant_max must fit int32", op);
  EMBER_CHECK(in.numel() > 0, Error::InvalidArgument,
              "%s: the input is empty (aminmax needs at least one element)", op);
  const int32_t one[] = {1};
  EMBER_TRY(check_qparams_outs(op, scale_out, zero_point_out, one));
  double scale = 0;
  int64_t zp = 0;
  const auto qmin = static_cast<int32_t>(quant_min), qmax = static_cast<int32_t>(quant_max);
  EMBER_SWITCH_FLOAT_TYPES(in.dtype(), T, (void)0,
                           choose_per_tensor<T>(in, qmin, qmax, eps, &scale, &zp));
  scale_out.data<double>()[0] = scale;
  zero_point_out.data<int64_t>()[0] = zp;
  return Error::Ok;
}

Error choose_qparams_per_token_asymmetric_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "choose_qparams_per_token_asymmetric";
  const Tensor& in = args[0]->to_tensor();
  Tensor& scale_out = args[2]->to_tensor();
  Tensor& zero_point_out = args[3]->to_tensor();
  // `dtype` is not used by the reference (the range is int8's, -128..127), only validated here.
  ScalarType dtype = ScalarType::Byte;
  EMBER_TRY(scalar_type_arg(op, *args[1], &dtype));
  EMBER_TRY(check_floating_input(op, in));
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument, "%s: input must have at least one dim", op);
  const QuantGroups tokens = groups_per_token(in);
  EMBER_CHECK(tokens.inner > 0 || tokens.groups == 0, Error::InvalidArgument,
              "%s: the last dim is empty (amin needs at least one element)", op);
  int32_t sizes[kMaxRank];
  for (int d = 0; d < in.dim(); ++d) sizes[d] = in.size(d);
  sizes[in.dim() - 1] = 1;
  EMBER_TRY(
      check_qparams_outs(op, scale_out, zero_point_out, {sizes, static_cast<size_t>(in.dim())}));
  double* scales = scale_out.data<double>();
  int64_t* zero_points = zero_point_out.data<int64_t>();
  for (int64_t t = 0; t < tokens.groups; ++t) {
    const int64_t o_s = scale_out.is_contiguous() ? t : offset_of(scale_out, t);
    const int64_t o_z = zero_point_out.is_contiguous() ? t : offset_of(zero_point_out, t);
    EMBER_SWITCH_FLOAT_TYPES(
        in.dtype(), T, (void)0,
        choose_per_token<T>(in, t * tokens.inner, tokens.inner, &scales[o_s], &zero_points[o_z]));
  }
  return Error::Ok;
}

}  // namespace ember
