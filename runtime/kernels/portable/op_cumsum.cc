// aten::cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error cumsum_out(KernelContext& ctx, std::span<EValue*> args) {
  return cumulative_fold(ctx, args[0]->to_tensor(), args[1]->to_int(), *args[2],
                         args[3]->to_tensor(), /*product=*/false, "cumsum");
}

}  // namespace ember
