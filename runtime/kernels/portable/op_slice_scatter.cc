// aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None,
//     SymInt? end=None, SymInt step=1, *, Tensor(a!) out)
// out = self, with self.slice(dim, start, end, step) replaced by src (whose shape must be the
// slice's). Ember's compiler lowers slice_scatter itself; this runs programs ExecuTorch wrote.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error slice_scatter_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "slice_scatter";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& src = args[1]->to_tensor();
  Tensor& out = args[6]->to_tensor();
  EMBER_CHECK(self.dim() > 0, Error::InvalidArgument, "%s: cannot slice a 0-d tensor", op);
  EMBER_CHECK(src.dtype() == self.dtype() && out.dtype() == self.dtype(), Error::InvalidArgument,
              "%s: expected self, src and out of one dtype, got %s, %s, %s", op,
              to_string(self.dtype()), to_string(src.dtype()), to_string(out.dtype()));
  int64_t d = 0;
  EMBER_TRY(wrap_dim(op, args[2]->to_int(), self.dim(), &d));
  EMBER_TRY(out.resize(self.sizes()));
  View slice = View::of(out);
  EMBER_TRY(slice_dim(op, slice, static_cast<int>(d), self.size(static_cast<int>(d)), *args[3],
                      *args[4], args[5]->to_int()));
  EMBER_CHECK(src.dim() == self.dim(), Error::InvalidArgument, "%s: src has rank %d, self %d", op,
              src.dim(), self.dim());
  for (int i = 0; i < src.dim(); ++i) {
    EMBER_CHECK(src.size(i) == slice.sizes[i], Error::InvalidArgument,
                "%s: src has size %d at dim %d, the slice %lld", op, src.size(i), i,
                static_cast<long long>(slice.sizes[i]));
  }
  EMBER_CHECK(out.data() != src.data() || src.numel() == 0, Error::InvalidArgument,
              "%s: out and src share storage", op);
  if (out.data() != self.data()) copy_tensor(self, out);
  copy_view(src, View::of(src), out, slice);
  return Error::Ok;
}

}  // namespace ember
