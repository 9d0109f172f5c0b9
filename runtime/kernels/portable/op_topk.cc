// aten::topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *,
//     Tensor(a!) values, Tensor(b!) indices)
// The k largest (or smallest) along dim, NaN counting as the largest; always returned sorted
// (sorted=False leaves the order unspecified in ATen). Kept in the out slices by insertion, so no
// scratch memory is needed.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/sort_order.h"

namespace ember {

Error topk_values_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const int64_t k = args[1]->to_int();
  const bool largest = args[3]->to_bool();
  Tensor& values = args[5]->to_tensor();
  Tensor& indices = args[6]->to_tensor();
  // ATen (libtorch 1.13) has no bool topk.
  EMBER_CHECK(in.dtype() != ScalarType::Bool, Error::InvalidArgument,
              "topk: dtype bool is not supported");
  int64_t dim = 0;
  EMBER_TRY(wrap_dim("topk", args[2]->to_int(), in.dim(), &dim));
  const int d = static_cast<int>(dim);
  const int64_t len = in.dim() == 0 ? 1 : in.size(d);
  EMBER_CHECK(k >= 0 && k <= len, Error::InvalidArgument,
              "topk: selected index k out of range (k = %lld, size %lld)",
              static_cast<long long>(k), static_cast<long long>(len));
  EMBER_CHECK(values.dtype() == in.dtype() && indices.dtype() == ScalarType::Long &&
                  values.dim() == in.dim() && indices.dim() == in.dim(),
              Error::InvalidArgument, "topk: values must be like self, indices int64 of its rank");
  int32_t sizes[kMaxRank];
  for (int i = 0; i < in.dim(); ++i) sizes[i] = i == d ? static_cast<int32_t>(k) : in.size(i);
  EMBER_TRY(values.resize({sizes, static_cast<size_t>(in.dim())}));
  EMBER_TRY(indices.resize({sizes, static_cast<size_t>(in.dim())}));
  if (values.numel() == 0) return Error::Ok;
  const int64_t slices = in.numel() / len;
  const int64_t si = in.dim() == 0 ? 1 : in.stride(d), sv = in.dim() == 0 ? 1 : values.stride(d);
  const int64_t sx = in.dim() == 0 ? 1 : indices.stride(d);
  EMBER_SWITCH_ALL_TYPES(in.dtype(), T, (void)0, {
    for (int64_t s = 0; s < slices; ++s) {
      const SliceOrigin origin = slice_origin(in, values, indices, d, s);
      const SortOrder<T> order{in.data<T>() + origin.in, si, largest};
      int64_t* idx = indices.data<int64_t>() + origin.indices;
      int64_t count = 0;
      for (int64_t i = 0; i < len; ++i) {
        if (count == k && !order.before(i, idx[(k - 1) * sx])) continue;
        int64_t at = count < k ? count++ : k - 1;
        while (at > 0 && order.before(i, idx[(at - 1) * sx])) {
          idx[at * sx] = idx[(at - 1) * sx];
          --at;
        }
        idx[at * sx] = i;
      }
      T* v = values.data<T>() + origin.values;
      for (int64_t i = 0; i < k; ++i) v[i * sv] = order.values[idx[i * sx] * si];
    }
  });
  return Error::Ok;
}

}  // namespace ember
