// aten::log1p.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error log1p_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"log1p", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return std::log1p(x); });
}

}  // namespace ember
