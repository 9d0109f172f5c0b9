// aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
// aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error add_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], args[2], args[3]->to_tensor(), {"add"},
                       [](auto x, auto y, auto alpha) {
                         using T = decltype(x);
                         if constexpr (std::is_integral_v<T>) {
                           return Wrapping<T>::add(x, Wrapping<T>::mul(alpha, y));
                         } else {
                           return x + alpha * y;
                         }
                       });
}

}  // namespace ember
