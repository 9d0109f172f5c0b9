// aten::isnan.out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error isnan_out(KernelContext& ctx, std::span<EValue*> args) {
  return unary_op_out(ctx, args, {"isnan", kAcceptAll, false, /*bool_result=*/true},
                      [](auto x) { return is_nan_value(x); });
}

}  // namespace ember
