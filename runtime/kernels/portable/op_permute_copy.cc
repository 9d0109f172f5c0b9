// aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out)
// aten::transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out)
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error permute_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> dims = args[1]->to_int_list();
  EMBER_CHECK(dims.size() == static_cast<size_t>(in.dim()), Error::InvalidArgument,
              "permute_copy: %zu dims for a tensor of rank %d", dims.size(), in.dim());
  const View src = View::of(in);
  View v = src;
  uint32_t seen = 0;
  for (int i = 0; i < in.dim(); ++i) {
    int64_t d = 0;
    EMBER_TRY(wrap_dim("permute_copy", dims[i], in.dim(), &d));
    EMBER_CHECK((seen & (1u << d)) == 0, Error::InvalidArgument, "permute_copy: repeated dim %lld",
                static_cast<long long>(d));
    seen |= 1u << d;
    v.sizes[i] = src.sizes[d];
    v.strides[i] = src.strides[d];
  }
  return copy_view_out("permute_copy", in, v, args[2]->to_tensor());
}

Error transpose_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  int64_t a = 0, b = 0;
  EMBER_TRY(wrap_dim("transpose_copy", args[1]->to_int(), in.dim(), &a));
  EMBER_TRY(wrap_dim("transpose_copy", args[2]->to_int(), in.dim(), &b));
  View v = View::of(in);
  if (in.dim() > 0) {
    std::swap(v.sizes[a], v.sizes[b]);
    std::swap(v.strides[a], v.strides[b]);
  }
  return copy_view_out("transpose_copy", in, v, args[3]->to_tensor());
}

}  // namespace ember
