// The element order of sort and topk: ATen's, where NaN is larger than every number, and equal
// values keep their original order (index ascending), so results are deterministic.
//
//   const SortOrder<float> order{values, stride, descending};
//   std::sort(first, last, [&](int64_t a, int64_t b) { return order.before(a, b); });
#pragma once

#include <cmath>
#include <cstdint>
#include <iterator>

#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {

template <typename T>
struct SortOrder {
  const T* values;  // the slice being ordered
  int64_t stride;   // element stride of the slice
  bool descending;

  static bool less(compute_type_t<T> a, compute_type_t<T> b) {
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
    }
    return a < b;
  }
  // True when position a comes before position b.
  bool before(int64_t a, int64_t b) const {
    const auto va = static_cast<compute_type_t<T>>(values[a * stride]);
    const auto vb = static_cast<compute_type_t<T>>(values[b * stride]);
    if (descending ? less(vb, va) : less(va, vb)) return true;
    if (descending ? less(va, vb) : less(vb, va)) return false;
    return a < b;
  }
};

// The element offsets, in `in` and in the values and indices outs of sort or topk, of the first
// element of slice `s` along `dim`: row-major position s over the other dims (whose sizes the
// three tensors share).
struct SliceOrigin {
  int64_t in = 0, values = 0, indices = 0;
};
inline SliceOrigin slice_origin(const Tensor& in, const Tensor& values, const Tensor& indices,
                                int dim, int64_t s) {
  SliceOrigin o;
  for (int k = in.dim() - 1; k >= 0; --k) {
    if (k == dim) continue;
    const int64_t c = s % in.size(k);
    s /= in.size(k);
    o.in += c * in.stride(k);
    o.values += c * values.stride(k);
    o.indices += c * indices.stride(k);
  }
  return o;
}

// A random-access iterator over int64 values `stride` elements apart (a slice of an index tensor
// along one dim), so std::sort can order the slice in place.
class StridedIndexIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = int64_t;
  using difference_type = std::ptrdiff_t;
  using pointer = int64_t*;
  using reference = int64_t&;

  StridedIndexIterator() = default;
  StridedIndexIterator(int64_t* p, int64_t stride) : p_(p), stride_(stride) {}
  reference operator*() const { return *p_; }
  reference operator[](difference_type n) const { return p_[n * stride_]; }
  StridedIndexIterator& operator++() { return *this += 1; }
  StridedIndexIterator operator++(int) {
    StridedIndexIterator t = *this;
    ++*this;
    return t;
  }
  StridedIndexIterator& operator--() { return *this -= 1; }
  StridedIndexIterator operator--(int) {
    StridedIndexIterator t = *this;
    --*this;
    return t;
  }
  StridedIndexIterator& operator+=(difference_type n) {
    p_ += n * stride_;
    return *this;
  }
  StridedIndexIterator& operator-=(difference_type n) { return *this += -n; }
  friend StridedIndexIterator operator+(StridedIndexIterator it, difference_type n) {
    return it += n;
  }
  friend StridedIndexIterator operator+(difference_type n, StridedIndexIterator it) {
    return it += n;
  }
  friend StridedIndexIterator operator-(StridedIndexIterator it, difference_type n) {
    return it -= n;
  }
  friend difference_type operator-(const StridedIndexIterator& a, const StridedIndexIterator& b) {
    return (a.p_ - b.p_) / a.stride_;
  }
  friend auto operator<=>(const StridedIndexIterator& a, const StridedIndexIterator& b) {
    return a.p_ <=> b.p_;
  }
  friend bool operator==(const StridedIndexIterator& a, const StridedIndexIterator& b) {
    return a.p_ == b.p_;
  }

 private:
  int64_t* p_ = nullptr;
  int64_t stride_ = 1;
};

}  // namespace ember
