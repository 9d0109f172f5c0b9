// aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None,
//     SymInt step=1, *, Tensor(a!) out)
// aten::select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out)
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error slice_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument, "slice_copy: cannot slice a 0-d tensor");
  int64_t d = 0;
  EMBER_TRY(wrap_dim("slice_copy", args[1]->to_int(), in.dim(), &d));
  View v = View::of(in);
  EMBER_TRY(slice_dim("slice_copy", v, static_cast<int>(d), in.size(static_cast<int>(d)), *args[2],
                      *args[3], args[4]->to_int()));
  return copy_view_out("slice_copy", in, v, args[5]->to_tensor());
}

Error select_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument,
              "select_copy: select() cannot be applied to a 0-dim tensor");
  int64_t d = 0;
  EMBER_TRY(wrap_dim("select_copy", args[1]->to_int(), in.dim(), &d));
  const int64_t size = in.size(static_cast<int>(d));
  int64_t index = args[2]->to_int();
  EMBER_CHECK(index >= -size && index < size, Error::InvalidArgument,
              "select_copy: index %lld out of range for a dim of size %lld",
              static_cast<long long>(index), static_cast<long long>(size));
  if (index < 0) index += size;
  View v = View::of(in);
  v.offset += index * v.strides[d];
  v.erase(static_cast<int>(d));
  return copy_view_out("select_copy", in, v, args[3]->to_tensor());
}

}  // namespace ember
