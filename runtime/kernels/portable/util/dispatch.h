// Dtype dispatch over subsets of the supported types, for kernels whose body only compiles (or only
// makes sense) for some of them. Same shape as EMBER_SWITCH_ALL_TYPES (runtime/core/scalar_type.h).
//
//   EMBER_SWITCH_FLOAT_TYPES(t.dtype(), T, return fail(...), { run<T>(t); });
#pragma once

#include "runtime/core/scalar_type.h"

// float16, bfloat16, float32, float64.
#define EMBER_SWITCH_FLOAT_TYPES(dtype, ctype, on_unsupported, ...)   \
  switch (dtype) {                                                    \
    EMBER_CASE_TYPE_(Half, ::ember::Half, ctype, __VA_ARGS__)         \
    EMBER_CASE_TYPE_(Float, float, ctype, __VA_ARGS__)                \
    EMBER_CASE_TYPE_(Double, double, ctype, __VA_ARGS__)              \
    EMBER_CASE_TYPE_(BFloat16, ::ember::BFloat16, ctype, __VA_ARGS__) \
    default:                                                          \
      on_unsupported;                                                 \
  }

// Every supported type but bool.
#define EMBER_SWITCH_REAL_TYPES(dtype, ctype, on_unsupported, ...)    \
  switch (dtype) {                                                    \
    EMBER_CASE_TYPE_(Byte, uint8_t, ctype, __VA_ARGS__)               \
    EMBER_CASE_TYPE_(Char, int8_t, ctype, __VA_ARGS__)                \
    EMBER_CASE_TYPE_(Short, int16_t, ctype, __VA_ARGS__)              \
    EMBER_CASE_TYPE_(Int, int32_t, ctype, __VA_ARGS__)                \
    EMBER_CASE_TYPE_(Long, int64_t, ctype, __VA_ARGS__)               \
    EMBER_CASE_TYPE_(Half, ::ember::Half, ctype, __VA_ARGS__)         \
    EMBER_CASE_TYPE_(Float, float, ctype, __VA_ARGS__)                \
    EMBER_CASE_TYPE_(Double, double, ctype, __VA_ARGS__)              \
    EMBER_CASE_TYPE_(BFloat16, ::ember::BFloat16, ctype, __VA_ARGS__) \
    default:                                                          \
      on_unsupported;                                                 \
  }
