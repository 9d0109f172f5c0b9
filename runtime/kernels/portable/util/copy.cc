#include "runtime/kernels/portable/util/copy.h"

#include <cstring>

#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {
namespace {

// Walks a row-major index over `sizes`, keeping the element offset under `strides`.
struct Walker {
  int dim;
  const int64_t* sizes;
  const int64_t* strides;
  int64_t offset;
  int64_t index[View::kMaxDims] = {};
  void next() {
    for (int d = dim - 1; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < sizes[d]) return;
      offset -= strides[d] * sizes[d];
      index[d] = 0;
    }
  }
};

bool row_major(const View& v) {
  int64_t expected = 1;
  for (int d = v.dim - 1; d >= 0; --d) {
    if (v.sizes[d] != 1 && v.strides[d] != expected) return false;
    expected *= v.sizes[d];
  }
  return true;
}

// `v` with its size-1 dims dropped and every dim merged into the one before it where the two are
// adjacent in storage: the same elements in the same order, in as few dims as possible.
View coalesced(const View& v) {
  View c;
  c.offset = v.offset;
  for (int d = 0; d < v.dim; ++d) {
    if (v.sizes[d] == 1) continue;
    if (c.dim > 0 && c.strides[c.dim - 1] == v.strides[d] * v.sizes[d]) {
      c.sizes[c.dim - 1] *= v.sizes[d];
      c.strides[c.dim - 1] = v.strides[d];
    } else {
      c.sizes[c.dim] = v.sizes[d];
      c.strides[c.dim] = v.strides[d];
      ++c.dim;
    }
  }
  return c;
}

template <typename Src, typename Dst>
void copy_typed(const Src* src, const View& view, Dst* dst, const View& dview) {
  const int64_t n = view.numel();
  if (n == 0) return;
  if constexpr (std::is_same_v<Src, Dst>) {
    if (row_major(view) && row_major(dview)) {
      // memmove: a crafted program can plan a kernel's input and output over overlapping memory
      // (found by fuzzing view_copy); the result is then meaningless, but defined.
      std::memmove(dst + dview.offset, src + view.offset, static_cast<size_t>(n) * sizeof(Src));
      return;
    }
  }
  if (row_major(dview)) {
    Dst* d = dst + dview.offset;
    const View c = coalesced(view);
    // Runs contiguous in the source (a transpose or slice that keeps the last dim whole): copied
    // run by run, walking only the dims above.
    if (c.dim > 0 && c.strides[c.dim - 1] == 1) {
      const int64_t run = c.sizes[c.dim - 1];
      Walker s{c.dim - 1, c.sizes, c.strides, c.offset};
      for (int64_t i = 0; i < n; i += run, s.next()) {
        const Src* from = src + s.offset;
        if constexpr (std::is_same_v<Src, Dst>) {
          std::memmove(d + i, from, static_cast<size_t>(run) * sizeof(Src));
        } else {
          for (int64_t k = 0; k < run; ++k) d[i + k] = convert<Dst>(from[k]);
        }
      }
      return;
    }
    Walker s{c.dim, c.sizes, c.strides, c.offset};
    for (int64_t i = 0; i < n; ++i, s.next()) d[i] = convert<Dst>(src[s.offset]);
    return;
  }
  Walker s{view.dim, view.sizes, view.strides, view.offset};
  Walker w{dview.dim, dview.sizes, dview.strides, dview.offset};
  for (int64_t i = 0; i < n; ++i, s.next(), w.next()) dst[w.offset] = convert<Dst>(src[s.offset]);
}

// Same-dtype copies move bytes, so they only depend on the element size.
template <typename Bits>
void copy_bits(const Tensor& src, const View& view, Tensor& dst, const View& dview) {
  copy_typed(static_cast<const Bits*>(src.data()), view, static_cast<Bits*>(dst.mutable_data()),
             dview);
}

}  // namespace

View View::of(const Tensor& t) {
  View v;
  v.dim = t.dim();
  for (int d = 0; d < t.dim(); ++d) {
    v.sizes[d] = t.size(d);
    v.strides[d] = t.stride(d);
  }
  return v;
}

int64_t View::numel() const {
  int64_t n = 1;
  for (int d = 0; d < dim; ++d) n *= sizes[d];
  return n;
}

std::span<const int32_t> View::int_sizes() {
  for (int d = 0; d < dim && d < kMaxRank; ++d) int_sizes_[d] = static_cast<int32_t>(sizes[d]);
  return {int_sizes_, static_cast<size_t>(dim < kMaxRank ? dim : kMaxRank)};
}

