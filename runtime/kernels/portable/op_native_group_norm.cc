// aten::native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C,
//     SymInt HxW, int group, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
// Input (N, C, *) normalized over each group of C/group channels; out1 (mean) and out2 (rstd) are
// (N, group); weight and bias are per channel.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/normalization.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

Error native_group_norm_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const Tensor* weight = args[1]->tensor_ptr();
  const Tensor* bias = args[2]->tensor_ptr();
  const int64_t n = args[3]->to_int(), c = args[4]->to_int(), hw = args[5]->to_int();
  const int64_t groups = args[6]->to_int();
  const double eps = args[7]->scalar_as_double();
  Tensor& out = args[8]->to_tensor();
  Tensor& mean_out = args[9]->to_tensor();
  Tensor& rstd_out = args[10]->to_tensor();
  const ScalarType dt = in.dtype();
  EMBER_CHECK(in.dim() >= 2 && in.size(0) == n && in.size(1) == c && in.numel() == n * c * hw,
              Error::InvalidArgument,
              "group_norm: input does not have shape (N=%lld, C=%lld, *) "
              "with HxW=%lld",
              static_cast<long long>(n), static_cast<long long>(c), static_cast<long long>(hw));
  EMBER_CHECK(groups > 0 && c % groups == 0, Error::InvalidArgument,
              "group_norm: expected the number of channels %lld to be divisible by %lld groups",
              static_cast<long long>(c), static_cast<long long>(groups));
  EMBER_CHECK(
      is_floating(dt) && out.dtype() == dt && mean_out.dtype() == dt && rstd_out.dtype() == dt,
      Error::InvalidArgument, "group_norm: expected floating input and outs of dtype %s",
      to_string(dt));
  EMBER_TRY(check_param("group_norm", "weight", weight, c, dt));
  EMBER_TRY(check_param("group_norm", "bias", bias, c, dt));
  EMBER_TRY(out.resize(in.sizes()));
  const int32_t stat_sizes[2] = {static_cast<int32_t>(n), static_cast<int32_t>(groups)};
  EMBER_CHECK(mean_out.dim() == 2 && rstd_out.dim() == 2, Error::InvalidArgument,
              "group_norm: mean and rstd outs must be 2-D");
  EMBER_TRY(mean_out.resize(stat_sizes));
  EMBER_TRY(rstd_out.resize(stat_sizes));
  const int64_t cg = c / groups, len = cg * hw;
  EMBER_SWITCH_FLOAT_TYPES(dt, T, (void)0, {
    using Acc = compute_type_t<T>;
    const T* x = in.data<T>();
    T* y = out.data<T>();
    const bool dense = in.is_contiguous() && out.is_contiguous();
    ctx.threads->parallel_for(n * groups, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const auto get = [&](int64_t i) {
          const int64_t l = r * len + i;
          return static_cast<Acc>(x[dense ? l : offset_of(in, l)]);
        };
        const RowStats s = row_stats(len, get);
        const double mean = s.mean, rstd = s.rstd(eps);
        // ATen's arithmetic: (x - mean) * rstd without affine parameters, else x * scale + shift
        // per channel.
        const bool affine = weight != nullptr || bias != nullptr;
        for (int64_t i = 0; i < len; ++i) {
          const int64_t l = r * len + i, ch = (r % groups) * cg + i / hw;
          const double xi = static_cast<double>(get(i));
          double v = (xi - mean) * rstd;
          if (affine) {
            const double scale = rstd * static_cast<double>(param_at<T>(weight, ch, Acc(1)));
            v = xi * scale + (-scale * mean + static_cast<double>(param_at<T>(bias, ch, Acc(0))));
          }
          y[dense ? l : offset_of(out, l)] = static_cast<T>(static_cast<Acc>(v));
        }
        mean_out.data<T>()[offset_of(mean_out, r)] = static_cast<T>(static_cast<Acc>(mean));
        rstd_out.data<T>()[offset_of(rstd_out, r)] = static_cast<T>(static_cast<Acc>(rstd));
      }
    });
  });
  return Error::Ok;
}

}  // namespace ember
