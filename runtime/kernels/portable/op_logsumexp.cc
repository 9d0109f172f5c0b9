// aten::logsumexp.out(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!) out)
#include <cmath>

#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error logsumexp_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(is_floating(out.dtype()), Error::InvalidArgument,
              "logsumexp: expected a floating point out, got %s", to_string(out.dtype()));
  EMBER_CHECK(!is_floating(in.dtype()) || in.dtype() == out.dtype(), Error::InvalidArgument,
              "logsumexp: expected out to have dtype %s, got %s", to_string(in.dtype()),
              to_string(out.dtype()));
  uint32_t mask = 0;
  EMBER_TRY(reduction_mask(in, *args[1], "logsumexp", mask));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_reduction(in, mask, args[2]->to_bool(), "logsumexp", outs, plan));
  const LoadFn<double> load = load_fn<double>(in.dtype());
  const StoreFn<double> store = store_fn<double>(out.dtype());
  const void* pi = in.data();
  void* po = out.mutable_data();
  for_each_reduction(plan, ctx.threads, [&](const int64_t* o, const ReduceLine& line) {
    // Shift by the maximum unless it is infinite (then by 0), as ATen does.
    double max = -INFINITY;
    line.for_each([&](int64_t i, int64_t) {
      const double v = load(pi, i);
      if (!std::isnan(max) && (std::isnan(v) || v > max)) max = v;
    });
    const double shift = std::isinf(max) ? 0.0 : max;
    double sum = 0;
    line.for_each([&](int64_t i, int64_t) { sum += std::exp(load(pi, i) - shift); });
    store(po, o[0], std::log(sum) + shift);
  });
  return Error::Ok;
}

}  // namespace ember
