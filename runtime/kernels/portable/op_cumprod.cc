// aten::cumprod.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error cumprod_out(KernelContext& ctx, std::span<EValue*> args) {
  return cumulative_fold(ctx, args[0]->to_tensor(), args[1]->to_int(), *args[2],
                         args[3]->to_tensor(), /*product=*/true, "cumprod");
}

}  // namespace ember
