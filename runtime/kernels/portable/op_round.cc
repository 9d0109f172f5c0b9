// aten::round.out(Tensor self, *, Tensor(a!) out)
// aten::round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out)
#include <cmath>

#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error round_out(KernelContext& ctx, std::span<EValue*> args) {
  // Half-way cases go to the even neighbour, like ATen (nearbyint in the default rounding mode).
  return unary_op_out(ctx, args, {"round", kAcceptInt | kAcceptFloating}, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::nearbyint(x);
    } else {
      return x;
    }
  });
}

Error round_decimals_out(KernelContext& ctx, std::span<EValue*> args) {
  const int64_t decimals = args[1]->to_int();
  const bool negative = decimals < 0;
  const double ten_pow = std::pow(10.0, static_cast<double>(negative ? -decimals : decimals));
  return unary_op_out<kAcceptFloat>(
      ctx, args[0]->to_tensor(), args[2]->to_tensor(), {"round", kAcceptFloating}, [=](auto x) {
        using T = decltype(x);
        if constexpr (std::is_floating_point_v<T>) {
          const T p = static_cast<T>(ten_pow);
          return negative ? std::nearbyint(x / p) * p : std::nearbyint(x * p) / p;
        } else {
          return x;
        }
      });
}

}  // namespace ember
