// aten::sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values,
//     Tensor(b!) indices)
// aten::sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False,
//     Tensor(a!) values, Tensor(b!) indices)
// Always stable; NaN sorts as the largest value (util/sort_order.h). The permutation is sorted in
// place in `indices`, so no scratch memory is needed.
#include <algorithm>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/sort_order.h"

namespace ember {
namespace {

Error sort(const Tensor& in, int64_t dim_arg, bool descending, Tensor& values, Tensor& indices) {
  int64_t dim = 0;
  EMBER_TRY(wrap_dim("sort", dim_arg, in.dim(), &dim));
  EMBER_CHECK(values.dtype() == in.dtype() && indices.dtype() == ScalarType::Long &&
                  values.dim() == in.dim() && indices.dim() == in.dim(),
              Error::InvalidArgument, "sort: values must be like self, indices int64 of its rank");
  EMBER_TRY(values.resize(in.sizes()));
  EMBER_TRY(indices.resize(in.sizes()));
  if (in.numel() == 0) return Error::Ok;
  const int d = static_cast<int>(dim);
  const int64_t len = in.dim() == 0 ? 1 : in.size(d);
  const int64_t slices = in.numel() / len;
  const int64_t si = in.dim() == 0 ? 1 : in.stride(d), sv = in.dim() == 0 ? 1 : values.stride(d);
  const int64_t sx = in.dim() == 0 ? 1 : indices.stride(d);
  EMBER_SWITCH_ALL_TYPES(in.dtype(), T, (void)0, {
    for (int64_t s = 0; s < slices; ++s) {
      const SliceOrigin origin = slice_origin(in, values, indices, d, s);
      const SortOrder<T> order{in.data<T>() + origin.in, si, descending};
      int64_t* idx = indices.data<int64_t>() + origin.indices;
      for (int64_t i = 0; i < len; ++i) idx[i * sx] = i;
      std::sort(StridedIndexIterator(idx, sx), StridedIndexIterator(idx, sx) + len,
                [&](int64_t a, int64_t b) { return order.before(a, b); });
      T* v = values.data<T>() + origin.values;
      for (int64_t i = 0; i < len; ++i) v[i * sv] = order.values[idx[i * sx] * si];
    }
  });
  return Error::Ok;
}

}  // namespace

Error sort_values_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return sort(args[0]->to_tensor(), args[1]->to_int(), args[2]->to_bool(), args[3]->to_tensor(),
              args[4]->to_tensor());
}

Error sort_values_stable_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return sort(args[0]->to_tensor(), args[2]->to_int(), args[3]->to_bool(), args[4]->to_tensor(),
              args[5]->to_tensor());
}

}  // namespace ember
