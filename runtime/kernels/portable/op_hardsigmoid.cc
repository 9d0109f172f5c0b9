// aten::hardsigmoid.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error hardsigmoid_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"hardsigmoid", kAcceptFloating}, [](auto x) {
    using T = decltype(x);
    const T r = x + T(3);
    return (r < T(0) ? T(0) : r > T(6) ? T(6) : r) / T(6);
  });
}

}  // namespace ember
