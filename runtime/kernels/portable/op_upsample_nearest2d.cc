// aten::upsample_nearest2d.out(Tensor self, SymInt[2] output_size, float? scales_h=None,
//     float? scales_w=None, *, Tensor(a!) out)
// aten::upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors, *,
//     Tensor(a!) out)
// Source index = min(floor(dst * in/out), in - 1), computed in float as ATen does (so that the
// rounding of in/out matches), with ATen's exact shortcuts for out == in and out == 2 * in.
#include <cmath>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/pooling.h"
#include "runtime/platform/thread_pool.h"

namespace ember {
namespace {

int64_t nearest_source(int64_t dst, int64_t in, int64_t out, double scale) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float ratio = input_per_output<float>(scale, in, out);
  const auto src = static_cast<int64_t>(std::floor(static_cast<float>(dst) * ratio));
  return src < in - 1 ? src : in - 1;
}

Error upsample_nearest(KernelContext& ctx, const Tensor& in, const int64_t size[2],
                       const double scales[2], Tensor& out) {
  const char* op = "upsample_nearest2d";
  EMBER_TRY(check_image(op, in));
  EMBER_CHECK(size[0] > 0 && size[1] > 0, Error::InvalidArgument,
              "%s: output size must be positive", op);
  EMBER_CHECK(out.dtype() == in.dtype(), Error::InvalidArgument, "%s: out dtype %s, expected %s",
              op, to_string(out.dtype()), to_string(in.dtype()));
  const Image2d x = Image2d::of(in);
  EMBER_CHECK(x.height > 0 && x.width > 0, Error::InvalidArgument, "%s: empty spatial dims", op);
  EMBER_TRY(resize_image(op, in, size[0], size[1], out));
  const Image2d y = Image2d::of(out);
  const auto copy = [&](auto* dst, const auto* src) {
    ctx.threads->parallel_for(x.planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        for (int64_t i = 0; i < size[0]; ++i) {
          const int64_t h = nearest_source(i, x.height, size[0], scales[0]);
          for (int64_t j = 0; j < size[1]; ++j) {
            dst[y.at(pl, i, j)] = src[x.at(pl, h, nearest_source(j, x.width, size[1], scales[1]))];
          }
        }
      }
    });
  };
  with_element_bits(in.element_size(), [&](auto bits) {
    using B = decltype(bits);
    copy(out.data<B>(), in.data<B>());
  });
  return Error::Ok;
}

}  // namespace

Error upsample_nearest2d_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> s = args[1]->to_int_list();
  EMBER_CHECK(s.size() == 2, Error::InvalidArgument,
              "upsample_nearest2d: output_size must have 2 entries");
  const int64_t size[2] = {s[0], s[1]};
  const double scales[2] = {args[2]->is_none() ? 0 : args[2]->scalar_as_double(),
                            args[3]->is_none() ? 0 : args[3]->scalar_as_double()};
  return upsample_nearest(ctx, in, size, scales, args[4]->to_tensor());
}

Error upsample_nearest2d_vec_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  EMBER_TRY(check_image("upsample_nearest2d", in));
  int64_t size[2];
  double scales[2];
  EMBER_TRY(upsample_size("upsample_nearest2d", in, *args[1], *args[2], size, scales));
  return upsample_nearest(ctx, in, size, scales, args[3]->to_tensor());
}

}  // namespace ember
