// aten::_adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *, Tensor(a!) out)
// aten::adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *, Tensor(a!) out)
// Output cell o of a dim of input size I and output size O averages [floor(o*I/O),
// ceil((o+1)*I/O)).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/pooling.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

Error adaptive_avg_pool2d_out(KernelContext& ctx, std::span<EValue*> args) {
  const char* op = "adaptive_avg_pool2d";
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> size = args[1]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  EMBER_TRY(check_image(op, in));
  int64_t oh = 0, ow = 0;
  EMBER_TRY(adaptive_output_size(op, size, &oh, &ow));
  EMBER_CHECK(is_floating(in.dtype()) && out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: expected a floating input and out of its dtype", op);
  const Image2d x = Image2d::of(in);
  EMBER_CHECK(x.height > 0 && x.width > 0, Error::InvalidArgument, "%s: empty spatial dims", op);
  EMBER_TRY(resize_image(op, in, oh, ow, out));
  const Image2d y = Image2d::of(out);
  EMBER_SWITCH_FLOAT_TYPES(in.dtype(), T, (void)0, {
    using Acc = compute_type_t<T>;
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    ctx.threads->parallel_for(x.planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        for (int64_t i = 0; i < oh; ++i) {
          const auto [h0, h1] = adaptive_window(i, x.height, oh);
          for (int64_t j = 0; j < ow; ++j) {
            const auto [w0, w1] = adaptive_window(j, x.width, ow);
            Acc sum = 0;
            for (int64_t h = h0; h < h1; ++h) {
              for (int64_t w = w0; w < w1; ++w) sum += static_cast<Acc>(src[x.at(pl, h, w)]);
            }
            const int64_t count = (h1 - h0) * (w1 - w0);
            dst[y.at(pl, i, j)] = static_cast<T>(sum / static_cast<Acc>(count));
          }
        }
      }
    });
  });
  return Error::Ok;
}

}  // namespace ember
