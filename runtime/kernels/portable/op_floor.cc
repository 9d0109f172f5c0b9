// aten::floor.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error floor_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"floor", kAcceptInt | kAcceptFloating}, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::floor(x);
    } else {
      return x;
    }
  });
}

}  // namespace ember
