// aten::upsample_bilinear2d.out(Tensor self, SymInt[2] output_size, bool align_corners,
//     float? scales_h=None, float? scales_w=None, *, Tensor(a!) out)
// aten::upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size, bool align_corners,
//     float[]? scale_factors, *, Tensor(a!) out)
// ATen's source-index rule: align_corners maps corner to corner ((in-1)/(out-1)); otherwise
// src = max((dst + 0.5) * scale - 0.5, 0) with scale = 1/scale_factor or in/out.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/pooling.h"
#include "runtime/platform/thread_pool.h"

namespace ember {
namespace {

template <typename Acc>
struct Taps {
  int64_t i0, i1;
  Acc l0, l1;
};

template <typename Acc>
Taps<Acc> linear_taps(int64_t dst, int64_t in, int64_t out, bool align_corners, double scale) {
  const Acc ratio = align_corners
                        ? (out > 1 ? static_cast<Acc>(in - 1) / static_cast<Acc>(out - 1) : Acc(0))
                        : input_per_output<Acc>(scale, in, out);
  Acc src = align_corners ? ratio * static_cast<Acc>(dst)
                          : ratio * (static_cast<Acc>(dst) + Acc(0.5)) - Acc(0.5);
  if (!align_corners && src < 0) src = 0;
  const auto i0 = static_cast<int64_t>(src);
  Acc l1 = src - static_cast<Acc>(i0);
  l1 = l1 < 0 ? Acc(0) : l1 > 1 ? Acc(1) : l1;
  return {i0, i0 < in - 1 ? i0 + 1 : i0, Acc(1) - l1, l1};
}

Error upsample_bilinear(KernelContext& ctx, const Tensor& in, const int64_t size[2],
                        bool align_corners, const double scales[2], Tensor& out) {
  const char* op = "upsample_bilinear2d";
  EMBER_TRY(check_image(op, in));
  EMBER_CHECK(size[0] > 0 && size[1] > 0, Error::InvalidArgument,
              "%s: output size must be positive", op);
  EMBER_CHECK(is_floating(in.dtype()) && out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: expected a floating input and out of its dtype", op);
  const Image2d x = Image2d::of(in);
  EMBER_CHECK(x.height > 0 && x.width > 0, Error::InvalidArgument, "%s: empty spatial dims", op);
  EMBER_TRY(resize_image(op, in, size[0], size[1], out));
  const Image2d y = Image2d::of(out);
  EMBER_SWITCH_FLOAT_TYPES(in.dtype(), T, (void)0, {
    using Acc = compute_type_t<T>;
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    ctx.threads->parallel_for(x.planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        for (int64_t i = 0; i < size[0]; ++i) {
          const Taps<Acc> h = linear_taps<Acc>(i, x.height, size[0], align_corners, scales[0]);
          for (int64_t j = 0; j < size[1]; ++j) {
            const Taps<Acc> w = linear_taps<Acc>(j, x.width, size[1], align_corners, scales[1]);
            const auto v = [&](int64_t a, int64_t b) {
              return static_cast<Acc>(src[x.at(pl, a, b)]);
            };
            dst[y.at(pl, i, j)] =
                static_cast<T>(h.l0 * (w.l0 * v(h.i0, w.i0) + w.l1 * v(h.i0, w.i1)) +
                               h.l1 * (w.l0 * v(h.i1, w.i0) + w.l1 * v(h.i1, w.i1)));
          }
        }
      }
    });
  });
  return Error::Ok;
}

}  // namespace

Error upsample_bilinear2d_out(KernelContext& ctx, std::span<EValue*> args) {
  const std::span<const int64_t> s = args[1]->to_int_list();
  EMBER_CHECK(s.size() == 2, Error::InvalidArgument,
              "upsample_bilinear2d: output_size must have 2 entries");
  const int64_t size[2] = {s[0], s[1]};
  const double scales[2] = {args[3]->is_none() ? 0 : args[3]->scalar_as_double(),
                            args[4]->is_none() ? 0 : args[4]->scalar_as_double()};
  return upsample_bilinear(ctx, args[0]->to_tensor(), size, args[2]->to_bool(), scales,
                           args[5]->to_tensor());
}

Error upsample_bilinear2d_vec_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  EMBER_TRY(check_image("upsample_bilinear2d", in));
  int64_t size[2];
  double scales[2];
  EMBER_TRY(upsample_size("upsample_bilinear2d", in, *args[1], *args[3], size, scales));
  return upsample_bilinear(ctx, in, size, args[2]->to_bool(), scales, args[4]->to_tensor());
}

}  // namespace ember
