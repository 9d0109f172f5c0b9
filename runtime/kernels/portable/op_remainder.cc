// aten::remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::remainder.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// aten::remainder.Scalar_Tensor_out(Scalar self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error remainder_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(),
                       {"remainder", kAcceptInt | kAcceptFloating, false, false,
                        /*nonzero_int_divisor=*/true},
                       [](auto x, auto y) { return python_remainder(x, y); });
}

}  // namespace ember
