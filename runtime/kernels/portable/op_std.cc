// aten::std.correction_out(Tensor self, int[1]? dim, *, Scalar? correction=None, bool
// keepdim=False,
//                         Tensor(a!) out)   (libtorch 1.13 spells correction int?)
// aten::std.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *, Tensor(a!)
// out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {
namespace {

Error std_impl(KernelContext& ctx, const Tensor& in, const EValue& dims, double correction,
               bool keepdim, Tensor& out) {
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, dims, "std", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_reduction(in, mask, keepdim, "std", outs, plan));
  return variance_reduction(ctx, in, plan, out, correction, /*take_sqrt=*/true, "std");
}

}  // namespace

Error std_correction_out(KernelContext& ctx, std::span<EValue*> args) {
  const double correction = args[2]->is_none() ? 1.0 : args[2]->scalar_as_double();
  return std_impl(ctx, args[0]->to_tensor(), *args[1], correction, args[3]->to_bool(),
                  args[4]->to_tensor());
}

Error std_out(KernelContext& ctx, std::span<EValue*> args) {
  return std_impl(ctx, args[0]->to_tensor(), *args[1], args[2]->to_bool() ? 1.0 : 0.0,
                  args[3]->to_bool(), args[4]->to_tensor());
}

}  // namespace ember
