// aten::neg.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error neg_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"neg", kAcceptInt | kAcceptFloating}, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) {
      return -x;
    } else {
      return Wrapping<T>::neg(x);
    }
  });
}

}  // namespace ember
