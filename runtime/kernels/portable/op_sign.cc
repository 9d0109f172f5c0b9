// aten::sign.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error sign_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"sign", kAcceptAll}, [](auto x) {
    using T = decltype(x);
    return static_cast<T>(static_cast<int>(T(0) < x) - static_cast<int>(x < T(0)));
  });
}

}  // namespace ember
