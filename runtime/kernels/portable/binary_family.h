// The element-wise families over several operands: one broadcasting, type-promoting loop for every
// op of the form out = op(a, b, ...) (add, div, eq, bitwise_and, clamp, ...), parameterised by a
// spec (which dtypes, how the compute type is chosen) and a functor over the compute type.
//
//   constexpr ElementwiseSpec kSpec{"atan2", kAcceptAll, /*int_to_float=*/true};
//   Error atan2_out(KernelContext& ctx, std::span<EValue*> args) {
//     return binary_op_out(ctx, *args[0], *args[1], nullptr, args[2]->to_tensor(), kSpec,
//                          [](auto x, auto y) { return std::atan2(x, y); });
//   }
//
// Operands are EValues that hold a Tensor or a Scalar, so one function serves an op's Tensor,
// Scalar and Scalar_Tensor overloads. Scalars join type promotion as Python numbers do.
#pragma once

#include <array>
#include <new>
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
  static T neg(T a) { return static_cast<T>(U(0) - static_cast<U>(a)); }
};

// out = op(x0, x1, ...) over the promoted dtype of the operands (Tensor or Scalar EValues; a None
// operand is skipped by promotion and reads as 0, for ops with optional operands). The functor
// takes N values of the compute type (float for the 16-bit floats; uint8 0/1 for bool) and, when
// `alpha` is given, the alpha value after them. Errors: InvalidArgument for shapes that do not
// broadcast, a dtype the op refuses, a result the out dtype cannot hold, an alpha of the wrong
// kind or an integer division by zero (PyTorch's rules); the resize error of `out`.
// `kCompute` lists the compute-type categories the functor is instantiated for.
template <size_t N, unsigned kCompute = kAcceptAll, typename Op>
Error elementwise_op_out(KernelContext& ctx, const std::array<const EValue*, N>& operands,
                         const EValue* alpha, Tensor& out, const ElementwiseSpec& spec, Op op);

// The two-operand case.
template <unsigned kCompute = kAcceptAll, typename Op>
Error binary_op_out(KernelContext& ctx, const EValue& a, const EValue& b, const EValue* alpha,
                    Tensor& out, const ElementwiseSpec& spec, Op op) {
  return elementwise_op_out<2, kCompute>(ctx, {&a, &b}, alpha, out, spec, op);
}

// The first version of the family (tensor operands, all dtypes), kept for its callers.
template <typename Op>
Error binary_out(const Tensor& a, const Tensor& b, const EValue* alpha, Tensor& out,
                 const char* op_name, Op op) {
  EValue ea = EValue::from_tensor(const_cast<Tensor*>(&a));
  EValue eb = EValue::from_tensor(const_cast<Tensor*>(&b));
  KernelContext ctx{nullptr, nullptr};
  return binary_op_out(ctx, ea, eb, alpha, out, ElementwiseSpec{op_name}, op);
}

// --- implementation

// op(x...) or, for a binary op that takes it, op(x0, x1, alpha).
template <size_t N, typename Op, typename T>
auto invoke_elementwise(const Op& op, const std::array<T, N>& x, T alpha) {
  if constexpr (N == 2 && std::is_invocable_v<Op, T, T, T>) {
    return op(x[0], x[1], alpha);
  } else if constexpr (N == 2) {
    return op(x[0], x[1]);
  } else {
    return op(x[0], x[1], x[2]);
  }
}

