// aten::ceil.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error ceil_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"ceil", kAcceptInt | kAcceptFloating}, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::ceil(x);
    } else {
      return x;
    }
  });
}

}  // namespace ember
