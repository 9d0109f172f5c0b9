// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error mul_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(), {"mul"},
                       [](auto x, auto y) {
                         using T = decltype(x);
                         if constexpr (std::is_integral_v<T>) {
                           return Wrapping<T>::mul(x, y);
                         } else {
                           return x * y;
                         }
                       });
}

}  // namespace ember
