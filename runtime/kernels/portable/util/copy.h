// Strided views and copies for the shape and data-movement kernels.
//
//   View v = View::of(in);            // sizes and strides of `in` (its dim order)
//   v.permute(dims);                  // or slice / select / expand ... by editing sizes and
//   strides EMBER_TRY(out.resize(v.int_sizes())); copy_view(in, v, out);            // out = the
//   elements `v` sees, in row-major order
//
// A View describes elements of a tensor's storage without owning it: up to 2 * kMaxRank dims
// (repeat needs a pair per dim), element strides that may be 0 (broadcast) or negative (flip),
// and an element offset. Copies convert between dtypes as C++ casts do (16-bit floats through
// float), so cat and dim-order conversion share them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"

namespace ember {

struct View {
  static constexpr int kMaxDims = 2 * kMaxRank;
  int dim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t offset = 0;

  static View of(const Tensor& t);
  int64_t numel() const;
  // The sizes as int32 (for Tensor::resize); valid until the view changes. Only for dim <= 16.
  std::span<const int32_t> int_sizes();
  // Removes dim d (select keeps the offset of the chosen index).
  void erase(int d);
  // Inserts a dim of `size` and `stride` before position d.
  void insert(int d, int64_t size, int64_t stride);

 private:
  int32_t int_sizes_[kMaxRank] = {};
};

// Copies the elements `view` sees in `src`'s storage, in row-major order of the view, into `dst`
// in row-major order of dst (which honours dst's dim order). Requires view.numel() == dst.numel().
// Converts from src.dtype() to dst.dtype().
void copy_view(const Tensor& src, const View& view, Tensor& dst);

// Copies between two views of equal numel: the elements `src_view` sees in `src`'s storage go, in
// row-major order, to the elements `dst_view` sees in `dst`'s storage.
void copy_view(const Tensor& src, const View& src_view, Tensor& dst, const View& dst_view);

// The usual ending of a view op: checks that `out` has the dtype of `in` and the view's rank,
// resizes it to the view's sizes and copies. `op` names the op in errors.
Error copy_view_out(const char* op, const Tensor& in, View& view, Tensor& out);

// The view of `src` broadcast to `sizes` (ATen's rules: dims aligned at the right, size-1 dims
// repeated with stride 0). InvalidArgument naming `op` when src does not broadcast to sizes.
Error broadcast_view(const char* op, const Tensor& src, std::span<const int32_t> sizes, View* view);

// Narrows dim d of `view` (of size `size`) to ATen's slice(d, start, end, step): null start/end
// mean the whole dim, negative ones count from the end, both are clamped to [0, size]. step must
// be positive (InvalidArgument naming `op`).
Error slice_dim(const char* op, View& view, int d, int64_t size, const EValue& start,
                const EValue& end, int64_t step);

// copy_view(src, View::of(src), dst): the same elements in row-major order, any dtypes and dim
// orders (also a reshape: only numel must agree).
void copy_tensor(const Tensor& src, Tensor& dst);

// The element offset of row-major index `linear` in `t` (honours the dim order).
int64_t offset_of(const Tensor& t, int64_t linear);

// Wraps a possibly negative dim into [0, rank); a 0-d tensor counts as rank 1 (ATen's rule).
// InvalidArgument naming `op` when out of range.
Error wrap_dim(const char* op, int64_t dim, int64_t rank, int64_t* wrapped);

// Reads element `linear` (row-major) of an integer index tensor (int32 or int64) as int64.
int64_t index_value(const Tensor& index, int64_t linear);

// Calls f(B{}) with B the unsigned integer type of `element_size` bytes (1, 2, 4, else 8): kernels
// that only move elements copy them as bits, one instantiation per width instead of per dtype.
template <typename F>
void with_element_bits(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

// True when t is an int32 or int64 tensor (what index arguments accept).
inline bool is_index_dtype(ScalarType t) { return t == ScalarType::Long || t == ScalarType::Int; }

}  // namespace ember
