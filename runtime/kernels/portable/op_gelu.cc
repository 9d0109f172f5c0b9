// aten::gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out)
#include <cmath>
#include <string_view>

#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error gelu_out(KernelContext& ctx, std::span<EValue*> args) {
  const std::string_view approximate = args[1]->to_string();
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  if (approximate == "none") {
    return unary_op_out<kAcceptFloat>(ctx, in, out, {"gelu", kAcceptFloating}, [](auto x) {
      using T = decltype(x);
      return T(0.5) * x * (T(1) + std::erf(x * static_cast<T>(M_SQRT1_2)));
    });
  }
  if (approximate == "tanh") {
    return unary_op_out<kAcceptFloat>(ctx, in, out, {"gelu", kAcceptFloating}, [](auto x) {
      using T = decltype(x);
      const T k = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    });
  }
  return fail(Error::InvalidArgument, "gelu: approximate must be 'none' or 'tanh', got '%.*s'",
              static_cast<int>(approximate.size()), approximate.data());
}

}  // namespace ember
