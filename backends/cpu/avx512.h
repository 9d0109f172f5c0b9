// Helpers of Ember's AVX-512 kernels (packed_gemm.cc, inverted_residual.cc); include in .cc
// files only. Every function using AVX-512 carries EMBER_AVX512, so the files build without
// -mavx512f and callers check avx512_supported() (packed_gemm.h) before running any of it.
#pragma once

#include <immintrin.h>

#include <cstdint>

#define EMBER_AVX512 __attribute__((target("avx512f")))

namespace ember::cpu::avx512 {

inline constexpr int64_t kVec = 16;  // floats in a 512-bit vector

inline int64_t round_up(int64_t n) { return (n + kVec - 1) / kVec * kVec; }

// clamp(x) = min(hi, max(lo, x)). When an operand is NaN, max and min return their second
// operand: x, so NaN stays NaN, as in PyTorch's clamp and relu. (The zero-masking forms with a
// full mask are the same instructions; gcc 12 warns of an uninitialized value in the plain ones.)
EMBER_AVX512 inline __m512 clamp(__m512 x, __m512 lo, __m512 hi) {
  constexpr __mmask16 all = 0xFFFF;
  return _mm512_maskz_min_ps(all, hi, _mm512_maskz_max_ps(all, lo, x));
}

}  // namespace ember::cpu::avx512
