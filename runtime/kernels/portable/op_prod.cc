// aten::prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None,
//                    Tensor(a!) out)
// aten::prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {
namespace {

Error prod_impl(KernelContext& ctx, const Tensor& in, const EValue& dims, bool keepdim,
                const EValue& dtype, Tensor& out) {
  ScalarType result = out.dtype();
  EMBER_TRY(reduction_out_dtype(dtype, out, "prod", result));
  // libtorch 1.13, the reference, has no 16-bit float CPU kernel for prod.
  EMBER_CHECK(result != ScalarType::Half && result != ScalarType::BFloat16, Error::InvalidArgument,
              "prod: not implemented for dtype %s", to_string(result));
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, dims, "prod", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_reduction(in, mask, keepdim, "prod", outs, plan));
  return fold_reduction(
      ctx, in, plan, out, "prod", [](auto zero) { return static_cast<decltype(zero)>(1); },
      [](auto acc, auto v) {
        using Acc = decltype(acc);
        if constexpr (std::is_same_v<Acc, bool>) {
          return acc && v;
        } else if constexpr (std::is_integral_v<Acc>) {
          using U = std::make_unsigned_t<Acc>;
          return static_cast<Acc>(static_cast<U>(acc) * static_cast<U>(v));
        } else {
          return acc * v;
        }
      },
      [](auto acc, int64_t) { return acc; });
}

}  // namespace

Error prod_dim_out(KernelContext& ctx, std::span<EValue*> args) {
  return prod_impl(ctx, args[0]->to_tensor(), *args[1], args[2]->to_bool(), *args[3],
                   args[4]->to_tensor());
}

Error prod_out(KernelContext& ctx, std::span<EValue*> args) {
  return prod_impl(ctx, args[0]->to_tensor(), EValue(), false, *args[1], args[2]->to_tensor());
}

}  // namespace ember
