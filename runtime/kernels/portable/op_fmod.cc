// aten::fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error fmod_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(),
                       {"fmod", kAcceptInt | kAcceptFloating, false, false,
                        /*nonzero_int_divisor=*/true},
                       [](auto x, auto y) { return c_remainder(x, y); });
}

}  // namespace ember
