// aten::nonzero.out(Tensor self, *, Tensor(a!) out)
// out is int64 [nnz, rank]: the indices of non-zero elements in row-major order. The out tensor
// must be dynamic unless its shape happens to match.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {

Error nonzero_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[1]->to_tensor();
  EMBER_CHECK(out.dtype() == ScalarType::Long && out.dim() == 2, Error::InvalidArgument,
              "nonzero: out must be a 2-D int64 tensor");
  int64_t nnz = 0;
  EMBER_SWITCH_ALL_TYPES(in.dtype(), T, (void)0, {
    const T* p = in.data<T>();
    for (int64_t i = 0; i < in.numel(); ++i) nnz += convert<double>(p[offset_of(in, i)]) != 0.0;
  });
  EMBER_CHECK(nnz < (int64_t{1} << 31), Error::InvalidArgument, "nonzero: too many elements");
  const int32_t sizes[2] = {static_cast<int32_t>(nnz), in.dim()};
  EMBER_TRY(out.resize(sizes));
  int64_t* po = out.data<int64_t>();
  int64_t row = 0, idx[kMaxRank] = {};
  EMBER_SWITCH_ALL_TYPES(in.dtype(), T, (void)0, {
    const T* p = in.data<T>();
    for (int64_t i = 0; i < in.numel(); ++i) {
      const T v = p[offset_of(in, i)];
      if (convert<double>(v) != 0.0) {
        for (int d = 0; d < in.dim(); ++d) po[row * out.stride(0) + d * out.stride(1)] = idx[d];
        ++row;
      }
      for (int d = in.dim() - 1; d >= 0; --d) {
        if (++idx[d] < in.size(d)) break;
        idx[d] = 0;
      }
    }
  });
  return Error::Ok;
}

}  // namespace ember
