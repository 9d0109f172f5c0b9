// aten::expm1.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error expm1_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"expm1", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return std::expm1(x); });
}

}  // namespace ember
