// aten::flip.out(Tensor self, int[] dims, *, Tensor(a!) out)
// aten::roll.out(Tensor self, SymInt[1] shifts, int[1] dims=[], *, Tensor(a!) out)
// flip is a view with negated strides; roll without dims rolls the flattened tensor.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error flip_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  View v = View::of(in);
  uint32_t seen = 0;
  for (int64_t dim : args[1]->to_int_list()) {
    int64_t d = 0;
    EMBER_TRY(wrap_dim("flip", dim, in.dim(), &d));
    EMBER_CHECK((seen & (1u << d)) == 0, Error::InvalidArgument,
                "flip: dim %lld appears multiple times in the list of dims",
                static_cast<long long>(d));
    seen |= 1u << d;
    if (in.dim() == 0) continue;
    v.offset += (v.sizes[d] - 1) * v.strides[d];
    v.strides[d] = -v.strides[d];
  }
  if (in.numel() == 0) v.offset = 0;
  return copy_view_out("flip", in, v, args[2]->to_tensor());
}

Error roll_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> shifts = args[1]->to_int_list();
  const std::span<const int64_t> dims = args[2]->to_int_list();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(out.dtype() == in.dtype() && out.dim() == in.dim(), Error::InvalidArgument,
              "roll: out must have the input's dtype and rank");
  EMBER_CHECK(!shifts.empty(), Error::InvalidArgument, "roll: `shifts` required");
  EMBER_CHECK(
      dims.empty() ? shifts.size() == 1 : shifts.size() == dims.size(), Error::InvalidArgument,
      "roll: shifts and dimensions must align. shifts: %zu, dims: %zu", shifts.size(), dims.size());
  EMBER_TRY(out.resize(in.sizes()));
  const int64_t n = in.numel();
  if (n == 0) return Error::Ok;
  // Per-dim shift, normalised into [0, size).
  int64_t shift[kMaxRank] = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = 0;
    EMBER_TRY(wrap_dim("roll", dims[i], in.dim(), &d));
    if (in.dim() == 0) continue;
    const int64_t size = in.size(static_cast<int>(d));
    shift[d] = ((shift[d] + shifts[i]) % size + size) % size;
  }
  const int64_t flat = dims.empty() ? ((shifts[0] % n) + n) % n : 0;
  const auto copy = [&](auto* dst, const auto* src) {
    int64_t idx[kMaxRank] = {};
    for (int64_t i = 0; i < n; ++i) {
      int64_t from = 0;
      if (dims.empty()) {
        from = offset_of(in, (i - flat + n) % n);
      } else {
        for (int d = 0; d < in.dim(); ++d) {
          const int64_t size = in.size(d);
          from += ((idx[d] - shift[d] + size) % size) * in.stride(d);
        }
      }
      dst[offset_of(out, i)] = src[from];
      for (int d = in.dim() - 1; d >= 0; --d) {
        if (++idx[d] < in.size(d)) break;
        idx[d] = 0;
      }
    }
  };
  with_element_bits(in.element_size(), [&](auto bits) {
    using B = decltype(bits);
    copy(out.data<B>(), in.data<B>());
  });
  return Error::Ok;
}

}  // namespace ember
