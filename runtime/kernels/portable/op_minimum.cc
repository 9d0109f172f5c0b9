// aten::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error minimum_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(), {"minimum"},
                       [](auto x, auto y) { return nan_min(x, y); });
}

}  // namespace ember
