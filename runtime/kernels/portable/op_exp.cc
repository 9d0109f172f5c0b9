// aten::exp.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error exp_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"exp", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return std::exp(x); });
}

}  // namespace ember
