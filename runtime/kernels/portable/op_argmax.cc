// aten::argmax.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error argmax_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(in.dtype() != ScalarType::Bool, Error::InvalidArgument,
              "argmax: not implemented for dtype bool");
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, *args[1], "argmax", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  // With dim=None the index is into the flattened input (row-major over every dim).
  EMBER_TRY(plan_reduction(in, mask, args[2]->to_bool(), "argmax", outs, plan));
  return extreme_reduction<true>(ctx, in, plan, nullptr, &out, "argmax");
}

}  // namespace ember
