// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error mul_out(KernelContext& /*context*/, std::span<EValue*> args) {
  return binary_out(args[0]->to_tensor(), args[1]->to_tensor(), nullptr, args[2]->to_tensor(),
                    "mul", [](auto x, auto y, auto) {
                      using T = decltype(x);
                      if constexpr (std::is_integral_v<T>) {
                        return Wrapping<T>::mul(x, y);
                      } else {
                        return x * y;
                      }
                    });
}

}  // namespace ember
