// aten::reciprocal.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error reciprocal_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"reciprocal", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return decltype(x)(1) / x; });
}

}  // namespace ember
