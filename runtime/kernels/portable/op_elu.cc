// aten::elu.out(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *, Tensor(a!)
// out)
//
// Contract C28: scale * x for x > 0, else alpha * scale * (exp(input_scale * x) - 1); SELU and CELU
// are this op with other parameters, so all three must be honoured.
#include <cmath>

#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error elu_out(KernelContext& ctx, std::span<EValue*> args) {
  const double alpha = scalar_arg(*args[1]);
  const double scale = scalar_arg(*args[2]);
  const double input_scale = scalar_arg(*args[3]);
  return unary_op_out<kAcceptFloat>(
      ctx, args[0]->to_tensor(), args[4]->to_tensor(), {"elu", kAcceptFloating}, [=](auto x) {
        using T = decltype(x);
        if (x > T(0)) return x * static_cast<T>(scale);
        return std::expm1(x * static_cast<T>(input_scale)) * static_cast<T>(alpha * scale);
      });
}

}  // namespace ember
