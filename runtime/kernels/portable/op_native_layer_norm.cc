// aten::native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight,
//     Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
// out0 = (x - mean) * rstd * weight + bias over the trailing `normalized_shape` dims; out1 (mean)
// and out2 (rstd) have the input's leading sizes followed by ones.
#include <cmath>
#include <limits>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/normalization.h"
#include "runtime/kernels/portable/util/row_kernels.h"
#include "runtime/platform/thread_pool.h"

namespace ember {
namespace {

// One dense row through layer_norm_row_f32 when T is float (true), else nothing (false). A
// template, so that only float compiles the call.
template <typename T>
bool float_row(const T* x, T* y, int64_t n, const T* w, const T* b, double eps, T* mean, T* rstd) {
  if constexpr (std::is_same_v<T, float>) {
    layer_norm_row_f32(x, y, n, w, b, static_cast<float>(eps), mean, rstd);
    return true;
  } else {
    return false;
  }
}

}  // namespace

Error native_layer_norm_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> shape = args[1]->to_int_list();
  const Tensor* weight = args[2]->tensor_ptr();
  const Tensor* bias = args[3]->tensor_ptr();
  const double eps = args[4]->scalar_as_double();
  Tensor& out = args[5]->to_tensor();
  Tensor& mean_out = args[6]->to_tensor();
  Tensor& rstd_out = args[7]->to_tensor();
  const int k = static_cast<int>(shape.size());
  EMBER_CHECK(k >= 1 && k <= in.dim(), Error::InvalidArgument,
              "layer_norm: normalized_shape of %d dims for an input of rank %d", k, in.dim());
  const int axis = in.dim() - k;
  int64_t n = 1;
  for (int i = 0; i < k; ++i) {
    EMBER_CHECK(in.size(axis + i) == shape[i], Error::InvalidArgument,
                "layer_norm: normalized_shape[%d] is %lld, the input's dim %d is %d", i,
                static_cast<long long>(shape[i]), axis + i, in.size(axis + i));
    n *= shape[i];
  }
  const ScalarType dt = in.dtype();
  EMBER_CHECK(is_floating(dt) && out.dtype() == dt, Error::InvalidArgument,
              "layer_norm: expected a floating input and out of its dtype, got %s and %s",
              to_string(dt), to_string(out.dtype()));
  EMBER_CHECK(mean_out.dtype() == dt && rstd_out.dtype() == dt, Error::InvalidArgument,
              "layer_norm: mean and rstd outs must have dtype %s", to_string(dt));
  EMBER_TRY(check_param("layer_norm", "weight", weight, n, dt));
  EMBER_TRY(check_param("layer_norm", "bias", bias, n, dt));
  EMBER_TRY(out.resize(in.sizes()));
  int32_t stat_sizes[kMaxRank];
  for (int d = 0; d < in.dim(); ++d) stat_sizes[d] = d < axis ? in.size(d) : 1;
  EMBER_CHECK(mean_out.dim() == in.dim() && rstd_out.dim() == in.dim(), Error::InvalidArgument,
              "layer_norm: mean and rstd outs must have rank %d", in.dim());
  EMBER_TRY(mean_out.resize({stat_sizes, static_cast<size_t>(in.dim())}));
  EMBER_TRY(rstd_out.resize({stat_sizes, static_cast<size_t>(in.dim())}));
  const int64_t rows = n == 0 ? 0 : in.numel() / n;
  EMBER_SWITCH_FLOAT_TYPES(dt, T, (void)0, {
    using Acc = compute_type_t<T>;
    const T* x = in.data<T>();
    T* y = out.data<T>();
    const bool dense = in.is_contiguous() && out.is_contiguous();
    // Dense affine parameters are read straight from memory.
    const T* w = weight != nullptr && weight->is_contiguous() ? weight->data<T>() : nullptr;
    const T* bb = bias != nullptr && bias->is_contiguous() ? bias->data<T>() : nullptr;
    const bool params_dense =
        (weight == nullptr || w != nullptr) && (bias == nullptr || bb != nullptr);
    T* mean_data = mean_out.data<T>();
    T* rstd_data = rstd_out.data<T>();
    ctx.threads->parallel_for(
        rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
        [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            // Dense float32 rows (the common case) take the vectorized row kernel.
            T& mean_r = mean_data[offset_of(mean_out, r)];
            T& rstd_r = rstd_data[offset_of(rstd_out, r)];
            const T nan = static_cast<T>(std::numeric_limits<Acc>::quiet_NaN());
            if (dense && params_dense &&
                float_row(x + r * n, y + r * n, n, w, bb, eps, &mean_r, &rstd_r)) {
              if (std::isnan(static_cast<Acc>(rstd_r))) mean_r = nan;
              continue;
            }
            const auto get = [&](int64_t i) {
              const int64_t l = r * n + i;
              return static_cast<Acc>(x[dense ? l : offset_of(in, l)]);
            };
            const RowStats s = row_stats(n, get);
            const double mean = s.mean, rstd = s.rstd(eps);
            for (int64_t i = 0; i < n; ++i) {
              const int64_t l = r * n + i;
              const double wi =
                  w != nullptr ? static_cast<double>(w[i]) : param_at<T>(weight, i, Acc(1));
              const double bi =
                  bb != nullptr ? static_cast<double>(bb[i]) : param_at<T>(bias, i, Acc(0));
              const double v = (static_cast<double>(get(i)) - mean) * rstd * wi + bi;
              y[dense ? l : offset_of(out, l)] = static_cast<T>(static_cast<Acc>(v));
            }
            // A row holding an inf or a NaN has a NaN variance; ATen's Welford mean is NaN there
            // too (inf - inf in its update), where a plain sum gives +-inf for one inf.
            mean_r = std::isnan(rstd) ? nan : static_cast<T>(static_cast<Acc>(mean));
            rstd_r = static_cast<T>(static_cast<Acc>(rstd));
          }
        });
  });
  return Error::Ok;
}

}  // namespace ember
