// The NaN-exact element-wise kernels (kernels/nan_exact.h): clamps, sigmoid, elu, gelu, rsqrt,
// neg, where, and the magnitude guard of Winograd's convolution. Max pooling is
// kernels/nan_exact_pool.cc, softmax rows kernels/nan_exact_softmax.cc.
#include "backends/cpu/kernels/nan_exact.h"

#include <atomic>
#include <cstring>

#include "backends/cpu/kernels/nan_exact_internal.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu {
namespace {

using nan_exact_internal::exp_clamped;
using nan_exact_internal::split;

EMBER_INLINE void clamp_body(float* x, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    x[i] = v;
  }
}
EMBER_TARGET_AVX512 void clamp_avx512(float* x, int64_t n, float lo, float hi) {
  clamp_body(x, n, lo, hi);
}
EMBER_TARGET_AVX2 void clamp_avx2(float* x, int64_t n, float lo, float hi) {
  clamp_body(x, n, lo, hi);
}
void clamp_generic(float* x, int64_t n, float lo, float hi) { clamp_body(x, n, lo, hi); }

// sigmoid(x) = 1 / (1 + exp(-x)), ATen's formula: exp(-x) overflows to inf above x = -88.72
// (sigmoid 0) and is below the smallest float under x = -103.3 (sigmoid 1), as in ATen. A NaN x
// is returned as it is.
EMBER_INLINE void sigmoid_body(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    float t = -v;
    t = t > 89.f ? 89.f : t;
    t = t < -104.f ? -104.f : t;
    const float y = 1.f / (1.f + exp_clamped(t));
    x[i] = v != v ? v : y;
  }
}

// elu(x) = x for x > 0, alpha * expm1(x) otherwise: ATen's vectorized form, which keeps the sign
// of -0.0 (expm1(-0.0) is -0.0; oneDNN's elu gives +0.0, and a later rsqrt +inf for ATen's -inf)
// and subnormal results (oneDNN flushes them). expm1 by its Taylor series to x^9 above -0.5
// (under 3e-10 relative), exp(x) - 1 below (where the result is at least 0.39 in magnitude).
EMBER_INLINE void elu_body(float* x, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = v < -104.f ? -104.f : v;  // exp(-104) is below the smallest float
    float p = 1.f / 362880;
    p = p * t + 1.f / 40320;
    p = p * t + 1.f / 5040;
    p = p * t + 1.f / 720;
    p = p * t + 1.f / 120;
    p = p * t + 1.f / 24;
    p = p * t + 1.f / 6;
    p = p * t + .5f;
    p = p * t + 1.f;
    const float series = t * p;
    const float em1 = t > -.5f ? series : exp_clamped(t) - 1.f;
    x[i] = v > 0.f ? v : alpha * em1;  // NaN: alpha * NaN
  }
}
EMBER_TARGET_AVX512 void elu_avx512(float* x, int64_t n, float alpha) { elu_body(x, n, alpha); }
EMBER_TARGET_AVX2 void elu_avx2(float* x, int64_t n, float alpha) { elu_body(x, n, alpha); }
void elu_generic(float* x, int64_t n, float alpha) { elu_body(x, n, alpha); }

