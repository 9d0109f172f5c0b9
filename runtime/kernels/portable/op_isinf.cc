// aten::isinf.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error isinf_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"isinf", kAcceptAll, false, /*bool_result=*/true}, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::isinf(x);
    } else {
      return false;
    }
  });
}

}  // namespace ember
