// aten::lt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::lt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error lt_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(),
                       {"lt", kAcceptAll, false, /*bool_result=*/true},
                       [](auto x, auto y) { return x < y; });
}

}  // namespace ember
