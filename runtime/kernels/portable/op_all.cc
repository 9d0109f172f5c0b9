// aten::all.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out)
// aten::all.dims_out(Tensor self, int[1]? dim=None, bool keepdim=False, *, Tensor(a!) out)
// aten::all.all_out(Tensor self, *, Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {
namespace {

Error all_impl(KernelContext& ctx, const Tensor& in, const EValue& dims, bool keepdim,
               Tensor& out) {
  // The result is bool, or uint8 for a uint8 input (ATen's legacy rule).
  const ScalarType result = in.dtype() == ScalarType::Byte ? ScalarType::Byte : ScalarType::Bool;
  EMBER_CHECK(out.dtype() == result, Error::InvalidArgument,
              "all: expected out to have dtype %s, got %s", to_string(result),
              to_string(out.dtype()));
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, dims, "all", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_reduction(in, mask, keepdim, "all", outs, plan));
  constexpr bool kAny = false;
  return fold_reduction<kAcceptBool | kAcceptInt>(
      ctx, in, plan, out, "all", [](auto zero) { return static_cast<decltype(zero)>(!kAny); },
      [](auto acc, auto v) {
        using Acc = decltype(acc);
        return static_cast<Acc>(kAny ? (acc != 0 || v != 0) : (acc != 0 && v != 0));
      },
      [](auto acc, int64_t) { return acc; });
}

}  // namespace

Error all_dim_out(KernelContext& ctx, std::span<EValue*> args) {
  return all_impl(ctx, args[0]->to_tensor(), *args[1], args[2]->to_bool(), args[3]->to_tensor());
}

Error all_all_out(KernelContext& ctx, std::span<EValue*> args) {
  return all_impl(ctx, args[0]->to_tensor(), EValue(), false, args[1]->to_tensor());
}

}  // namespace ember
