// Types of IR values: dtypes, dims (static or symbolic with an upper bound), tensor types.
//
//   TensorType t{DType::Float32, {Dim::symbolic("batch", 8), Dim(4)}, {}};
//   t.rank();             // 2; an empty dim order means contiguous (0, 1, ...)
//   to_string(t);         // "f32[batch<=8, 4]"
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::ir {

// The element types an exported program can carry. Names follow torch ("float32"); the text form
// uses short names ("f32").
enum class DType : uint8_t {
  Float32,
  Float16,
  BFloat16,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  Bool,
  Complex64,
  Complex128,
};

std::string_view dtype_name(DType dtype);        // "float32"
std::string_view dtype_short_name(DType dtype);  // "f32"
// Accepts either spelling.
std::optional<DType> dtype_from_name(std::string_view name);
size_t dtype_size(DType dtype);

// One size of a tensor: a constant, or an expression over symbols ("batch", "2*batch") whose value
// never exceeds `value`, the upper bound memory planning sizes buffers with.
struct Dim {
  int64_t value = 0;  // the size when static, the upper bound when symbolic
  std::string expr;   // empty when static

  Dim() = default;
  Dim(int64_t size) : value(size) {}  // NOLINT(google-explicit-constructor): sizes read as ints
  static Dim symbolic(std::string expr, int64_t upper_bound) {
    Dim d(upper_bound);
    d.expr = std::move(expr);
    return d;
  }
  bool is_static() const { return expr.empty(); }
  bool operator==(const Dim& other) const = default;
};

struct TensorType {
  DType dtype = DType::Float32;
  std::vector<Dim> shape;
  // Physical order of the dims, outermost first (the .pte dim order). Empty means contiguous.
  std::vector<int32_t> dim_order;

  size_t rank() const { return shape.size(); }
  bool is_static() const;
  bool is_contiguous() const;
  // Number of elements at the upper bound of every dim; nullopt on overflow.
  std::optional<int64_t> numel_upper_bound() const;
  bool operator==(const TensorType& other) const = default;
};

// The type of a value: a tensor, or a scalar a node computes (a symbolic size, say).
enum class ValueKind : uint8_t { Tensor, Int, Float, Bool };

struct ValueType {
  ValueKind kind = ValueKind::Tensor;
  TensorType tensor;  // meaningful when kind == Tensor

  static ValueType of_tensor(TensorType t) { return ValueType{ValueKind::Tensor, std::move(t)}; }
  static ValueType scalar(ValueKind kind) { return ValueType{kind, {}}; }
  bool operator==(const ValueType& other) const = default;
};

std::string to_string(const Dim& dim);
std::string to_string(const TensorType& type);
std::string to_string(const ValueType& type);

}  // namespace ember::ir