template <size_t N, unsigned kCompute, typename Op>
Error elementwise_op_out(KernelContext& ctx, const std::array<const EValue*, N>& operands,
                         const EValue* alpha, Tensor& out, const ElementwiseSpec& spec, Op op) {
  std::array<const Tensor*, N> tensors{};
  std::array<const EValue*, N> scalars{};
  std::array<const Tensor*, N> promoted{};
  size_t num_promoted = 0;
  // Scalars are read through 0-dim tensors of their own type (made only for scalar operands);
  // they join promotion as numbers.
  // (A union, not std::optional: gcc zeroes an optional's whole storage, 264 bytes each.)
  union Slot {
    Slot() {}
    ScalarTensor scalar;
  } wrapped[N];
  static_assert(std::is_trivially_destructible_v<ScalarTensor>);
  static_assert(N == 2 || N == 3, "elementwise_op_out takes two or three operands");
  bool one_dtype = true;  // every operand a tensor, all of one dtype
  for (size_t k = 0; k < N; ++k) {
    if (operands[k]->is_tensor()) {
      tensors[k] = &operands[k]->to_tensor();
      promoted[num_promoted++] = tensors[k];
      one_dtype = one_dtype && tensors[k]->dtype() == tensors[0]->dtype();
    } else {
      tensors[k] = &(new (&wrapped[k].scalar) ScalarTensor(*operands[k]))->tensor();
      if (!operands[k]->is_none()) scalars[k] = operands[k];
      one_dtype = false;
    }
  }
  // Tensors of one dtype promote to it, whatever their ranks.
  ScalarType common =
      one_dtype ? tensors[0]->dtype() : result_type({promoted.data(), num_promoted}, scalars);
  if (spec.int_to_float && !is_floating(common)) common = ScalarType::Float;
  EMBER_TRY(check_accepts(spec, common));
  const ScalarType result = spec.bool_result ? ScalarType::Bool : common;
  EMBER_CHECK(can_cast(result, out.dtype()), Error::InvalidArgument,
              "%s: result type %s cannot be cast to the out dtype %s", spec.name, to_string(result),
              to_string(out.dtype()));
  if (alpha != nullptr) EMBER_TRY(check_alpha(spec.name, common, *alpha));
  if (spec.nonzero_int_divisor && is_integral(common, true)) {
    EMBER_TRY(check_nonzero_divisor(spec.name, *operands[N - 1]));
  }
  EMBER_TRY(resize_to_broadcast(tensors, out));
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      common, CTYPE,
      status = fail(Error::NotSupported, "%s: dtype %s", spec.name, to_string(common)), {
        if constexpr ((category_of<CTYPE>() & kCompute) == 0) {
          status = fail(Error::InvalidArgument, "%s: not implemented for dtype %s", spec.name,
                        to_string(common));
        } else {
          using T = std::conditional_t<std::is_same_v<CTYPE, bool>, uint8_t, compute_type_t<CTYPE>>;
          using Raw = decltype(invoke_elementwise<N>(op, std::array<T, N>{}, T(1)));
          using R =
              std::conditional_t<std::is_same_v<CTYPE, bool> || std::is_same_v<Raw, bool>, bool, T>;
          using Out = std::conditional_t<std::is_same_v<CTYPE, bool>, bool, CTYPE>;
          const T alpha_v = alpha == nullptr ? T(1) : scalar_to<T>(*alpha);
          auto call = [&](const std::array<T, N>& x) -> R {
            return static_cast<R>(invoke_elementwise<N>(op, x, alpha_v));
          };
          bool same = out.dtype() == (spec.bool_result ? ScalarType::Bool : common) &&
                      std::is_same_v<T, CTYPE>;
          // Scalar operands (and None, read as 0) enter as one value converted to the common
          // dtype, what the general path below does element by element; tensors must have it.
          std::array<CTYPE, N> scalar_value{};
          for (size_t k = 0; k < N; ++k) {
            if (operands[k]->is_tensor()) {
              same = same && tensors[k]->dtype() == common;
            } else if (!operands[k]->is_none()) {
              scalar_value[k] = static_cast<CTYPE>(scalar_to<T>(*operands[k]));
            }
          }
          if (same && !spec.bool_result) {
            std::array<const CTYPE*, N> p{};
            for (size_t k = 0; k < N; ++k) {
              p[k] =
                  operands[k]->is_tensor() ? tensors[k]->template data<CTYPE>() : &scalar_value[k];
            }
            Out* po = out.data<Out>();
            for_each_broadcast_n<N>(tensors, out, ctx.threads, [&](const int64_t* in, int64_t o) {
              std::array<T, N> x;
              for (size_t k = 0; k < N; ++k) x[k] = static_cast<T>(p[k][in[k]]);
              po[o] = static_cast<Out>(call(x));
            });
          } else {
            std::array<LoadFn<T>, N> load{};
            std::array<const void*, N> p{};
            for (size_t k = 0; k < N; ++k) {
              load[k] = load_fn<T>(tensors[k]->dtype());
              p[k] = tensors[k]->data();
            }
            const StoreFn<R> store = store_fn<R>(out.dtype());
            void* po = out.mutable_data();
            for_each_broadcast_n<N>(tensors, out, ctx.threads, [&](const int64_t* in, int64_t o) {
              std::array<T, N> x;
              for (size_t k = 0; k < N; ++k) x[k] = load[k](p[k], in[k]);
              store(po, o, call(x));
            });
          }
        }
      });
  return status;
}

}  // namespace ember
