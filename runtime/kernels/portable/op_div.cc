// aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out)
// aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

namespace {
Error true_divide(KernelContext& ctx, const EValue& a, const EValue& b, Tensor& out) {
  return binary_op_out<kAcceptFloat>(ctx, a, b, nullptr, out,
                                     {"div", kAcceptAll, /*int_to_float=*/true},
                                     [](auto x, auto y) { return x / y; });
}
}  // namespace

Error div_out(KernelContext& ctx, std::span<EValue*> args) {
  return true_divide(ctx, *args[0], *args[1], args[2]->to_tensor());
}

Error div_mode_out(KernelContext& ctx, std::span<EValue*> args) {
  Tensor& out = args[3]->to_tensor();
  if (args[2]->is_none()) return true_divide(ctx, *args[0], *args[1], out);
  const std::string_view mode = args[2]->to_string();
  // ATen computes these modes in the 16-bit type itself, rounding after every step.
  const ScalarType common = result_type(
      {args[0]->tensor_ptr(), args[1]->tensor_ptr()},
      {args[0]->is_tensor() ? nullptr : args[0], args[1]->is_tensor() ? nullptr : args[1]});
  const auto round = [common](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float>) {
      if (common == ScalarType::Half) return static_cast<float>(Half(v));
      if (common == ScalarType::BFloat16) return static_cast<float>(BFloat16(v));
    }
    return v;
  };
  const ElementwiseSpec spec{"div", kAcceptInt | kAcceptFloating, false, false,
                             /*nonzero_int_divisor=*/true};
  if (mode == "trunc") {
    return binary_op_out(ctx, *args[0], *args[1], nullptr, out, spec, [=](auto x, auto y) {
      using T = decltype(x);
      if constexpr (std::is_integral_v<T>) {
        return trunc_divide(x, y);
      } else {
        return std::trunc(round(x / y));
      }
    });
  }
  if (mode == "floor") {
    return binary_op_out(ctx, *args[0], *args[1], nullptr, out, spec, [=](auto x, auto y) {
      using T = decltype(x);
      if constexpr (std::is_integral_v<T>) {
        return floor_divide(x, y);
      } else {
        return floor_divide_float(x, y, round);
      }
    });
  }
  return fail(Error::InvalidArgument,
              "div: rounding_mode must be None, 'trunc' or 'floor', got '%.*s'",
              static_cast<int>(mode.size()), mode.data());
}

}  // namespace ember
