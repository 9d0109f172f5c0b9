// aten::relu.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error relu_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"relu", kAcceptInt | kAcceptFloating}, [](auto x) {
    using T = decltype(x);
    return is_nan_value(x) || x > T(0) ? x : T(0);
  });
}

}  // namespace ember
