// aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out)
// aten::squeeze_copy.out(Tensor self, *, Tensor(a!) out)
// aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out)
// aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out)
// squeeze removes the named (or all) size-1 dims and leaves other named dims as they are.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {
namespace {

// Squeezes the dims whose bit is set in `mask` (and that have size 1).
Error squeeze(const Tensor& in, uint32_t mask, Tensor& out) {
  View v = View::of(in);
  for (int d = in.dim() - 1; d >= 0; --d) {
    if ((mask & (1u << d)) != 0 && in.size(d) == 1) v.erase(d);
  }
  return copy_view_out("squeeze_copy", in, v, out);
}

}  // namespace

Error unsqueeze_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  int64_t d = 0;
  EMBER_TRY(wrap_dim("unsqueeze_copy", args[1]->to_int(), in.dim() + 1, &d));
  EMBER_CHECK(in.dim() < kMaxRank, Error::InvalidArgument, "unsqueeze_copy: rank %d is the maximum",
              kMaxRank);
  View v = View::of(in);
  const int64_t stride = d < in.dim() ? v.strides[d] * v.sizes[d] : 1;
  v.insert(static_cast<int>(d), 1, stride);
  return copy_view_out("unsqueeze_copy", in, v, args[2]->to_tensor());
}

Error squeeze_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return squeeze(args[0]->to_tensor(), ~0u, args[1]->to_tensor());
}

Error squeeze_copy_dim_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  int64_t d = 0;
  EMBER_TRY(wrap_dim("squeeze_copy", args[1]->to_int(), in.dim(), &d));
  return squeeze(in, in.dim() == 0 ? 0u : 1u << d, args[2]->to_tensor());
}

Error squeeze_copy_dims_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  uint32_t mask = 0;
  for (int64_t dim : args[1]->to_int_list()) {
    int64_t d = 0;
    EMBER_TRY(wrap_dim("squeeze_copy", dim, in.dim(), &d));
    if (in.dim() > 0) mask |= 1u << d;
  }
  return squeeze(in, mask, args[2]->to_tensor());
}

}  // namespace ember
