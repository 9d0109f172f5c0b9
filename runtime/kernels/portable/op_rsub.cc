// aten::rsub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
// out = other - alpha * self: ATen's sub with the operands swapped, `other` joining type
// promotion as a Python number (`1 - x` on a float16 x stays float16).
#include <array>

#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error sub_out(KernelContext& ctx, std::span<EValue*> args);  // op_sub.cc

Error rsub_out(KernelContext& ctx, std::span<EValue*> args) {
  std::array<EValue*, 4> swapped = {args[1], args[0], args[2], args[3]};
  return sub_out(ctx, swapped);
}

}  // namespace ember
