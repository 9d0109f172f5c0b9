// aten::repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out)
// out dim i = repeats[i] * size[i] (self padded with leading ones): one copy of a 2*rank view whose
// (repeat, size) pairs have strides (0, stride).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error repeat_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> repeats = args[1]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  const int n = static_cast<int>(repeats.size());
  EMBER_CHECK(n >= in.dim() && n <= kMaxRank, Error::InvalidArgument,
              "repeat: number of dimensions of repeat dims (%d) can not be smaller than number of "
              "dimensions of tensor (%d)",
              n, in.dim());
  EMBER_CHECK(out.dtype() == in.dtype() && out.dim() == n, Error::InvalidArgument,
              "repeat: out must have the input's dtype and rank %d", n);
  View v;
  int32_t sizes[kMaxRank];
  for (int d = 0; d < n; ++d) {
    EMBER_CHECK(repeats[d] >= 0, Error::InvalidArgument, "repeat: negative repeat %lld",
                static_cast<long long>(repeats[d]));
    const int src = d - (n - in.dim());
    const int64_t size = src < 0 ? 1 : in.size(src);
    v.insert(v.dim, repeats[d], 0);
    v.insert(v.dim, size, src < 0 ? 0 : in.stride(src));
    sizes[d] = static_cast<int32_t>(repeats[d] * size);
  }
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(n)}));
  copy_view(in, v, out);
  return Error::Ok;
}

}  // namespace ember
