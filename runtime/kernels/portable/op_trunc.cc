// aten::trunc.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error trunc_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"trunc", kAcceptInt | kAcceptFloating}, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::trunc(x);
    } else {
      return x;
    }
  });
}

}  // namespace ember
