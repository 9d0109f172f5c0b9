// aten::logical_not.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error logical_not_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"logical_not", kAcceptAll, false, /*bool_result=*/true},
                      [](auto x) { return x == decltype(x)(0); });
}

}  // namespace ember
