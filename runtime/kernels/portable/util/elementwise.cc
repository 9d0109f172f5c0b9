#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {

Error resize_to_broadcast(const Tensor& a, const Tensor& b, Tensor& out) {
  const int n = a.dim() > b.dim() ? a.dim() : b.dim();
  int32_t sizes[kMaxRank];
  for (int d = 0; d < n; ++d) {
    const int da = d - (n - a.dim()), db = d - (n - b.dim());
    const int32_t sa = da < 0 ? 1 : a.size(da);
    const int32_t sb = db < 0 ? 1 : b.size(db);
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, Error::InvalidArgument,
                "shapes do not broadcast: dim %d is %d in one operand and %d in the other", d, sa,
                sb);
    sizes[d] = sa == 1 ? sb : sa;
  }
  EMBER_CHECK(out.dim() == n, Error::InvalidArgument,
              "out has rank %d; the broadcast result has rank %d", out.dim(), n);
  return out.resize({sizes, static_cast<size_t>(n)});
}

}  // namespace ember
