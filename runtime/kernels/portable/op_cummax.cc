// aten::cummax.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices)
//
// Contract C26: ties take the later index; a NaN propagates and each later NaN takes the index.
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error cummax_out(KernelContext& ctx, std::span<EValue*> args) {
  return cumulative_extreme<true>(ctx, args[0]->to_tensor(), args[1]->to_int(),
                                  args[2]->to_tensor(), args[3]->to_tensor(), "cummax");
}

}  // namespace ember
