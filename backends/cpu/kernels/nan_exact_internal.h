// The NaN-exact kernels' shared parts (internal to kernels/nan_exact*.cc, which implement
// kernels/nan_exact.h): the per-instruction-set copies' attributes, the split over OpenMP threads,
// and the exp that sigmoid, elu, gelu and softmax are built on.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/policy.h"

// Each kernel is one body, inlined into three copies compiled for AVX-512, AVX2 and the
// baseline (the compiler vectorizes the loops over channels and elements); cpu_isa() picks one.
// The comparisons are written so that NaN wins: `v < lo ? lo : v` keeps a NaN v (every
// comparison with NaN is false), which is also the operand order of the max instruction the
// compiler emits for it.
#define EMBER_INLINE [[gnu::always_inline]] inline
#define EMBER_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))
#define EMBER_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace ember::cpu::nan_exact_internal {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Below this many floats of work a step runs on the calling thread (policy.h).
inline constexpr int64_t kMinParallelWork = kMinParallelElements;

// fn(begin, end) over [0, count), split evenly over the threads.
template <typename Fn>
void split(int64_t count, int64_t work, int threads, Fn fn) {
  const int t = work < kMinParallelWork ? 1 : static_cast<int>(std::min<int64_t>(threads, count));
  if (t <= 1) {
    fn(int64_t{0}, count);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    const int64_t i = omp_get_thread_num(), n = omp_get_num_threads();
    fn(count * i / n, count * (i + 1) / n);
  }
}

// exp(t) for t in [-104, 89] (callers clamp; NaN passes through as some NaN or a finite value,
// which callers replace): 2^n * e^r with n = round(t / ln 2), |r| <= ln 2 / 2, e^r by its Taylor
// series to r^7 (under 1e-8 relative) and 2^n as two factors, so that n from -151 to 128 needs
// no special case (exp(89) is inf, exp(-104) below the smallest float). Bit operations and
// arithmetic only, so that a loop calling it becomes one vector loop.
EMBER_INLINE float exp_clamped(float t) {
  constexpr float kLog2e = 1.44269504f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  uint32_t round_bits;
  std::memcpy(&round_bits, &kRound, sizeof round_bits);
  const float k = t * kLog2e + kRound;  // round(t / ln 2) + 1.5 * 2^23
  const float nf = k - kRound;
  uint32_t kb;
  std::memcpy(&kb, &k, sizeof kb);
  const int32_t m = static_cast<int32_t>(kb - round_bits);  // n
  const float r = (t - nf * kLn2Hi) - nf * kLn2Lo;          // nf * kLn2Hi is exact
  float p = 1.f / 5040;
  p = p * r + 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + .5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const int32_t half = m / 2;
  const uint32_t b1 = static_cast<uint32_t>(half + 127) << 23;
  const uint32_t b2 = static_cast<uint32_t>(m - half + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  return p * s1 * s2;
}

}  // namespace ember::cpu::nan_exact_internal
