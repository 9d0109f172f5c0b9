// aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out)
// aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None,
// Tensor(a!) out) aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out) The out tensor's dtype
// decides; the value is cast to it as a C++ cast would (bool: != 0).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {
namespace {

void fill(Tensor& out, const EValue& value) {
  EMBER_SWITCH_ALL_TYPES(out.dtype(), T, (void)0, {
    const T v = scalar_to<T>(value);
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = v;
  });
}

}  // namespace

Error full_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const std::span<const int64_t> size = args[0]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  EMBER_CHECK(size.size() == static_cast<size_t>(out.dim()), Error::InvalidArgument,
              "full: size has %zu entries, out has rank %d", size.size(), out.dim());
  int32_t sizes[kMaxRank];
  for (size_t d = 0; d < size.size(); ++d) {
    EMBER_CHECK(size[d] >= 0 && size[d] < (int64_t{1} << 31), Error::InvalidArgument,
                "full: invalid size %lld", static_cast<long long>(size[d]));
    sizes[d] = static_cast<int32_t>(size[d]);
  }
  EMBER_TRY(out.resize({sizes, size.size()}));
  fill(out, *args[1]);
  return Error::Ok;
}

Error full_like_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(args[2]->is_none() || args[2]->to_int() == 0 || args[2]->to_int() == 1,
              Error::InvalidArgument, "full_like: only contiguous or preserve memory format");
  EMBER_CHECK(out.dim() == self.dim(), Error::InvalidArgument,
              "full_like: out has rank %d, expected %d", out.dim(), self.dim());
  EMBER_TRY(out.resize(self.sizes()));
  fill(out, *args[1]);
  return Error::Ok;
}

Error scalar_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  Tensor& out = args[1]->to_tensor();
  EMBER_CHECK(out.dim() == 0, Error::InvalidArgument, "scalar_tensor: out must be 0-d, has rank %d",
              out.dim());
  fill(out, *args[0]);
  return Error::Ok;
}

}  // namespace ember
