// aten::constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out)
// pad = (last_before, last_after, second_last_before, ...); negative pads crop.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {

Error constant_pad_nd_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> pad = args[1]->to_int_list();
  Tensor& out = args[3]->to_tensor();
  const char* op = "constant_pad_nd";
  EMBER_CHECK(pad.size() % 2 == 0, Error::InvalidArgument,
              "%s: length of pad must be even but instead it equals %zu", op, pad.size());
  EMBER_CHECK(pad.size() / 2 <= static_cast<size_t>(in.dim()), Error::InvalidArgument,
              "%s: length of pad should be no more than twice the number of dimensions of the "
              "input. Pad length is %zu while the input has %d dimensions",
              op, pad.size(), in.dim());
  EMBER_CHECK(out.dtype() == in.dtype() && out.dim() == in.dim(), Error::InvalidArgument,
              "%s: out must have the input's dtype and rank", op);
  int32_t sizes[kMaxRank];
  View src = View::of(in);
  for (int d = 0; d < in.dim(); ++d) {
    const size_t k = 2 * static_cast<size_t>(in.dim() - 1 - d);
    const int64_t before = k < pad.size() ? pad[k] : 0, after = k < pad.size() ? pad[k + 1] : 0;
    const int64_t size = in.size(d) + before + after;
    EMBER_CHECK(size >= 0, Error::InvalidArgument,
                "%s: the input size %d, plus negative padding %lld and %lld resulted in a negative "
                "output size",
                op, in.size(d), static_cast<long long>(before), static_cast<long long>(after));
    sizes[d] = static_cast<int32_t>(size);
    // The kept input range and where it lands.
    const int64_t lo = before < 0 ? -before : 0;
    const int64_t hi = in.size(d) - (after < 0 ? -after : 0);
    src.offset += lo * src.strides[d];
    src.sizes[d] = hi > lo ? hi - lo : 0;
  }
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(in.dim())}));
  View dst = View::of(out);
  for (int d = 0; d < in.dim(); ++d) {
    const size_t k = 2 * static_cast<size_t>(in.dim() - 1 - d);
    const int64_t before = k < pad.size() ? pad[k] : 0;
    dst.offset += (before > 0 ? before : 0) * dst.strides[d];
    dst.sizes[d] = src.sizes[d];
  }
  EMBER_SWITCH_ALL_TYPES(out.dtype(), T, (void)0, {
    const T value = scalar_to<T>(*args[2]);
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[offset_of(out, i)] = value;
  });
  if (src.numel() > 0) copy_view(in, src, out, dst);
  return Error::Ok;
}

}  // namespace ember
