// aten::pixel_shuffle.out(Tensor self, int upscale_factor, *, Tensor(a!) out)
// (*, C*r*r, H, W) -> (*, C, H*r, W*r): out[..., c, h*r + i, w*r + j] = in[..., c*r*r + i*r + j, h,
// w], one strided copy of a permuted view.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error pixel_shuffle_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const int64_t r = args[1]->to_int();
  Tensor& out = args[2]->to_tensor();
  const int n = in.dim();
  EMBER_CHECK(n >= 3, Error::InvalidArgument,
              "pixel_shuffle: expected an input of rank >= 3, got %d", n);
  EMBER_CHECK(r > 0, Error::InvalidArgument, "pixel_shuffle: upscale_factor must be positive");
  const int64_t c = in.size(n - 3);
  EMBER_CHECK(c % (r * r) == 0, Error::InvalidArgument,
              "pixel_shuffle: %lld channels are not divisible by upscale_factor squared (%lld)",
              static_cast<long long>(c), static_cast<long long>(r * r));
  EMBER_CHECK(out.dtype() == in.dtype() && out.dim() == n, Error::InvalidArgument,
              "pixel_shuffle: out must have the input's dtype and rank");
  int32_t sizes[kMaxRank];
  for (int d = 0; d < n - 3; ++d) sizes[d] = in.size(d);
  sizes[n - 3] = static_cast<int32_t>(c / (r * r));
  sizes[n - 2] = static_cast<int32_t>(in.size(n - 2) * r);
  sizes[n - 1] = static_cast<int32_t>(in.size(n - 1) * r);
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(n)}));
  View v = View::of(in);
  const int64_t sc = in.stride(n - 3), sh = in.stride(n - 2), sw = in.stride(n - 1);
  v.dim = n - 3;
  // (C/r², H, r, W, r) over (c, h, i, w, j).
  const int64_t sizes5[5] = {c / (r * r), in.size(n - 2), r, in.size(n - 1), r};
  const int64_t strides5[5] = {sc * r * r, sh, sc * r, sw, sc};
  for (int i = 0; i < 5; ++i) v.insert(v.dim, sizes5[i], strides5[i]);
  copy_view(in, v, out);
  return Error::Ok;
}

}  // namespace ember
