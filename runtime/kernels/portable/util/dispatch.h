// Dtype dispatch over subsets of the supported types, for kernels whose body only compiles (or only
// makes sense) for some of them. Same shape as EMBER_SWITCH_ALL_TYPES, and made of the same case
// groups (runtime/core/scalar_type.h), so the dtype -> C++ type mapping has one definition.
//
//   EMBER_SWITCH_FLOAT_TYPES(t.dtype(), T, return fail(...), { run<T>(t); });
#pragma once

#include "runtime/core/scalar_type.h"

// float16, bfloat16, float32, float64.
#define EMBER_SWITCH_FLOAT_TYPES(dtype, ctype, on_unsupported, ...) \
  switch (dtype) {                                                  \
    EMBER_CASE_FLOATING_TYPES_(ctype, __VA_ARGS__)                  \
    default:                                                        \
      on_unsupported;                                               \
  }

// Every supported type but bool.
#define EMBER_SWITCH_REAL_TYPES(dtype, ctype, on_unsupported, ...) \
  switch (dtype) {                                                 \
    EMBER_CASE_INTEGRAL_TYPES_(ctype, __VA_ARGS__)                 \
    EMBER_CASE_FLOATING_TYPES_(ctype, __VA_ARGS__)                 \
    default:                                                       \
      on_unsupported;                                              \
  }
