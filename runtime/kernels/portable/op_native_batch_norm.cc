// aten::_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight, Tensor? bias,
//     Tensor running_mean, Tensor running_var, float momentum, float eps, *, Tensor(a!) out0,
//     Tensor(b!) out1, Tensor(c!) out2)
// Inference batch norm over dim 1 of (N, C, *): out0 = (x - mean) / sqrt(var + eps) * w + b. As in
// ATen, out1 and out2 (the saved statistics of training) come back empty: resized to [0] when
// they are dynamic 1-D tensors, otherwise left as they are.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/normalization.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

Error native_batch_norm_no_training_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const Tensor* weight = args[1]->tensor_ptr();
  const Tensor* bias = args[2]->tensor_ptr();
  const Tensor& mean = args[3]->to_tensor();
  const Tensor& var = args[4]->to_tensor();
  const double eps = args[6]->scalar_as_double();
  Tensor& out = args[7]->to_tensor();
  const ScalarType dt = in.dtype();
  EMBER_CHECK(in.dim() >= 2, Error::InvalidArgument, "batch_norm: expected an input of rank >= 2");
  EMBER_CHECK(is_floating(dt) && out.dtype() == dt, Error::InvalidArgument,
              "batch_norm: expected a floating input and out of its dtype");
  const int64_t c = in.size(1);
  EMBER_TRY(check_param("batch_norm", "weight", weight, c, dt));
  EMBER_TRY(check_param("batch_norm", "bias", bias, c, dt));
  EMBER_TRY(check_param("batch_norm", "running_mean", &mean, c, dt));
  EMBER_TRY(check_param("batch_norm", "running_var", &var, c, dt));
  EMBER_TRY(out.resize(in.sizes()));
  for (int k = 8; k <= 9; ++k) {
    Tensor& saved = args[k]->to_tensor();
    const int32_t empty[1] = {0};
    if (saved.dim() == 1 && saved.dynamism() != ShapeDynamism::Static) {
      EMBER_TRY(saved.resize(empty));
    }
  }
  int64_t inner = 1;
  for (int d = 2; d < in.dim(); ++d) inner *= in.size(d);
  EMBER_SWITCH_FLOAT_TYPES(dt, T, (void)0, {
    using Acc = compute_type_t<T>;
    const T* x = in.data<T>();
    T* y = out.data<T>();
    const bool dense = in.is_contiguous() && out.is_contiguous();
    ctx.threads->parallel_for(in.size(0) * c, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t ch = r % c;
        const Acc inv = Acc(1) / std::sqrt(param_at<T>(&var, ch, 0) + static_cast<Acc>(eps));
        const Acc scale = inv * param_at<T>(weight, ch, Acc(1));
        const Acc shift = param_at<T>(bias, ch, Acc(0)) - param_at<T>(&mean, ch, 0) * scale;
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t l = r * inner + i;
          const Acc v = static_cast<Acc>(x[dense ? l : offset_of(in, l)]) * scale + shift;
          y[dense ? l : offset_of(out, l)] = static_cast<T>(v);
        }
      }
    });
  });
  return Error::Ok;
}

}  // namespace ember
