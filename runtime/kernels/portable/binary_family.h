// The binary element-wise family: one broadcasting, type-promoting loop for every op of the form
// out = op(a, b) (add, sub, mul, ...), parameterised by a functor over the compute type.
//
//   Error add_out(KernelContext& ctx, std::span<EValue*> args) {
//     return binary_out(args[0]->to_tensor(), args[1]->to_tensor(), args[2], args[3]->to_tensor(),
//                       "add", [](auto x, auto y, auto alpha) { return x + alpha * y; });
//   }
#pragma once

#include <type_traits>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/promotion.h"

namespace ember {

// Integer arithmetic in ATen wraps around; in C++ signed overflow is undefined, so integer ops
// compute through the unsigned type of the same width.
template <typename T>
struct Wrapping {
  using U = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                               std::make_unsigned_t<T>, T>;
  static T add(T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); }
  static T sub(T a, T b) { return static_cast<T>(static_cast<U>(a) - static_cast<U>(b)); }
  static T mul(T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); }
};

// out = op(a, b, alpha) over the promoted dtype of a and b. `alpha` may be null (no alpha).
// Errors: InvalidArgument for shapes that do not broadcast, an out dtype the result cannot be cast
// to, or an alpha of the wrong kind (PyTorch's rules); the resize error of `out`.
template <typename Op>
Error binary_out(const Tensor& a, const Tensor& b, const EValue* alpha, Tensor& out,
                 const char* op_name, Op op) {
  const ScalarType common = result_type({&a, &b});
  EMBER_CHECK(can_cast(common, out.dtype()), Error::InvalidArgument,
              "%s: result type %s cannot be cast to the out dtype %s", op_name, to_string(common),
              to_string(out.dtype()));
  if (alpha != nullptr) {
    EMBER_CHECK(common != ScalarType::Bool || alpha->is_bool() ||
                    (alpha->is_int() && (alpha->to_int() == 0 || alpha->to_int() == 1)),
                Error::InvalidArgument, "%s: boolean alpha only for boolean tensors", op_name);
    EMBER_CHECK(is_floating(common) || !alpha->is_double(), Error::InvalidArgument,
                "%s: for integral input tensors, alpha must not be a floating point number",
                op_name);
  }
  EMBER_TRY(resize_to_broadcast(a, b, out));
  Error result = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      common, CTYPE, result = fail(Error::NotSupported, "%s: dtype %s", op_name, to_string(common)),
      {
        using T = std::conditional_t<std::is_same_v<CTYPE, bool>, uint8_t, compute_type_t<CTYPE>>;
        const T alpha_v = alpha == nullptr ? T(1) : scalar_to<T>(*alpha);
        if (a.dtype() == common && b.dtype() == common && out.dtype() == common &&
            std::is_same_v<T, CTYPE>) {
          const auto* pa = a.data<CTYPE>();
          const auto* pb = b.data<CTYPE>();
          auto* po = out.data<CTYPE>();
          for_each_broadcast(a, b, out, [&](int64_t ia, int64_t ib, int64_t io) {
            po[io] =
                static_cast<CTYPE>(op(static_cast<T>(pa[ia]), static_cast<T>(pb[ib]), alpha_v));
          });
        } else {
          const LoadFn<T> la = load_fn<T>(a.dtype());
          const LoadFn<T> lb = load_fn<T>(b.dtype());
          const StoreFn<T> so = store_fn<T>(out.dtype());
          const bool to_bool = common == ScalarType::Bool;
          const void* pa = a.data();
          const void* pb = b.data();
          void* po = out.mutable_data();
          for_each_broadcast(a, b, out, [&](int64_t ia, int64_t ib, int64_t io) {
            T v = op(la(pa, ia), lb(pb, ib), alpha_v);
            if (to_bool) v = v != T(0);
            so(po, io, v);
          });
        }
      });
  return result;
}

}  // namespace ember
