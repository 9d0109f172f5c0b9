// aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out)
// aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out)
// aten::pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out)
#include <cmath>

#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {
namespace {

// ATen's float and double kernel for a Scalar exponent computes these exponents with plain
// arithmetic, not pow: 2, 3, -2, 0.5, -0.5, -1 (1 to 6 here; 0 for pow). They are ops the
// hardware rounds correctly, so doing the same gives the same bits, and they are the common
// exponents (x.pow(2) in RMSNorm and variance) and much faster than pow.
int pow_shortcut(double e) {
  constexpr double kExponents[] = {2.0, 3.0, -2.0, 0.5, -0.5, -1.0};
  for (int k = 0; k < 6; ++k) {
    if (e == kExponents[k]) return k + 1;
  }
  return 0;
}

}  // namespace

Error pow_out(KernelContext& ctx, std::span<EValue*> args) {
  const EValue& base = *args[0];
  const EValue& exponent = *args[1];
  // ATen refuses a negative integer Scalar exponent on an integer tensor.
  if (base.is_tensor() && exponent.is_int() && exponent.to_int() < 0) {
    EMBER_CHECK(is_floating(base.to_tensor().dtype()), Error::InvalidArgument,
                "pow: integers to negative integer powers are not allowed");
  }
  Tensor& out = args[2]->to_tensor();
  const bool scalar_exponent_float =
      base.is_tensor() && exponent.is_scalar() && !exponent.is_bool() &&
      (out.dtype() == ScalarType::Float || out.dtype() == ScalarType::Double);
  const int shortcut = scalar_exponent_float ? pow_shortcut(exponent.scalar_as_double()) : 0;
  return binary_op_out(ctx, base, exponent, nullptr, out, {"pow", kAcceptInt | kAcceptFloating},
                       [shortcut](auto x, auto y) {
                         using T = decltype(x);
                         if constexpr (std::is_integral_v<T>) {
                           return int_power(x, y);
                         } else {
                           switch (shortcut) {
                             case 1:
                               return static_cast<T>(x * x);
                             case 2:
                               return static_cast<T>(x * x * x);
                             case 3:
                               return static_cast<T>(T(1) / (x * x));
                             case 4:
                               return static_cast<T>(std::sqrt(x));
                             case 5:
                               return static_cast<T>(T(1) / std::sqrt(x));
                             case 6:
                               return static_cast<T>(T(1) / x);
                             default:
                               return static_cast<T>(std::pow(x, y));
                           }
                         }
                       });
}

}  // namespace ember
