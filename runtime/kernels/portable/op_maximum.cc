// aten::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error maximum_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(), {"maximum"},
                       [](auto x, auto y) { return nan_max(x, y); });
}

}  // namespace ember
