// aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"

namespace ember {

Error where_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& cond = args[0]->to_tensor();
  const Tensor& a = args[1]->to_tensor();
  const Tensor& b = args[2]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(cond.dtype() == ScalarType::Bool, Error::InvalidArgument,
              "where: expected condition to be a bool tensor, got %s", to_string(cond.dtype()));
  const ScalarType common = result_type({&a, &b});
  EMBER_CHECK(can_cast(common, out.dtype()), Error::InvalidArgument,
              "where: result type %s cannot be cast to the out dtype %s", to_string(common),
              to_string(out.dtype()));
  const Tensor* ins[] = {&cond, &a, &b};
  EMBER_TRY(resize_to_broadcast(ins, out));
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      common, CTYPE, status = fail(Error::NotSupported, "where: dtype %s", to_string(common)), {
        const bool* pc = cond.data<bool>();
        if (a.dtype() == common && b.dtype() == common && out.dtype() == common) {
          // One dtype (a masked attention score): typed reads and writes, no conversion calls.
          const CTYPE* ta = a.data<CTYPE>();
          const CTYPE* tb = b.data<CTYPE>();
          CTYPE* to = out.data<CTYPE>();
          for_each_broadcast_n<3>(
              {&cond, &a, &b}, out, ctx.threads,
              [&](const int64_t* in, int64_t o) { to[o] = pc[in[0]] ? ta[in[1]] : tb[in[2]]; });
          return Error::Ok;
        }
        const LoadFn<CTYPE> la = load_fn<CTYPE>(a.dtype());
        const LoadFn<CTYPE> lb = load_fn<CTYPE>(b.dtype());
        const StoreFn<CTYPE> so = store_fn<CTYPE>(out.dtype());
        const void* pa = a.data();
        const void* pb = b.data();
        void* po = out.mutable_data();
        for_each_broadcast_n<3>({&cond, &a, &b}, out, ctx.threads,
                                [&](const int64_t* in, int64_t o) {
                                  so(po, o, pc[in[0]] ? la(pa, in[1]) : lb(pb, in[2]));
                                });
      });
  return status;
}

}  // namespace ember
