// Tensor: the runtime's view of an n-dimensional array whose storage someone else owns.
//
//   int32_t sizes[] = {2, 3};
//   Result<Tensor> t = Tensor::make(ScalarType::Float, sizes, {}, buffer);  // contiguous
//   float* p = t->data<float>();
//
// A Tensor holds its metadata inline (rank <= 16), so it is self-contained and copyable; it never
// owns its data. Strides are derived from sizes and dim order (outermost first) the way ExecuTorch
// derives them. numel and byte sizes are computed with overflow checks when the tensor is made;
// `capacity_bytes` is the size the storage was planned for (the upper bound of a dynamic tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"

namespace ember {

inline constexpr int kMaxRank = 16;

enum class ShapeDynamism : uint8_t {
  Static = 0,        // sizes never change
  DynamicBound = 1,  // sizes may shrink below the serialized upper bound
  DynamicUnbound = 2,
};

// Checks that `dim_order` is a permutation of 0..rank-1.
bool is_valid_dim_order(std::span<const uint8_t> dim_order);

// Whether two shapes are equal (a loop: ranks are small, and a memcmp call costs more).
inline bool same_sizes(std::span<const int32_t> a, std::span<const int32_t> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// numel of `sizes` and numel * element_size(type), or InvalidArgument on overflow or a negative
// size.
Result<size_t> checked_nbytes(ScalarType type, std::span<const int32_t> sizes);

class Tensor {
 public:
  Tensor() = default;

  // Validates and builds a tensor over `data` (which may be null: bound later). An empty
  // `dim_order` means contiguous. Errors: InvalidArgument for a rank above 16, a negative size, a
  // dim order that is not a permutation, or a byte size that overflows; NotSupported for a dtype
  // Ember does not compute with.
  static Result<Tensor> make(ScalarType dtype, std::span<const int32_t> sizes,
                             std::span<const uint8_t> dim_order, void* data,
                             ShapeDynamism dynamism = ShapeDynamism::Static);
  // make() into *out (unchanged on error), without the copies of a Result: for tables of
  // tensors, such as a method's at load.
  static Error make_at(Tensor* out, ScalarType dtype, std::span<const int32_t> sizes,
                       std::span<const uint8_t> dim_order, void* data,
                       ShapeDynamism dynamism = ShapeDynamism::Static);

  ScalarType dtype() const { return dtype_; }
  ShapeDynamism dynamism() const { return dynamism_; }
  int dim() const { return dim_; }
  std::span<const int32_t> sizes() const { return {sizes_, static_cast<size_t>(dim_)}; }
  std::span<const uint8_t> dim_order() const { return {dim_order_, static_cast<size_t>(dim_)}; }
  std::span<const int64_t> strides() const { return {strides_, static_cast<size_t>(dim_)}; }
  int32_t size(int d) const { return sizes_[d]; }
  int64_t stride(int d) const { return strides_[d]; }
  int64_t numel() const { return numel_; }
  size_t element_size() const { return ::ember::element_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel_) * element_size(); }
  // Bytes the storage holds: the byte size at the sizes the tensor was made with.
  size_t capacity_bytes() const { return capacity_bytes_; }
  bool is_contiguous() const {
    for (int i = 0; i < dim_; ++i) {
      if (dim_order_[i] != i) return false;
    }
    return true;
  }

  void* mutable_data() const { return data_; }
  const void* data() const { return data_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }
  void set_data(void* data) { data_ = data; }

  // Changes the sizes, keeping rank and dim order. A static tensor accepts only its own sizes
  // (NotSupported otherwise); a dynamic one any sizes whose byte size fits the capacity
  // (InvalidArgument otherwise).
  Error resize(std::span<const int32_t> new_sizes);

 private:
  void compute_strides();

  ScalarType dtype_ = ScalarType::Float;
  ShapeDynamism dynamism_ = ShapeDynamism::Static;
  int8_t dim_ = 0;
  int32_t sizes_[kMaxRank] = {};
  uint8_t dim_order_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};
  int64_t numel_ = 1;
  size_t capacity_bytes_ = 0;
  void* data_ = nullptr;
};

}  // namespace ember
