// aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out)
// aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out)
// aten::pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error pow_out(KernelContext& ctx, std::span<EValue*> args) {
  const EValue& base = *args[0];
  const EValue& exponent = *args[1];
  // ATen refuses a negative integer Scalar exponent on an integer tensor.
  if (base.is_tensor() && exponent.is_int() && exponent.to_int() < 0) {
    EMBER_CHECK(is_floating(base.to_tensor().dtype()), Error::InvalidArgument,
                "pow: integers to negative integer powers are not allowed");
  }
  return binary_op_out(ctx, base, exponent, nullptr, args[2]->to_tensor(),
                       {"pow", kAcceptInt | kAcceptFloating}, [](auto x, auto y) {
                         using T = decltype(x);
                         if constexpr (std::is_integral_v<T>) {
                           return int_power(x, y);
                         } else {
                           return static_cast<T>(std::pow(x, y));
                         }
                       });
}

}  // namespace ember
