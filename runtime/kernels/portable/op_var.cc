// aten::var.correction_out(Tensor self, int[1]? dim, *, Scalar? correction=None, bool
// keepdim=False,
//                         Tensor(a!) out)   (libtorch 1.13 spells correction int?)
// aten::var.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *, Tensor(a!)
// out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {
namespace {

Error var_impl(KernelContext& ctx, const Tensor& in, const EValue& dims, double correction,
               bool keepdim, Tensor& out) {
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, dims, "var", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_reduction(in, mask, keepdim, "var", outs, plan));
  return variance_reduction(ctx, in, plan, out, correction, /*take_sqrt=*/false, "var");
}

}  // namespace

Error var_correction_out(KernelContext& ctx, std::span<EValue*> args) {
  const double correction = args[2]->is_none() ? 1.0 : args[2]->scalar_as_double();
  return var_impl(ctx, args[0]->to_tensor(), *args[1], correction, args[3]->to_bool(),
                  args[4]->to_tensor());
}

Error var_out(KernelContext& ctx, std::span<EValue*> args) {
  return var_impl(ctx, args[0]->to_tensor(), *args[1], args[2]->to_bool() ? 1.0 : 0.0,
                  args[3]->to_bool(), args[4]->to_tensor());
}

}  // namespace ember
