// aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!)
// max_values)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error max_dim_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& values = args[3]->to_tensor();
  Tensor& indices = args[4]->to_tensor();
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, *args[1], "max", mask));
  ReducePlan plan;
  Tensor* outs[] = {&values, &indices};
  EMBER_TRY(plan_reduction(in, mask, args[2]->to_bool(), "max", outs, plan));
  return extreme_reduction<true>(ctx, in, plan, &values, &indices, "max");
}

}  // namespace ember
