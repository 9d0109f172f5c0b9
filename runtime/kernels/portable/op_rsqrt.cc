// aten::rsqrt.out(Tensor self, *, Tensor(a!) out)
#include <cmath>
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error rsqrt_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out<kAcceptFloat>(ctx, args, {"rsqrt", kAcceptAll, /*int_to_float=*/true},
                                    [](auto x) { return decltype(x)(1) / std::sqrt(x); });
}

}  // namespace ember
