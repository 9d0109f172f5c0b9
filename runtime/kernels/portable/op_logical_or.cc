// aten::logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error logical_or_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(),
                       {"logical_or", kAcceptAll, false, /*bool_result=*/true}, [](auto x, auto y) {
                         using T = decltype(x);
                         return (x != T(0)) || (y != T(0));
                       });
}

}  // namespace ember
