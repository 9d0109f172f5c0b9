// aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
// aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error sub_out(KernelContext& ctx, std::span<EValue*> args) {
  for (int k = 0; k < 2; ++k) {
    const bool is_bool = args[k]->is_tensor() ? args[k]->to_tensor().dtype() == ScalarType::Bool
                                              : args[k]->is_bool();
    EMBER_CHECK(!is_bool, Error::InvalidArgument,
                "sub: subtraction with a bool operand is not supported (use logical_not or "
                "logical_xor)");
  }
  return binary_op_out(ctx, *args[0], *args[1], args[2], args[3]->to_tensor(), {"sub"},
                       [](auto x, auto y, auto alpha) {
                         using T = decltype(x);
                         if constexpr (std::is_integral_v<T>) {
                           return Wrapping<T>::sub(x, Wrapping<T>::mul(alpha, y));
                         } else {
                           return x - alpha * y;
                         }
                       });
}

}  // namespace ember
