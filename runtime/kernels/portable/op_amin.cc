// aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error amin_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, *args[1], "amin", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_reduction(in, mask, args[2]->to_bool(), "amin", outs, plan));
  return extreme_reduction<false>(ctx, in, plan, &out, nullptr, "amin");
}

}  // namespace ember
