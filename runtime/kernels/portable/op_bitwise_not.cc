// aten::bitwise_not.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error bitwise_not_out(KernelContext& ctx, std::span<EValue*> args) {
  const ElementwiseSpec spec{"bitwise_not", kAcceptBool | kAcceptInt};
  if (args[0]->to_tensor().dtype() == ScalarType::Bool) {
    // On bool, ~ is logical negation (bool compute values are 0/1).
    return unary_op_out(ctx, args, spec, [](auto x) { return x == 0; });
  }
  return unary_op_out(ctx, args, spec, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(~x);
    } else {
      return x;
    }
  });
}

}  // namespace ember
