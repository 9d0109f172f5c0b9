// aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out)
// Size-1 dims repeat (stride 0), new leading dims are added, -1 keeps a dim's size.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error expand_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> size = args[1]->to_int_list();
  const int n = static_cast<int>(size.size());
  EMBER_CHECK(n >= in.dim() && n <= kMaxRank, Error::InvalidArgument,
              "expand_copy: the number of sizes provided (%d) must be greater or equal to the "
              "number of dimensions in the tensor (%d)",
              n, in.dim());
  View v;
  v.dim = n;
  for (int d = 0; d < n; ++d) {
    const int src = d - (n - in.dim());
    const int64_t want = size[d];
    if (src < 0) {
      EMBER_CHECK(want >= 0, Error::InvalidArgument,
                  "expand_copy: the expanded size %lld is not allowed in a leading, non-existing "
                  "dimension %d",
                  static_cast<long long>(want), d);
      v.sizes[d] = want;
      v.strides[d] = 0;
      continue;
    }
    const int64_t have = in.size(src);
    EMBER_CHECK(want == -1 || want == have || have == 1, Error::InvalidArgument,
                "expand_copy: the expanded size (%lld) must match the existing size (%lld) at "
                "non-singleton dimension %d",
                static_cast<long long>(want), static_cast<long long>(have), d);
    v.sizes[d] = want == -1 ? have : want;
    v.strides[d] = (have == 1 && want != 1 && want != -1) ? 0 : in.stride(src);
  }
  return copy_view_out("expand_copy", in, v, args[3]->to_tensor());
}

}  // namespace ember
