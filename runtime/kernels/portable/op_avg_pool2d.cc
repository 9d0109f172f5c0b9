// aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//     bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *,
//     Tensor(a!) out)
// The divisor is divisor_override, else the window clipped to the padded input
// (count_include_pad) or to the input. Integer inputs sum in int64 and divide truncating, as ATen.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/pooling.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

Error avg_pool2d_out(KernelContext& ctx, std::span<EValue*> args) {
  const char* op = "avg_pool2d";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[7]->to_tensor();
  EMBER_TRY(check_image(op, in));
  int64_t k[2], s[2], p[2];
  EMBER_TRY(pool_pair(op, "kernel_size", args[1]->to_int_list(), nullptr, k));
  EMBER_TRY(pool_pair(op, "stride", args[2]->to_int_list(), k, s));
  EMBER_TRY(pool_pair(op, "padding", args[3]->to_int_list(), nullptr, p));
  const bool ceil_mode = args[4]->to_bool(), count_include_pad = args[5]->to_bool();
  const bool has_divisor = args[6]->is_int();
  const int64_t divisor = has_divisor ? args[6]->to_int() : 0;
  EMBER_CHECK(!has_divisor || divisor != 0, Error::InvalidArgument, "%s: divisor must be not zero",
              op);
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(k[i] > 0 && s[i] > 0 && p[i] >= 0, Error::InvalidArgument,
                "%s: kernel size and stride must be positive, padding non-negative", op);
    EMBER_CHECK(p[i] <= k[i] / 2, Error::InvalidArgument,
                "%s: pad should be at most half of kernel size", op);
  }
  EMBER_CHECK(in.dtype() != ScalarType::Bool && out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: dtype %s (out %s) is not supported", op, to_string(in.dtype()),
              to_string(out.dtype()));
  const Image2d x = Image2d::of(in);
  EMBER_CHECK(x.height > 0 && x.width > 0, Error::InvalidArgument, "%s: empty spatial dims", op);
  const int64_t oh = pooled_size(x.height, k[0], p[0], s[0], 1, ceil_mode);
  const int64_t ow = pooled_size(x.width, k[1], p[1], s[1], 1, ceil_mode);
  EMBER_CHECK(oh > 0 && ow > 0, Error::InvalidArgument, "%s: output size is too small", op);
  EMBER_TRY(resize_image(op, in, oh, ow, out));
  const Image2d y = Image2d::of(out);
  EMBER_SWITCH_REAL_TYPES(in.dtype(), T, (void)0, {
    using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, compute_type_t<T>>;
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    ctx.threads->parallel_for(x.planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            int64_t h0 = i * s[0] - p[0], w0 = j * s[1] - p[1];
            int64_t h1 = std::min(h0 + k[0], x.height + p[0]);
            int64_t w1 = std::min(w0 + k[1], x.width + p[1]);
            const int64_t pool_size = (h1 - h0) * (w1 - w0);
            h0 = std::max<int64_t>(h0, 0);
            w0 = std::max<int64_t>(w0, 0);
            h1 = std::min(h1, x.height);
            w1 = std::min(w1, x.width);
            T& o = dst[y.at(pl, i, j)];
            if (h0 >= h1 || w0 >= w1) {
              o = T(0);
              continue;
            }
            Acc sum = 0;
            for (int64_t h = h0; h < h1; ++h) {
              for (int64_t w = w0; w < w1; ++w) sum += static_cast<Acc>(src[x.at(pl, h, w)]);
            }
            const int64_t factor = has_divisor         ? divisor
                                   : count_include_pad ? pool_size
                                                       : (h1 - h0) * (w1 - w0);
            o = static_cast<T>(sum / static_cast<Acc>(factor));
          }
        }
      }
    });
  });
  return Error::Ok;
}

}  // namespace ember
