// dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
//     int[]? dim_order=None, Tensor(a!) out)
// dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False,
//     int[]? dim_order=None, Tensor(a!) out)
// ExecuTorch's layout-changing copies: out (whose dim order the program fixed) gets self's values;
// a given dim_order must be out's. _to_dim_order_copy also converts the dtype.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {
namespace {

Error dim_order_copy(const char* op, std::span<EValue*> args, bool same_dtype) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(out.dim() == in.dim(), Error::InvalidArgument, "%s: out has rank %d, expected %d", op,
              out.dim(), in.dim());
  EMBER_CHECK(!same_dtype || out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: out has dtype %s, expected %s", op, to_string(out.dtype()),
              to_string(in.dtype()));
  if (args[2]->tag() == Tag::ListInt) {
    const std::span<const int64_t> order = args[2]->to_int_list();
    bool same = order.size() == static_cast<size_t>(out.dim());
    for (size_t i = 0; same && i < order.size(); ++i) same = order[i] == out.dim_order()[i];
    EMBER_CHECK(same, Error::InvalidArgument,
                "%s: dim_order does not match the out tensor's dim order", op);
  }
  EMBER_TRY(out.resize(in.sizes()));
  copy_tensor(in, out);
  return Error::Ok;
}

}  // namespace

Error to_dim_order_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return dim_order_copy("_to_dim_order_copy", args, false);
}

Error clone_dim_order_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return dim_order_copy("_clone_dim_order", args, true);
}

}  // namespace ember
