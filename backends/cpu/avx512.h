// Helpers of Ember's AVX-512 kernels (packed_gemm.cc, inverted_residual.cc); include in .cc
// files only. Every function using AVX-512 carries EMBER_AVX512, so the files build without
// -mavx512f and callers check avx512_supported() (packed_gemm.h) before running any of it.
#pragma once

#include <immintrin.h>

#include <cstdint>

// AVX-512F with the VL forms of the 256-bit instructions, and FMA3 (every AVX-512 CPU but the
// Xeon Phi has both).
#define EMBER_AVX512 __attribute__((target("avx512f,avx512vl,fma")))

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

// The low 256 bits of x (the zero-masking form, for the same reason as in clamp()).
EMBER_AVX512 inline __m256 low256(__m512 x) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(x), 0));
}

}  // namespace ember::cpu::avx512
