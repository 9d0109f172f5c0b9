// aten::log2.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error log2_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"log2", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return std::log2(x); });
}

}  // namespace ember
