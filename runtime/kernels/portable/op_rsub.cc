// aten::rsub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
// out = other - alpha * self: ATen's sub with the operands swapped, `other` joining type
// promotion as a Python number (`1 - x` on a float16 x stays float16).
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error rsub_out(KernelContext& ctx, std::span<EValue*> args) {
  for (int k = 0; k < 2; ++k) {
    const bool is_bool = args[k]->is_tensor() ? args[k]->to_tensor().dtype() == ScalarType::Bool
                                              : args[k]->is_bool();
    EMBER_CHECK(!is_bool, Error::InvalidArgument,
                "rsub: subtraction with a bool operand is not supported (use logical_not or "
                "logical_xor)");
  }
  return binary_op_out(ctx, *args[1], *args[0], args[2], args[3]->to_tensor(), {"rsub"},
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