// erf(z) within 2 ulp (of the exact value, over every float): z * P(z^2) for |z| < 1, and
// 1 - exp(Q(|z|) - z^2) up to |z| = 4 (above, erf rounds to 1), the sign then restored. P and Q
// are least-squares fits on Chebyshev nodes, P to erf(z) / z, Q to log(erfc(a)) + a^2 (relative
// error, float64), made for this kernel. erf(+-inf) = +-1; NaN gives some value (callers select).
EMBER_INLINE float erf_body(float z) {
  const float a = z < 0.f ? -z : z;
  const float z2 = z * z;
  float p = 7.898209878476337e-05f;
  p = p * z2 - 8.024353883229196e-04f;
  p = p * z2 + 5.190053489059210e-03f;
  p = p * z2 - 2.685480937361717e-02f;
  p = p * z2 + 1.128361225128174e-01f;
  p = p * z2 - 3.761262893676758e-01f;
  p = p * z2 + 1.128379225730896e+00f;
  const float small = z * p;
  const float c = a > 4.f ? 4.f : a;  // NaN stays NaN (the select at the end drops it)
  float q = -5.164791261336177e-08f;
  q = q * c + 2.775908114927006e-06f;
  q = q * c - 5.694536230294034e-05f;
  q = q * c + 6.559432949870825e-04f;
  q = q * c - 4.960371181368828e-03f;
  q = q * c + 2.686224691569805e-02f;
  q = q * c - 1.107063740491867e-01f;
  q = q * c + 3.687274754047394e-01f;
  q = q * c - 1.130509614944458e+00f;
  q = q * c + 3.794099029619247e-04f;
  const float big = 1.f - exp_clamped(q - c * c);
  const float large = a >= 4.f ? 1.f : big;
  return a < 1.f ? small : (z < 0.f ? -large : large);
}

// gelu(x) = x / 2 * (1 + erf(x / sqrt 2)), ATen's formula and its zero signs: -0.0 for x = -0.0
// and where 1 + erf rounds to 0 (x below about -5.5), NaN for -inf and NaN.
EMBER_INLINE void gelu_body(float* x, int64_t n) {
  constexpr float kSqrtHalf = 0.707106781186547524f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float y = v * .5f * (1.f + erf_body(v * kSqrtHalf));
    x[i] = v != v ? v : y;
  }
}
EMBER_TARGET_AVX512 void gelu_avx512(float* x, int64_t n) { gelu_body(x, n); }
EMBER_TARGET_AVX2 void gelu_avx2(float* x, int64_t n) { gelu_body(x, n); }
void gelu_generic(float* x, int64_t n) { gelu_body(x, n); }

EMBER_TARGET_AVX512 void sigmoid_avx512(float* x, int64_t n) { sigmoid_body(x, n); }
EMBER_TARGET_AVX2 void sigmoid_avx2(float* x, int64_t n) { sigmoid_body(x, n); }
void sigmoid_generic(float* x, int64_t n) { sigmoid_body(x, n); }

// ATen's rsqrt: a correctly rounded square root, then a correctly rounded division (its scalar
// and vector forms agree), so any vectorization gives its bits: 1/sqrt(-x) and 1/sqrt(NaN) are
// NaN, 1/sqrt(+-0) is +-inf.
EMBER_INLINE void rsqrt_body(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0f / __builtin_sqrtf(x[i]);
}
EMBER_TARGET_AVX512 void rsqrt_avx512(float* x, int64_t n) { rsqrt_body(x, n); }
EMBER_TARGET_AVX2 void rsqrt_avx2(float* x, int64_t n) { rsqrt_body(x, n); }
void rsqrt_generic(float* x, int64_t n) { rsqrt_body(x, n); }

EMBER_INLINE void neg_body(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = -x[i];
}
EMBER_TARGET_AVX512 void neg_avx512(float* x, int64_t n) { neg_body(x, n); }
EMBER_TARGET_AVX2 void neg_avx2(float* x, int64_t n) { neg_body(x, n); }
void neg_generic(float* x, int64_t n) { neg_body(x, n); }

// One row of where_broadcast: each operand's stride along it 0 or 1 (C, A, B), so that each of
// the eight forms is one vector loop; any other stride in the generic loop.
template <bool C, bool A, bool B>
EMBER_INLINE void where_row(const uint8_t* c, const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = c[C ? i : 0] != 0 ? a[A ? i : 0] : b[B ? i : 0];
}
template <bool C, bool A, bool B>
void where_rows_on(CpuIsa isa, const uint8_t* c, const float* a, const float* b, float* y,
                   int64_t n);
