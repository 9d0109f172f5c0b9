// aten::tanh.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error tanh_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"tanh", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return std::tanh(x); });
}

}  // namespace ember
