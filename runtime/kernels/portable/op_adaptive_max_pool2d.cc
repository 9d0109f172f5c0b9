// aten::adaptive_max_pool2d.out(Tensor self, int[2] output_size, *, Tensor(a!) out,
//     Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
// Output cell o of a dim of input size I and output size O takes the maximum of
// [floor(o*I/O), ceil((o+1)*I/O)). indices hold the flat offset h * W + w within each input
// plane. As in ATen, a NaN wins over any number (the last NaN of a window), and ties keep the
// first maximum.
#include <cmath>
#include <limits>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/pooling.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

Error adaptive_max_pool2d_out(KernelContext& ctx, std::span<EValue*> args) {
  const char* op = "adaptive_max_pool2d";
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> size = args[1]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  Tensor& indices = args[3]->to_tensor();
  EMBER_TRY(check_image(op, in));
  int64_t oh = 0, ow = 0;
  EMBER_TRY(adaptive_output_size(op, size, &oh, &ow));
  EMBER_CHECK(is_floating(in.dtype()) && out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: expected a floating input and out of its dtype, got %s (out %s)", op,
              to_string(in.dtype()), to_string(out.dtype()));
  EMBER_CHECK(indices.dtype() == ScalarType::Long, Error::InvalidArgument,
              "%s: indices must be int64", op);
  const Image2d x = Image2d::of(in);
  EMBER_CHECK(x.height > 0 && x.width > 0, Error::InvalidArgument, "%s: empty spatial dims", op);
  EMBER_TRY(resize_image(op, in, oh, ow, out));
  EMBER_TRY(resize_image(op, in, oh, ow, indices));
  const Image2d y = Image2d::of(out), yi = Image2d::of(indices);
  EMBER_SWITCH_FLOAT_TYPES(in.dtype(), T, (void)0, {
    using Acc = compute_type_t<T>;
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    int64_t* idx = indices.data<int64_t>();
    ctx.threads->parallel_for(x.planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        for (int64_t i = 0; i < oh; ++i) {
          const auto [h0, h1] = adaptive_window(i, x.height, oh);
          for (int64_t j = 0; j < ow; ++j) {
            const auto [w0, w1] = adaptive_window(j, x.width, ow);
            Acc best = -std::numeric_limits<Acc>::infinity();
            int64_t best_at = h0 * x.width + w0;
            for (int64_t h = h0; h < h1; ++h) {
              for (int64_t w = w0; w < w1; ++w) {
                const Acc v = static_cast<Acc>(src[x.at(pl, h, w)]);
                if (v > best || std::isnan(v)) {
                  best = v;
                  best_at = h * x.width + w;
                }
              }
            }
            dst[y.at(pl, i, j)] = static_cast<T>(best);
            idx[yi.at(pl, i, j)] = best_at;
          }
        }
      }
    });
  });
  return Error::Ok;
}

}  // namespace ember