#define EMBER_WHERE_ROW(C, A, B)                                                             \
  EMBER_TARGET_AVX512 void where_row_avx512_##C##A##B(const uint8_t* c, const float* a,      \
                                                      const float* b, float* y, int64_t n) { \
    where_row<C, A, B>(c, a, b, y, n);                                                       \
  }                                                                                          \
  EMBER_TARGET_AVX2 void where_row_avx2_##C##A##B(const uint8_t* c, const float* a,          \
                                                  const float* b, float* y, int64_t n) {     \
    where_row<C, A, B>(c, a, b, y, n);                                                       \
  }                                                                                          \
  template <>                                                                                \
  void where_rows_on<C, A, B>(CpuIsa isa, const uint8_t* c, const float* a, const float* b,  \
                              float* y, int64_t n) {                                         \
    if (isa >= CpuIsa::Avx512) {                                                             \
      where_row_avx512_##C##A##B(c, a, b, y, n);                                             \
    } else if (isa >= CpuIsa::Avx2) {                                                        \
      where_row_avx2_##C##A##B(c, a, b, y, n);                                               \
    } else {                                                                                 \
      where_row<C, A, B>(c, a, b, y, n);                                                     \
    }                                                                                        \
  }
EMBER_WHERE_ROW(false, false, false)
EMBER_WHERE_ROW(false, false, true)
EMBER_WHERE_ROW(false, true, false)
EMBER_WHERE_ROW(false, true, true)
EMBER_WHERE_ROW(true, false, false)
EMBER_WHERE_ROW(true, false, true)
EMBER_WHERE_ROW(true, true, false)
EMBER_WHERE_ROW(true, true, true)
#undef EMBER_WHERE_ROW

}  // namespace

namespace {

// f(x + begin, end - begin) over [0, n), split over the threads (cost: work per element, for the
// decision), by the copy of the kernel compiled for the instruction set in force.
template <typename Avx512, typename Avx2, typename Generic>
void in_place_on_isa(float* x, int64_t n, int64_t cost, int threads, Avx512 avx512, Avx2 avx2,
                     Generic generic) {
  const CpuIsa isa = cpu_isa();
  split(n, n * cost, threads, [&](int64_t begin, int64_t end) {
    if (isa >= CpuIsa::Avx512) {
      avx512(x + begin, end - begin);
    } else if (isa >= CpuIsa::Avx2) {
      avx2(x + begin, end - begin);
    } else {
      generic(x + begin, end - begin);
    }
  });
}

}  // namespace

void clamp_in_place(float* x, int64_t n, Clamp act, int threads) {
  in_place_on_isa(
      x, n, 1, threads, [act](float* p, int64_t m) { clamp_avx512(p, m, act.lo, act.hi); },
      [act](float* p, int64_t m) { clamp_avx2(p, m, act.lo, act.hi); },
      [act](float* p, int64_t m) { clamp_generic(p, m, act.lo, act.hi); });
}

void sigmoid_in_place(float* x, int64_t n, int threads) {
  in_place_on_isa(x, n, 8, threads, sigmoid_avx512, sigmoid_avx2, sigmoid_generic);
}

void elu_in_place(float* x, int64_t n, float alpha, int threads) {
  in_place_on_isa(
      x, n, 8, threads, [alpha](float* p, int64_t m) { elu_avx512(p, m, alpha); },
      [alpha](float* p, int64_t m) { elu_avx2(p, m, alpha); },
      [alpha](float* p, int64_t m) { elu_generic(p, m, alpha); });
}

void gelu_in_place(float* x, int64_t n, int threads) {
  in_place_on_isa(x, n, 12, threads, gelu_avx512, gelu_avx2, gelu_generic);
}