void View::erase(int d) {
  for (int i = d; i + 1 < dim; ++i) {
    sizes[i] = sizes[i + 1];
    strides[i] = strides[i + 1];
  }
  --dim;
}

void View::insert(int d, int64_t size, int64_t stride) {
  for (int i = dim; i > d; --i) {
    sizes[i] = sizes[i - 1];
    strides[i] = strides[i - 1];
  }
  sizes[d] = size;
  strides[d] = stride;
  ++dim;
}

void copy_view(const Tensor& src, const View& view, Tensor& dst) {
  copy_view(src, view, dst, View::of(dst));
}

Error copy_view_out(const char* op, const Tensor& in, View& view, Tensor& out) {
  EMBER_CHECK(out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: out has dtype %s, expected %s", op, to_string(out.dtype()),
              to_string(in.dtype()));
  EMBER_CHECK(out.dim() == view.dim, Error::InvalidArgument, "%s: out has rank %d, expected %d", op,
              out.dim(), view.dim);
  EMBER_TRY(out.resize(view.int_sizes()));
  copy_view(in, view, out);
  return Error::Ok;
}

void copy_view(const Tensor& src, const View& view, Tensor& dst, const View& dview) {
  if (src.dtype() == dst.dtype()) {
    return with_element_bits(src.element_size(),
                             [&](auto bits) { copy_bits<decltype(bits)>(src, view, dst, dview); });
  }
  EMBER_SWITCH_ALL_TYPES(src.dtype(), Src, (void)0, {
    EMBER_SWITCH_ALL_TYPES(dst.dtype(), Dst, (void)0,
                           { copy_typed(src.data<Src>(), view, dst.data<Dst>(), dview); });
  });
}

void copy_tensor(const Tensor& src, Tensor& dst) { copy_view(src, View::of(src), dst); }

Error broadcast_view(const char* op, const Tensor& src, std::span<const int32_t> sizes,
                     View* view) {
  const int rank = static_cast<int>(sizes.size());
  EMBER_CHECK(src.dim() <= rank, Error::InvalidArgument,
              "%s: a tensor of rank %d does not broadcast to rank %d", op, src.dim(), rank);
  View v = View::of(src);
  while (v.dim < rank) v.insert(0, 1, 0);
  for (int d = 0; d < rank; ++d) {
    EMBER_CHECK(v.sizes[d] == sizes[d] || v.sizes[d] == 1, Error::InvalidArgument,
                "%s: size %lld at dim %d does not broadcast to %d", op,
                static_cast<long long>(v.sizes[d]), d, sizes[d]);
    if (v.sizes[d] != sizes[d]) v.strides[d] = 0;
    v.sizes[d] = sizes[d];
  }
  *view = v;
  return Error::Ok;
}

Error slice_dim(const char* op, View& view, int d, int64_t size, const EValue& start_arg,
                const EValue& end_arg, int64_t step) {
  EMBER_CHECK(step > 0, Error::InvalidArgument, "%s: slice step must be positive", op);
  int64_t start = start_arg.is_none() ? 0 : start_arg.to_int();
  int64_t end = end_arg.is_none() ? size : end_arg.to_int();
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = start < 0 ? 0 : start > size ? size : start;
  end = end < start ? start : end > size ? size : end;
  view.offset += start * view.strides[d];
  view.sizes[d] = (end - start + step - 1) / step;
  view.strides[d] *= step;
  return Error::Ok;
}

int64_t offset_of(const Tensor& t, int64_t linear) {
  if (t.is_contiguous()) return linear;
  int64_t offset = 0;
  for (int d = t.dim() - 1; d >= 0; --d) {
    offset += (linear % t.size(d)) * t.stride(d);
    linear /= t.size(d);
  }
  return offset;
}

Error wrap_dim(const char* op, int64_t dim, int64_t rank, int64_t* wrapped) {
  const int64_t r = rank == 0 ? 1 : rank;
  EMBER_CHECK(dim >= -r && dim < r, Error::InvalidArgument,
              "%s: dim %lld is out of range for a tensor of rank %lld", op,
              static_cast<long long>(dim), static_cast<long long>(rank));
  *wrapped = dim < 0 ? dim + r : dim;
  return Error::Ok;
}

int64_t index_value(const Tensor& index, int64_t linear) {
  const int64_t o = offset_of(index, linear);
  return index.dtype() == ScalarType::Long ? index.data<int64_t>()[o] : index.data<int32_t>()[o];
}

}  // namespace ember
