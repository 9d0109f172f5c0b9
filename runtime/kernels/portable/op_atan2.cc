// aten::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error atan2_out(KernelContext& ctx, std::span<EValue*> args) {
  return binary_op_out<kAcceptFloat>(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(),
                                     {"atan2", kAcceptAll, /*int_to_float=*/true},
                                     [](auto x, auto y) { return std::atan2(x, y); });
}

}  // namespace ember
