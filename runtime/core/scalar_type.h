// Element types, with ExecuTorch's integer codes (the codes stored in .pte and .ptd files).
//
//   if (!is_supported(type)) return fail(Error::NotSupported, "%s", to_string(type));
//   size_t bytes = element_size(ScalarType::Float);  // 4
//   EMBER_SWITCH_ALL_TYPES(t.dtype(), CTYPE, { fill<CTYPE>(t); });
//
// Every code of the format is named; Ember computes with the ten types `is_supported` accepts
// and refuses the others (quantized, complex, bit-packed, float8, unsigned wide) at load.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/half.h"

namespace ember {

enum class ScalarType : int8_t {
  Byte = 0,
  Char = 1,
  Short = 2,
  Int = 3,
  Long = 4,
  Half = 5,
  Float = 6,
  Double = 7,
  ComplexHalf = 8,
  ComplexFloat = 9,
  ComplexDouble = 10,
  Bool = 11,
  QInt8 = 12,
  QUInt8 = 13,
  QInt32 = 14,
  BFloat16 = 15,
  QUInt4x2 = 16,
  QUInt2x4 = 17,
  Bits1x8 = 18,
  Bits2x4 = 19,
  Bits4x2 = 20,
  Bits8 = 21,
  Bits16 = 22,
  Float8_e5m2 = 23,
  Float8_e4m3fn = 24,
  Float8_e5m2fnuz = 25,
  Float8_e4m3fnuz = 26,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
};

inline constexpr int kNumScalarTypes = 30;

// True for codes 0..29, the range the format defines.
constexpr bool is_valid(ScalarType t) {
  return static_cast<int>(t) >= 0 && static_cast<int>(t) < kNumScalarTypes;
}

// True for the types Ember's kernels compute with: uint8, int8, int16, int32, int64, float16,
// float32, float64, bool, bfloat16.
constexpr bool is_supported(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:
    case ScalarType::Long:
    case ScalarType::Half:
    case ScalarType::Float:
    case ScalarType::Double:
    case ScalarType::Bool:
    case ScalarType::BFloat16:
      return true;
    default:
      return false;
  }
}

// Bytes per element; 0 for an invalid code.
size_t element_size(ScalarType t);

// PyTorch's name of the type ("float32", "int64", "bool", ...); "invalid" for an invalid code.
const char* to_string(ScalarType t);

constexpr bool is_floating(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::Float || t == ScalarType::Double ||
         t == ScalarType::BFloat16;
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short ||
         t == ScalarType::Int || t == ScalarType::Long || (include_bool && t == ScalarType::Bool);
}

template <typename T>
struct CppTypeToScalarType;
#define EMBER_MAP_TYPE_(ctype, name)                      \
  template <>                                             \
  struct CppTypeToScalarType<ctype> {                     \
    static constexpr ScalarType value = ScalarType::name; \
  };
EMBER_MAP_TYPE_(uint8_t, Byte)
EMBER_MAP_TYPE_(int8_t, Char)
EMBER_MAP_TYPE_(int16_t, Short)
EMBER_MAP_TYPE_(int32_t, Int)
EMBER_MAP_TYPE_(int64_t, Long)
EMBER_MAP_TYPE_(Half, Half)
EMBER_MAP_TYPE_(float, Float)
EMBER_MAP_TYPE_(double, Double)
EMBER_MAP_TYPE_(bool, Bool)
EMBER_MAP_TYPE_(BFloat16, BFloat16)
#undef EMBER_MAP_TYPE_

}  // namespace ember

// Dtype dispatch: runs `body` with `ctype` bound to the C++ type of `dtype`. The caller handles the
// default (unsupported) case through `on_unsupported`, which is a statement.
#define EMBER_CASE_TYPE_(enum_name, cpp, ctype, ...) \
  case ::ember::ScalarType::enum_name: {             \
    using ctype = cpp;                               \
    __VA_ARGS__;                                     \
    break;                                           \
  }
// The cases by group, the one place that maps a dtype to its C++ type for dispatch; the switches
// here and the subsets of runtime/kernels/portable/util/dispatch.h are made of them.
#define EMBER_CASE_INTEGRAL_TYPES_(ctype, ...)         \
  EMBER_CASE_TYPE_(Byte, uint8_t, ctype, __VA_ARGS__)  \
  EMBER_CASE_TYPE_(Char, int8_t, ctype, __VA_ARGS__)   \
  EMBER_CASE_TYPE_(Short, int16_t, ctype, __VA_ARGS__) \
  EMBER_CASE_TYPE_(Int, int32_t, ctype, __VA_ARGS__)   \
  EMBER_CASE_TYPE_(Long, int64_t, ctype, __VA_ARGS__)
#define EMBER_CASE_FLOATING_TYPES_(ctype, ...)              \
  EMBER_CASE_TYPE_(Half, ::ember::Half, ctype, __VA_ARGS__) \
  EMBER_CASE_TYPE_(Float, float, ctype, __VA_ARGS__)        \
  EMBER_CASE_TYPE_(Double, double, ctype, __VA_ARGS__)      \
  EMBER_CASE_TYPE_(BFloat16, ::ember::BFloat16, ctype, __VA_ARGS__)
#define EMBER_SWITCH_ALL_TYPES(dtype, ctype, on_unsupported, ...) \
  switch (dtype) {                                                \
    EMBER_CASE_INTEGRAL_TYPES_(ctype, __VA_ARGS__)                \
    EMBER_CASE_FLOATING_TYPES_(ctype, __VA_ARGS__)                \
    EMBER_CASE_TYPE_(Bool, bool, ctype, __VA_ARGS__)              \
    default:                                                      \
      on_unsupported;                                             \
  }
