// aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None,
//                Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error mean_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[4]->to_tensor();
  // The result dtype is `dtype`, else the input's; it must be floating and be the out's dtype.
  const ScalarType result =
      args[3]->is_none() ? in.dtype() : static_cast<ScalarType>(args[3]->to_int());
  EMBER_CHECK(is_valid(result) && is_floating(result), Error::InvalidArgument,
              "mean: could not infer the output dtype; the input dtype must be floating, got %s",
              to_string(result));
  EMBER_CHECK(out.dtype() == result, Error::InvalidArgument,
              "mean: expected out to have dtype %s, got %s", to_string(result),
              to_string(out.dtype()));
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, *args[1], "mean", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_reduction(in, mask, args[2]->to_bool(), "mean", outs, plan));
  return fold_reduction<kAcceptFloating>(
      ctx, in, plan, out, "mean", [](auto zero) { return zero; },
      [](auto acc, auto v) { return acc + v; },
      [](auto acc, int64_t n) { return acc / static_cast<decltype(acc)>(n); });
}

}  // namespace ember
