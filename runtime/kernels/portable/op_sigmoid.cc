// aten::sigmoid.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error sigmoid_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"sigmoid", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) {
                                      using T = decltype(x);
                                      return T(1) / (T(1) + std::exp(-x));
                                    });
}

}  // namespace ember
