#include "compiler/ir/types.h"

#include <array>

namespace ember::ir {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::string_view short_name;
  size_t size;
};

constexpr std::array<DTypeInfo, 12> kDTypes = {{
    {DType::Float32, "float32", "f32", 4},
    {DType::Float16, "float16", "f16", 2},
    {DType::BFloat16, "bfloat16", "bf16", 2},
    {DType::Float64, "float64", "f64", 8},
    {DType::Int8, "int8", "i8", 1},
    {DType::Int16, "int16", "i16", 2},
    {DType::Int32, "int32", "i32", 4},
    {DType::Int64, "int64", "i64", 8},
    {DType::UInt8, "uint8", "u8", 1},
    {DType::Bool, "bool", "bool", 1},
    {DType::Complex64, "complex64", "c64", 8},
    {DType::Complex128, "complex128", "c128", 16},
}};

const DTypeInfo& info(DType dtype) {
  for (const DTypeInfo& i : kDTypes) {
    if (i.dtype == dtype) return i;
  }
  return kDTypes[0];  // unreachable: every enumerator is in the table
}

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }
std::string_view dtype_short_name(DType dtype) { return info(dtype).short_name; }
size_t dtype_size(DType dtype) { return info(dtype).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& i : kDTypes) {
    if (i.name == name || i.short_name == name) return i.dtype;
  }
  return std::nullopt;
}

bool TensorType::is_static() const {
  for (const Dim& d : shape) {
    if (!d.is_static()) return false;
  }
  return true;
}

bool TensorType::is_contiguous() const {
  for (size_t i = 0; i < dim_order.size(); ++i) {
    if (dim_order[i] != static_cast<int32_t>(i)) return false;
  }
  return true;
}

std::optional<int64_t> TensorType::numel_upper_bound() const {
  int64_t n = 1;
  for (const Dim& d : shape) {
    if (d.value < 0 || __builtin_mul_overflow(n, d.value, &n)) return std::nullopt;
  }
  return n;
}

std::string to_string(const Dim& dim) {
  if (dim.is_static()) return std::to_string(dim.value);
  return dim.expr + "<=" + std::to_string(dim.value);
}

std::string to_string(const TensorType& type) {
  std::string s(dtype_short_name(type.dtype));
  s += '[';
  for (size_t i = 0; i < type.shape.size(); ++i) {
    if (i) s += ", ";
    s += to_string(type.shape[i]);
  }
  s += ']';
  if (!type.is_contiguous()) {
    s += '{';
    for (size_t i = 0; i < type.dim_order.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(type.dim_order[i]);
    }
    s += '}';
  }
  return s;
}

std::string to_string(const ValueType& type) {
  switch (type.kind) {
    case ValueKind::Tensor:
      return to_string(type.tensor);
    case ValueKind::Int:
      return "int";
    case ValueKind::Float:
      return "float";
    case ValueKind::Bool:
      return "bool";
  }
  return "?";
}

}  // namespace ember::ir