void where_broadcast(const uint8_t* c, const float* a, const float* b, float* y,
                     const WhereShape& shape, int threads) {
  const int64_t r = shape.rank;
  const int64_t len = r == 0 ? 1 : shape.dims[r - 1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < r; ++d) rows *= shape.dims[d];
  const int64_t sc = r == 0 ? 0 : shape.c[r - 1], sa = r == 0 ? 0 : shape.a[r - 1];
  const int64_t sb = r == 0 ? 0 : shape.b[r - 1];
  using Row = void (*)(CpuIsa, const uint8_t*, const float*, const float*, float*, int64_t);
  static constexpr Row kRows[8] = {
      where_rows_on<false, false, false>, where_rows_on<false, false, true>,
      where_rows_on<false, true, false>,  where_rows_on<false, true, true>,
      where_rows_on<true, false, false>,  where_rows_on<true, false, true>,
      where_rows_on<true, true, false>,   where_rows_on<true, true, true>};
  const bool unit = (sc == 0 || sc == 1) && (sa == 0 || sa == 1) && (sb == 0 || sb == 1);
  const Row row = kRows[(sc != 0) * 4 + (sa != 0) * 2 + (sb != 0)];
  const CpuIsa isa = cpu_isa();
  split(rows, rows * len, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      // The row's first element in each operand: i's digits over the outer dims.
      int64_t oc = 0, oa = 0, ob = 0;
      for (int64_t d = r - 2, rest = i; d >= 0; --d) {
        const int64_t k = rest % shape.dims[d];
        rest /= shape.dims[d];
        oc += k * shape.c[d];
        oa += k * shape.a[d];
        ob += k * shape.b[d];
      }
      float* out = y + i * len;
      if (unit) {
        row(isa, c + oc, a + oa, b + ob, out, len);
      } else {
        for (int64_t j = 0; j < len; ++j) {
          out[j] = c[oc + j * sc] != 0 ? a[oa + j * sa] : b[ob + j * sb];
        }
      }
    }
  });
}

void rsqrt_in_place(float* x, int64_t n, int threads) {
  in_place_on_isa(x, n, 2, threads, rsqrt_avx512, rsqrt_avx2, rsqrt_generic);
}

void neg_in_place(float* x, int64_t n, int threads) {
  in_place_on_isa(x, n, 1, threads, neg_avx512, neg_avx2, neg_generic);
}

namespace {

// The largest |x[i]| as the bits of a float (sign cleared): an unsigned order that agrees with
// the magnitudes' and puts NaN above +inf, so one integer max is the whole check.
EMBER_INLINE uint32_t max_magnitude_body(const float* x, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    b &= 0x7fffffffu;
    m = b > m ? b : m;
  }
  return m;
}
EMBER_TARGET_AVX512 uint32_t max_magnitude_avx512(const float* x, int64_t n) {
  return max_magnitude_body(x, n);
}
EMBER_TARGET_AVX2 uint32_t max_magnitude_avx2(const float* x, int64_t n) {
  return max_magnitude_body(x, n);
}
uint32_t max_magnitude_generic(const float* x, int64_t n) { return max_magnitude_body(x, n); }

}  // namespace

bool all_within(const float* x, int64_t n, float bound, int threads) {
  uint32_t limit;
  std::memcpy(&limit, &bound, sizeof limit);
  const CpuIsa isa = cpu_isa();
  std::atomic<uint32_t> worst{0};
  split(n, n, threads, [&](int64_t begin, int64_t end) {
    const float* p = x + begin;
    const int64_t count = end - begin;
    const uint32_t m = isa >= CpuIsa::Avx512 ? max_magnitude_avx512(p, count)
                       : isa >= CpuIsa::Avx2 ? max_magnitude_avx2(p, count)
                                             : max_magnitude_generic(p, count);
    uint32_t seen = worst.load(std::memory_order_relaxed);
    while (m > seen && !worst.compare_exchange_weak(seen, m, std::memory_order_relaxed)) {
    }
  });
  return worst.load(std::memory_order_relaxed) <= limit;
}

}  // namespace ember::cpu
