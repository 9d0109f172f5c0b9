// aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[],
//     int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out,
//     Tensor(b!) indices)
// indices hold the flat offset h * W + w within each input plane. As in ATen, NaN wins over any
// number (the last NaN of a window), and ties keep the first maximum.
#include <cmath>
#include <limits>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/pooling.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

Error max_pool2d_with_indices_out(KernelContext& ctx, std::span<EValue*> args) {
  const char* op = "max_pool2d";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[6]->to_tensor();
  Tensor& indices = args[7]->to_tensor();
  EMBER_TRY(check_image(op, in));
  int64_t k[2], s[2], p[2], d[2];
  EMBER_TRY(pool_pair(op, "kernel_size", args[1]->to_int_list(), nullptr, k));
  EMBER_TRY(pool_pair(op, "stride", args[2]->to_int_list(), k, s));
  EMBER_TRY(pool_pair(op, "padding", args[3]->to_int_list(), nullptr, p));
  EMBER_TRY(pool_pair(op, "dilation", args[4]->to_int_list(), nullptr, d));
  const bool ceil_mode = args[5]->to_bool();
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(k[i] > 0 && s[i] > 0 && d[i] > 0 && p[i] >= 0, Error::InvalidArgument,
                "%s: kernel size, stride and dilation must be positive, padding non-negative", op);
    EMBER_CHECK(p[i] <= k[i] / 2, Error::InvalidArgument,
                "%s: pad should be at most half of kernel size", op);
  }
  EMBER_CHECK(in.dtype() != ScalarType::Bool && out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: dtype %s (out %s) is not supported", op, to_string(in.dtype()),
              to_string(out.dtype()));
  EMBER_CHECK(indices.dtype() == ScalarType::Long, Error::InvalidArgument,
              "%s: indices must be int64", op);
  const Image2d x = Image2d::of(in);
  EMBER_CHECK(x.height > 0 && x.width > 0, Error::InvalidArgument, "%s: empty spatial dims", op);
  const int64_t oh = pooled_size(x.height, k[0], p[0], s[0], d[0], ceil_mode);
  const int64_t ow = pooled_size(x.width, k[1], p[1], s[1], d[1], ceil_mode);
  EMBER_CHECK(oh > 0 && ow > 0, Error::InvalidArgument, "%s: output size is too small", op);
  EMBER_TRY(resize_image(op, in, oh, ow, out));
  EMBER_TRY(resize_image(op, in, oh, ow, indices));
  const Image2d y = Image2d::of(out), yi = Image2d::of(indices);
  EMBER_SWITCH_REAL_TYPES(in.dtype(), T, (void)0, {
    using Acc = compute_type_t<T>;
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    int64_t* idx = indices.data<int64_t>();
    ctx.threads->parallel_for(x.planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            int64_t h0 = i * s[0] - p[0], w0 = j * s[1] - p[1];
            const int64_t h1 = std::min(h0 + (k[0] - 1) * d[0] + 1, x.height);
            const int64_t w1 = std::min(w0 + (k[1] - 1) * d[1] + 1, x.width);
            while (h0 < 0) h0 += d[0];
            while (w0 < 0) w0 += d[1];
            Acc best = std::numeric_limits<Acc>::has_infinity
                           ? -std::numeric_limits<Acc>::infinity()
                           : std::numeric_limits<Acc>::lowest();
            int64_t best_at = h0 * x.width + w0;
            for (int64_t h = h0; h < h1; h += d[0]) {
              for (int64_t w = w0; w < w1; w += d[1]) {
                const Acc v = static_cast<Acc>(src[x.at(pl, h, w)]);
                bool nan = false;
                if constexpr (std::is_floating_point_v<Acc>) nan = std::isnan(v);
                if (v > best || nan) {
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
