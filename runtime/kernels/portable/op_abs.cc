// aten::abs.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error abs_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"abs", kAcceptInt | kAcceptFloating}, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) {
      return std::fabs(x);
    } else if constexpr (std::is_signed_v<T>) {
      return x < 0 ? Wrapping<T>::neg(x) : x;
    } else {
      return x;
    }
  });
}

}  // namespace ember
