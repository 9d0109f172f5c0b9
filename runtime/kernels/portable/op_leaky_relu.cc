// aten::leaky_relu.out(Tensor self, Scalar negative_slope=0.01, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error leaky_relu_out(KernelContext& ctx, std::span<EValue*> args) {
  const double slope = scalar_arg(*args[1]);
  return unary_op_out<kAcceptFloat>(ctx, args[0]->to_tensor(), args[2]->to_tensor(),
                                    {"leaky_relu", kAcceptFloating}, [=](auto x) {
                                      using T = decltype(x);
                                      return x > T(0) ? x : x * static_cast<T>(slope);
                                    });
}

}  // namespace ember
