// aten::bitwise_xor.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::bitwise_xor.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// aten::bitwise_xor.Scalar_Tensor_out(Scalar self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error bitwise_xor_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(),
                       {"bitwise_xor", kAcceptBool | kAcceptInt}, [](auto x, auto y) {
                         using T = decltype(x);
                         if constexpr (std::is_integral_v<T>) {
                           return static_cast<T>(x ^ y);
                         } else {
                           return x;  // floating dtypes are refused before the loop
                         }
                       });
}

}  // namespace ember
