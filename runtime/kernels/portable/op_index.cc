// aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out)
// aten::index_put.out(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False, *,
//     Tensor(a!) out)
// Advanced indexing with integer and boolean-mask indices (contract C27, util/advanced_index.h).
// index_put copies self to out (unless out is self's storage: then it writes in place), then
// writes values (broadcast to the indexing result's shape) at the indexed places; accumulate sums
// duplicates, otherwise the last write wins.
#include <cstring>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/advanced_index.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {
namespace {

int64_t offset_in(const Tensor& t, const int64_t* coords) {
  int64_t o = 0;
  for (int d = 0; d < t.dim(); ++d) o += coords[d] * t.stride(d);
  return o;
}

}  // namespace

Error index_tensor_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  AdvancedIndex ix;
  EMBER_TRY(AdvancedIndex::parse("index", self, args[1]->to_optional_tensor_list(), &ix));
  EMBER_CHECK(out.dtype() == self.dtype(), Error::InvalidArgument,
              "index: out has dtype %s, expected %s", to_string(out.dtype()),
              to_string(self.dtype()));
  EMBER_CHECK(out.dim() == static_cast<int>(ix.result_sizes().size()), Error::InvalidArgument,
              "index: out has rank %d, the result has rank %zu", out.dim(),
              ix.result_sizes().size());
  EMBER_TRY(out.resize(ix.result_sizes()));
  const size_t es = self.element_size();
  const auto* ps = static_cast<const uint8_t*>(self.data());
  auto* po = static_cast<uint8_t*>(out.mutable_data());
  ix.for_each([&](const int64_t* coords, int64_t i) {
    std::memcpy(po + offset_of(out, i) * static_cast<int64_t>(es),
                ps + offset_in(self, coords) * static_cast<int64_t>(es), es);
  });
  return Error::Ok;
}

Error index_put_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& self = args[0]->to_tensor();
  const Tensor& values = args[2]->to_tensor();
  const bool accumulate = args[3]->to_bool();
  Tensor& out = args[4]->to_tensor();
  AdvancedIndex ix;
  EMBER_TRY(AdvancedIndex::parse("index_put", self, args[1]->to_optional_tensor_list(), &ix));
  EMBER_CHECK(values.dtype() == self.dtype() && out.dtype() == self.dtype(), Error::InvalidArgument,
              "index_put: Index put requires the source and destination dtypes match, got %s "
              "for the destination and %s for the source",
              to_string(self.dtype()), to_string(values.dtype()));
  const std::span<const int32_t> rs = ix.result_sizes();
  const int r = static_cast<int>(rs.size());
  // values broadcast to the result's shape (right-aligned, size-1 dims repeat).
  int64_t vstride[kMaxRank] = {};
  bool fits = values.dim() <= r;
  for (int d = 0; fits && d < values.dim(); ++d) {
    const int rd = r - values.dim() + d;
    fits = values.size(d) == rs[rd] || values.size(d) == 1;
    vstride[rd] = values.size(d) == 1 ? 0 : values.stride(d);
  }
  EMBER_CHECK(fits, Error::InvalidArgument,
              "index_put: shape mismatch: value tensor of rank %d cannot be broadcast to the "
              "indexing result of rank %d",
              values.dim(), r);
  EMBER_CHECK(out.dim() == self.dim(), Error::InvalidArgument,
              "index_put: out has rank %d, expected %d", out.dim(), self.dim());
  EMBER_TRY(out.resize(self.sizes()));
  // out may be self's own storage (the compiler writes state such as a KV cache in place).
  if (out.data() != self.data()) copy_tensor(self, out);
  // The element of values that result element i reads.
  auto value_offset = [&](int64_t i) {
    int64_t vo = 0;
    for (int d = r - 1; d >= 0; --d) {
      vo += (i % rs[d]) * vstride[d];
      i /= rs[d];
    }
    return vo;
  };
  const int row_dim = ix.last_self_dim();
  EMBER_SWITCH_ALL_TYPES(self.dtype(), T, (void)0, {
    const T* pv = values.data<T>();
    T* po = out.data<T>();
    auto put = [&](T& dst, const T& v) {
      if (accumulate) {
        dst = convert<T>(convert<compute_type_t<T>>(dst) + convert<compute_type_t<T>>(v));
      } else {
        dst = v;
      }
    };
    if (row_dim >= 0) {
      // A row at a time (a KV cache write: whole rows at indexed positions).
      const int64_t os = out.stride(row_dim), vs = vstride[r - 1];
      ix.for_each_row([&](const int64_t* coords, int64_t i, int64_t len) {
        T* dst = po + offset_in(out, coords);
        const T* src = pv + value_offset(i);
        if (!accumulate && os == 1 && vs == 1) {
          std::memcpy(dst, src, static_cast<size_t>(len) * sizeof(T));
          return;
        }
        for (int64_t k = 0; k < len; ++k) put(dst[k * os], src[k * vs]);
      });
    } else {
      ix.for_each([&](const int64_t* coords, int64_t i) {
        put(po[offset_in(out, coords)], pv[value_offset(i)]);
      });
    }
  });
  return Error::Ok;
}

}  // namespace ember
