// aten::silu.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error silu_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"silu", kAcceptFloating}, [](auto x) {
    using T = decltype(x);
    return x / (T(1) + std::exp(-x));
  });
}

}  // namespace ember
