#include "runtime/core/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ember {

bool is_valid_dim_order(std::span<const uint8_t> dim_order) {
  if (dim_order.size() > static_cast<size_t>(kMaxRank)) return false;
  uint32_t seen = 0;
  for (uint8_t d : dim_order) {
    if (d >= dim_order.size() || (seen & (1u << d)) != 0) return false;
    seen |= 1u << d;
  }
  return true;
}

Result<size_t> checked_nbytes(ScalarType type, std::span<const int32_t> sizes) {
  size_t n = element_size(type);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) {
      return fail(Error::InvalidArgument, "size %d of dim %zu is negative", sizes[i], i);
    }
    if (__builtin_mul_overflow(n, static_cast<size_t>(sizes[i]), &n)) {
      return fail(Error::InvalidArgument, "the byte size of a %s tensor of rank %zu overflows",
                  to_string(type), sizes.size());
    }
  }
  return n;
}

Result<Tensor> Tensor::make(ScalarType dtype, std::span<const int32_t> sizes,
                            std::span<const uint8_t> dim_order, void* data,
                            ShapeDynamism dynamism) {
  Tensor t;
  EMBER_TRY(make_at(&t, dtype, sizes, dim_order, data, dynamism));
  return t;
}

Error Tensor::make_at(Tensor* out, ScalarType dtype, std::span<const int32_t> sizes,
                      std::span<const uint8_t> dim_order, void* data, ShapeDynamism dynamism) {
  EMBER_CHECK(is_supported(dtype), Error::NotSupported, "dtype %s (code %d) is not supported",
              to_string(dtype), static_cast<int>(dtype));
  EMBER_CHECK(sizes.size() <= static_cast<size_t>(kMaxRank), Error::InvalidArgument,
              "rank %zu exceeds the maximum of %d", sizes.size(), kMaxRank);
  EMBER_CHECK(dim_order.empty() || dim_order.size() == sizes.size(), Error::InvalidArgument,
              "dim order has %zu entries for a tensor of rank %zu", dim_order.size(), sizes.size());
  EMBER_CHECK(is_valid_dim_order(dim_order), Error::InvalidArgument,
              "dim order is not a permutation of 0..%zu", sizes.size() - 1);
  Result<size_t> nbytes = checked_nbytes(dtype, sizes);
  if (!nbytes.ok()) return nbytes.error();

  // Field by field into *out (a zeroed temporary copied over it stalled on the copy); the unused
  // entries zeroed whole first, a fixed size (a variable one became a slow `rep stos`).
  Tensor& t = *out;
  std::fill_n(t.sizes_, kMaxRank, 0);
  std::fill_n(t.dim_order_, kMaxRank, uint8_t{0});
  std::fill_n(t.strides_, kMaxRank, int64_t{0});
  t.dtype_ = dtype;
  t.dynamism_ = dynamism;
  t.dim_ = static_cast<int8_t>(sizes.size());
  int64_t numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    t.sizes_[i] = sizes[i];
    t.dim_order_[i] = dim_order.empty() ? static_cast<uint8_t>(i) : dim_order[i];
    numel *= sizes[i];
  }
  t.numel_ = numel;
  t.capacity_bytes_ = *nbytes;
  t.data_ = data;
  t.compute_strides();
  return Error::Ok;
}

void Tensor::compute_strides() {
  int64_t stride = 1;
  for (int i = dim_ - 1; i >= 0; --i) {
    const int d = dim_order_[i];
    strides_[d] = stride;
    // The product of sizes fits int64 whenever the tensor has elements (its byte size was
    // checked); with a zero-size dim it may not, and such strides never address memory.
    if (__builtin_mul_overflow(stride, sizes_[d] > 1 ? int64_t{sizes_[d]} : int64_t{1}, &stride)) {
      stride = INT64_MAX;
    }
  }
}

Error Tensor::resize(std::span<const int32_t> new_sizes) {
  EMBER_CHECK(new_sizes.size() == static_cast<size_t>(dim_), Error::InvalidArgument,
              "cannot resize a tensor of rank %d to rank %zu", dim_, new_sizes.size());
  if (same_sizes(new_sizes, sizes())) {
    return Error::Ok;
  }
  if (dynamism_ == ShapeDynamism::Static) {
    int d = 0;
    while (new_sizes[d] == sizes_[d]) ++d;
    return fail(Error::NotSupported,
                "cannot resize a static tensor: dim %d is %d, the requested size is %d", d,
                sizes_[d], new_sizes[d]);
  }
  Result<size_t> nbytes = checked_nbytes(dtype_, new_sizes);
  if (!nbytes.ok()) return nbytes.error();
  EMBER_CHECK(*nbytes <= capacity_bytes_, Error::InvalidArgument,
              "new sizes need %zu bytes, above the upper bound of %zu bytes", *nbytes,
              capacity_bytes_);
  int64_t numel = 1;
  for (int i = 0; i < dim_; ++i) {
    sizes_[i] = new_sizes[i];
    numel *= new_sizes[i];
  }
  numel_ = numel;
  compute_strides();
  return Error::Ok;
}

}  // namespace ember
