// The unary element-wise family: one loop for every op of the form out = op(x) (exp, abs, relu,
// isnan, ...), parameterised by a spec (accepted dtypes, integer-to-float promotion, bool result)
// and a functor over the compute type.
//
//   Error exp_out(KernelContext& ctx, std::span<EValue*> args) {
//     return unary_op_out(ctx, args[0]->to_tensor(), args[1]->to_tensor(),
//                         {"exp", kAcceptAll, /*int_to_float=*/true},
//                         [](auto x) { return std::exp(x); });
//   }
//
// The compute type is the input dtype (float for the 16-bit floats, uint8 0/1 for bool), or float32
// for integer inputs of an int_to_float op. The out tensor takes the input's shape and may have any
// dtype the result can be cast to, and any dim order.
#pragma once

#include <type_traits>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/promotion.h"

namespace ember {

// out = op(in). Errors: InvalidArgument for a dtype the op refuses or a result the out dtype cannot
// hold; the resize error of `out`. `kCompute` lists the compute-type categories the functor is
// instantiated for (a float-only functor need not compile for integers).
template <unsigned kCompute = kAcceptAll, typename Op>
Error unary_op_out(KernelContext& ctx, const Tensor& in, Tensor& out, const ElementwiseSpec& spec,
                   Op op) {
  EMBER_TRY(check_accepts(spec, in.dtype()));
  const ScalarType compute =
      spec.int_to_float && !is_floating(in.dtype()) ? ScalarType::Float : in.dtype();
  const ScalarType result = spec.bool_result ? ScalarType::Bool : compute;
  EMBER_CHECK(can_cast(result, out.dtype()), Error::InvalidArgument,
              "%s: result type %s cannot be cast to the out dtype %s", spec.name, to_string(result),
              to_string(out.dtype()));
  EMBER_CHECK(out.dim() == in.dim(), Error::InvalidArgument,
              "%s: out has rank %d, the input rank %d", spec.name, out.dim(), in.dim());
  EMBER_TRY(out.resize(in.sizes()));
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      compute, CTYPE,
      status = fail(Error::NotSupported, "%s: dtype %s", spec.name, to_string(compute)), {
        if constexpr ((category_of<CTYPE>() & kCompute) == 0) {
          status = fail(Error::InvalidArgument, "%s: not implemented for dtype %s", spec.name,
                        to_string(compute));
        } else {
          using T = std::conditional_t<std::is_same_v<CTYPE, bool>, uint8_t, compute_type_t<CTYPE>>;
          using Raw = decltype(op(T{}));
          using R =
              std::conditional_t<std::is_same_v<CTYPE, bool> || std::is_same_v<Raw, bool>, bool, T>;
          if (in.dtype() == compute && out.dtype() == result && std::is_same_v<T, CTYPE> &&
              std::is_same_v<R, T>) {
            const CTYPE* pi = in.data<CTYPE>();
            CTYPE* po = out.data<CTYPE>();
            for_each_broadcast_n<1>({&in}, out, ctx.threads, [&](const int64_t* i, int64_t o) {
              po[o] = static_cast<CTYPE>(op(static_cast<T>(pi[i[0]])));
            });
          } else {
            const LoadFn<T> load = load_fn<T>(in.dtype());
            const StoreFn<R> store = store_fn<R>(out.dtype());
            const void* pi = in.data();
            void* po = out.mutable_data();
            for_each_broadcast_n<1>({&in}, out, ctx.threads, [&](const int64_t* i, int64_t o) {
              store(po, o, static_cast<R>(op(load(pi, i[0]))));
            });
          }
        }
      });
  return status;
}

// The common case of ops whose arguments are (self, out, out).
template <unsigned kCompute = kAcceptAll, typename Op>
Error unary_op_out(KernelContext& ctx, std::span<EValue*> args, const ElementwiseSpec& spec,
                   Op op) {
  return unary_op_out<kCompute>(ctx, args[0]->to_tensor(), args[1]->to_tensor(), spec, op);
}

// Reads a Scalar argument (Int, Double, Bool) as double, for activation parameters.
inline double scalar_arg(const EValue& v) { return v.scalar_as_double(); }

}  // namespace ember
