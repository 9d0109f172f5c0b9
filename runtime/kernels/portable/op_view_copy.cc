// aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out)
// The elements in row-major order under a new shape; one size may be -1 (inferred).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error view_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> size = args[1]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  EMBER_CHECK(size.size() == static_cast<size_t>(out.dim()), Error::InvalidArgument,
              "view_copy: size has %zu entries, out has rank %d", size.size(), out.dim());
  EMBER_CHECK(out.dtype() == in.dtype(), Error::InvalidArgument,
              "view_copy: out dtype %s, expected %s", to_string(out.dtype()),
              to_string(in.dtype()));
  int32_t sizes[kMaxRank];
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == -1) {
      EMBER_CHECK(infer < 0, Error::InvalidArgument,
                  "view_copy: only one dimension can be inferred");
      infer = static_cast<int>(d);
      continue;
    }
    EMBER_CHECK(size[d] >= 0 && size[d] < (int64_t{1} << 31), Error::InvalidArgument,
                "view_copy: invalid size %lld at dim %zu", static_cast<long long>(size[d]), d);
    known *= size[d];
    sizes[d] = static_cast<int32_t>(size[d]);
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && in.numel() % known == 0, Error::InvalidArgument,
                "view_copy: shape is invalid for input of size %lld",
                static_cast<long long>(in.numel()));
    sizes[infer] = static_cast<int32_t>(in.numel() / known);
    known *= sizes[infer];
  }
  EMBER_CHECK(known == in.numel(), Error::InvalidArgument,
              "view_copy: shape of %lld elements is invalid for input of size %lld",
              static_cast<long long>(known), static_cast<long long>(in.numel()));
  EMBER_TRY(out.resize({sizes, size.size()}));
  copy_tensor(in, out);
  return Error::Ok;
}

}  // namespace ember
