// aten::relu.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error relu_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"relu", kAcceptInt | kAcceptFloating}, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;  // NaN and -0.0 stay, as in ATen (clamp_min)
  });
}

}  // namespace ember
