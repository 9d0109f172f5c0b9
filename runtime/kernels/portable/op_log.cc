// aten::log.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error log_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"log", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return std::log(x); });
}

}  // namespace ember
