#include "backends/cpu/kernels/nan_exact.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/platform/cpu_isa.h"

// Each kernel is one body, inlined into three copies compiled for AVX-512, AVX2 and the
// baseline (the compiler vectorizes the loops over channels and elements); cpu_isa() picks one.
// The comparisons are written so that NaN wins: `v < lo ? lo : v` keeps a NaN v (every
// comparison with NaN is false), which is also the operand order of the max instruction the
// compiler emits for it.
#define EMBER_INLINE [[gnu::always_inline]] inline
#define EMBER_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))
#define EMBER_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace ember::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Below this many floats of work a step runs on the calling thread (a parallel region costs a
// few microseconds).
constexpr int64_t kMinParallelWork = int64_t{1} << 15;

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

// Softmax of each row of `len` floats, ATen's algorithm for the last dim: the row's maximum m, e =
// exp(x - m), then e * (1 / sum e). A row holding NaN or +inf, or only -inf, is NaN (x - m is NaN
// somewhere there, as in ATen); elsewhere x - m <= 0, clamped at -104 where exp is below the
// smallest float.
EMBER_INLINE void softmax_rows_body(const float* x, float* y, int64_t rows, int64_t len) {
  // The maximum and the sum in 16 lanes, so that each loop is a vector loop (a float sum in one
  // accumulator is not: its order would change). A NaN is never the maximum, but its exp is NaN,
  // so the sum and then the whole row are NaN.
  constexpr int64_t kLanes = 16;
  const int64_t body = len / kLanes * kLanes;
  for (int64_t r = 0; r < rows; ++r, x += len, y += len) {
    float lane_max[kLanes], lane_sum[kLanes];
    for (int64_t j = 0; j < kLanes; ++j) {
      lane_max[j] = -kInf;
      lane_sum[j] = 0.f;
    }
    for (int64_t i = 0; i < body; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) {
        lane_max[j] = x[i + j] > lane_max[j] ? x[i + j] : lane_max[j];
      }
    }
    float m = -kInf;
    for (int64_t j = 0; j < kLanes; ++j) m = lane_max[j] > m ? lane_max[j] : m;
    for (int64_t i = body; i < len; ++i) m = x[i] > m ? x[i] : m;
    if (m == kInf || m == -kInf) {
      for (int64_t i = 0; i < len; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    for (int64_t i = 0; i < len; ++i) {
      float t = x[i] - m;
      t = t < -104.f ? -104.f : t;  // NaN stays NaN, and so does its exp
      y[i] = exp_clamped(t);
    }
    for (int64_t i = 0; i < body; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lane_sum[j] += y[i + j];
    }
    float sum = 0.f;
    for (int64_t j = 0; j < kLanes; ++j) sum += lane_sum[j];
    for (int64_t i = body; i < len; ++i) sum += y[i];
    const float inv = 1.f / sum;
    for (int64_t i = 0; i < len; ++i) y[i] *= inv;
  }
}
EMBER_TARGET_AVX512 void softmax_rows_avx512(const float* x, float* y, int64_t rows, int64_t len) {
  softmax_rows_body(x, y, rows, len);
}
EMBER_TARGET_AVX2 void softmax_rows_avx2(const float* x, float* y, int64_t rows, int64_t len) {
  softmax_rows_body(x, y, rows, len);
}
void softmax_rows_generic(const float* x, float* y, int64_t rows, int64_t len) {
  softmax_rows_body(x, y, rows, len);
}

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

// The running maximum of L channels, NaN skipped, and the last NaN seen (ATen's result is NaN
// where any value was). Two selects and no branch, so that the lanes become one vector.
template <int L>
EMBER_INLINE void max_into(float* m, float* nan, const float* p) {
  for (int l = 0; l < L; ++l) {
    const float v = p[l];
    m[l] = v > m[l] ? v : m[l];
    nan[l] = v != v ? v : nan[l];
  }
}

// The taps of a window inside the input, per dim: j in [lo, hi) where
// o * stride - pad + j * dilation lies in [0, in).
EMBER_INLINE void taps(const PoolWindow& w, const int64_t* o, int64_t* lo, int64_t* hi) {
  for (int k = 0; k < 3; ++k) {
    const int64_t first = o[k] * w.stride[k] - w.pad[k];
    if (w.dilation[k] == 1) {  // no divisions (they dominated a 3x3 window's time)
      lo[k] = std::max<int64_t>(0, -first);
      hi[k] = std::max<int64_t>(0, std::min(w.kernel[k], w.in[k] - first));
      continue;
    }
    lo[k] = first >= 0 ? 0 : (-first + w.dilation[k] - 1) / w.dilation[k];
    const int64_t last = w.in[k] - 1 - first;  // j * dilation <= last
    hi[k] = last < 0 ? 0 : std::min(w.kernel[k], last / w.dilation[k] + 1);
  }
}

// The loops over a window's taps, `body` run with `p` at each (in the calling function: a lambda
// would lose the function's target instruction set).
#define EMBER_FOR_TAPS(x, in, w, o, body)                                                  \
  do {                                                                                     \
    int64_t lo_[3], hi_[3];                                                                \
    taps(w, o, lo_, hi_);                                                                  \
    for (int64_t a_ = lo_[0]; a_ < hi_[0]; ++a_) {                                         \
      const int64_t d_ = o[0] * w.stride[0] - w.pad[0] + a_ * w.dilation[0];               \
      for (int64_t b_ = lo_[1]; b_ < hi_[1]; ++b_) {                                       \
        const int64_t h_ = o[1] * w.stride[1] - w.pad[1] + b_ * w.dilation[1];             \
        const float* row_ = x + d_ * in.spatial[0] + h_ * in.spatial[1];                   \
        for (int64_t c_ = lo_[2]; c_ < hi_[2]; ++c_) {                                     \
          const float* p =                                                                 \
              row_ + (o[2] * w.stride[2] - w.pad[2] + c_ * w.dilation[2]) * in.spatial[2]; \
          body;                                                                            \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  } while (false)

// One output position's L contiguous channels (x and y point at the first).
template <int L>
EMBER_INLINE void window(const float* x, const PoolLayout& in, const PoolWindow& w,
                         const int64_t* o, float* y) {
  float m[L], nan[L];
  for (int l = 0; l < L; ++l) {
    m[l] = -kInf;
    nan[l] = 0.f;
  }
  EMBER_FOR_TAPS(x, in, w, o, max_into<L>(m, nan, p));
  for (int l = 0; l < L; ++l) y[l] = nan[l] != nan[l] ? nan[l] : m[l];
}

// Output positions (od, oh, 0..out[2]) of one group of contiguous channels (x, y: its first
// channel at input position 0 and at output (od, oh, 0); ys: the output's stride along ow), L
// channels to a vector: the maximum skipping NaN (max(v, m) returns m where either is NaN), and
// the lanes that saw a NaN, which become NaN.
EMBER_TARGET_AVX512 void row16_avx512(const float* x, const PoolLayout& in, const PoolWindow& w,
                                      int64_t od, int64_t oh, float* y, int64_t ys) {
  const int64_t o[3] = {od, oh, 0};
  int64_t lo[3], hi[3];
  taps(w, o, lo, hi);
  const __m512 nan_v = _mm512_set1_ps(std::nanf(""));
  for (int64_t ow = 0; ow < w.out[2]; ++ow) {
    const int64_t o2[3] = {od, oh, ow};
    int64_t l2[3], h2[3];
    taps(w, o2, l2, h2);
    const int64_t first = ow * w.stride[2] - w.pad[2];
    __m512 m = _mm512_set1_ps(-kInf);
    __mmask16 nan = 0;
    for (int64_t a = lo[0]; a < hi[0]; ++a) {
      const int64_t d = od * w.stride[0] - w.pad[0] + a * w.dilation[0];
      for (int64_t b = lo[1]; b < hi[1]; ++b) {
        const int64_t h = oh * w.stride[1] - w.pad[1] + b * w.dilation[1];
        const float* row = x + d * in.spatial[0] + h * in.spatial[1];
        for (int64_t c = l2[2]; c < h2[2]; ++c) {
          const __m512 v = _mm512_loadu_ps(row + (first + c * w.dilation[2]) * in.spatial[2]);
          nan = static_cast<__mmask16>(nan | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
          m = _mm512_maskz_max_ps(0xFFFF, v, m);  // the zero-masking form (gcc 12 warns of an
                                                  // uninitialized value in the plain one)
        }
      }
    }
    _mm512_storeu_ps(y + ow * ys, _mm512_mask_mov_ps(m, nan, nan_v));
  }
}

// Likewise, 8 channels to an AVX2 vector (L = 8 or 16).
template <int L>
EMBER_TARGET_AVX2 void row_avx2(const float* x, const PoolLayout& in, const PoolWindow& w,
                                int64_t od, int64_t oh, float* y, int64_t ys) {
  const int64_t o[3] = {od, oh, 0};
  int64_t lo[3], hi[3];
  taps(w, o, lo, hi);
  const __m256 nan_v = _mm256_set1_ps(std::nanf(""));
  for (int64_t ow = 0; ow < w.out[2]; ++ow) {
    const int64_t o2[3] = {od, oh, ow};
    int64_t l2[3], h2[3];
    taps(w, o2, l2, h2);
    const int64_t first = ow * w.stride[2] - w.pad[2];
    __m256 m[L / 8], nan[L / 8];
    for (int k = 0; k < L / 8; ++k) {
      m[k] = _mm256_set1_ps(-kInf);
      nan[k] = _mm256_setzero_ps();
    }
    for (int64_t a = lo[0]; a < hi[0]; ++a) {
      const int64_t d = od * w.stride[0] - w.pad[0] + a * w.dilation[0];
      for (int64_t b = lo[1]; b < hi[1]; ++b) {
        const int64_t h = oh * w.stride[1] - w.pad[1] + b * w.dilation[1];
        const float* row = x + d * in.spatial[0] + h * in.spatial[1];
        for (int64_t c = l2[2]; c < h2[2]; ++c) {
          const float* p = row + (first + c * w.dilation[2]) * in.spatial[2];
          for (int k = 0; k < L / 8; ++k) {
            const __m256 v = _mm256_loadu_ps(p + 8 * k);
            nan[k] = _mm256_or_ps(nan[k], _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            m[k] = _mm256_max_ps(v, m[k]);
          }
        }
      }
    }
    for (int k = 0; k < L / 8; ++k) {
      _mm256_storeu_ps(y + ow * ys + 8 * k, _mm256_blendv_ps(m[k], nan_v, nan[k]));
    }
  }
}

enum class Isa { Generic, Avx2, Avx512 };

// Output rows [begin, end) of (batch, channel group, d, h): a channel group is a block of a
// blocked layout, 16 channels of a channels-last one, or one channel of another.
template <Isa I>
EMBER_INLINE void pool_rows(const float* x, const PoolLayout& in, float* y, const PoolLayout& out,
                            const PoolWindow& w, int64_t group, int64_t begin, int64_t end) {
  const int64_t groups = (w.channels + group - 1) / group;
  const bool contiguous = group > 1;
  for (int64_t r = begin; r < end; ++r) {
    int64_t rest = r;
    const int64_t oh = rest % w.out[1];
    rest /= w.out[1];
    const int64_t od = rest % w.out[0];
    rest /= w.out[0];
    const int64_t g = rest % groups;
    const int64_t b = rest / groups;
    const int64_t c0 = g * group;
    const int64_t count = std::min(group, w.channels - c0);
    // The group's first channel in each layout.
    const int64_t xi =
        b * in.batch + (c0 / in.block) * in.channel_block + (c0 % in.block) * in.channel;
    const int64_t yi =
        b * out.batch + (c0 / out.block) * out.channel_block + (c0 % out.block) * out.channel;
    float* dst = y + yi + od * out.spatial[0] + oh * out.spatial[1];
    if constexpr (I != Isa::Generic) {
      if (contiguous && (count == 16 || count == 8)) {
        if (I == Isa::Avx512 && count == 16) {
          row16_avx512(x + xi, in, w, od, oh, dst, out.spatial[2]);
        } else if (count == 16) {
          row_avx2<16>(x + xi, in, w, od, oh, dst, out.spatial[2]);
        } else {
          row_avx2<8>(x + xi, in, w, od, oh, dst, out.spatial[2]);
        }
        continue;
      }
    }
    for (int64_t ow = 0; ow < w.out[2]; ++ow) {
      const int64_t o[3] = {od, oh, ow};
      float* at = dst + ow * out.spatial[2];
      if (contiguous && count == 16) {
        window<16>(x + xi, in, w, o, at);
      } else if (contiguous && count == 8) {
        window<8>(x + xi, in, w, o, at);
      } else {
        for (int64_t c = 0; c < count; ++c) {
          window<1>(x + xi + c * in.channel, in, w, o, at + c * out.channel);
        }
      }
    }
  }
}
EMBER_TARGET_AVX512 void pool_avx512(const float* x, const PoolLayout& in, float* y,
                                     const PoolLayout& out, const PoolWindow& w, int64_t group,
                                     int64_t begin, int64_t end) {
  pool_rows<Isa::Avx512>(x, in, y, out, w, group, begin, end);
}
EMBER_TARGET_AVX2 void pool_avx2(const float* x, const PoolLayout& in, float* y,
                                 const PoolLayout& out, const PoolWindow& w, int64_t group,
                                 int64_t begin, int64_t end) {
  pool_rows<Isa::Avx2>(x, in, y, out, w, group, begin, end);
}
void pool_generic(const float* x, const PoolLayout& in, float* y, const PoolLayout& out,
                  const PoolWindow& w, int64_t group, int64_t begin, int64_t end) {
  pool_rows<Isa::Generic>(x, in, y, out, w, group, begin, end);
}

// Rows [begin, end) of the (outer, inner) grid.
EMBER_INLINE void softmax_rows(const float* x, float* y, int64_t len, int64_t inner, int64_t begin,
                               int64_t end) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t r = begin; r < end; ++r) {
    const int64_t at = (r / inner) * len * inner + r % inner;
    bool bad = false, all_minus_inf = true;
    for (int64_t k = 0; k < len; ++k) {
      const float v = x[at + k * inner];
      bad |= !(v < kInf);  // NaN or +inf
      all_minus_inf &= v == -kInf;
    }
    if (bad || all_minus_inf) {
      for (int64_t k = 0; k < len; ++k) y[at + k * inner] = nan;
    }
  }
}

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

void softmax_rows(const float* x, float* y, int64_t rows, int64_t len, int threads) {
  const CpuIsa isa = cpu_isa();
  split(rows, rows * len * 8, threads, [&](int64_t begin, int64_t end) {
    const float* xb = x + begin * len;
    float* yb = y + begin * len;
    if (isa >= CpuIsa::Avx512) {
      softmax_rows_avx512(xb, yb, end - begin, len);
    } else if (isa >= CpuIsa::Avx2) {
      softmax_rows_avx2(xb, yb, end - begin, len);
    } else {
      softmax_rows_generic(xb, yb, end - begin, len);
    }
  });
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

void max_pool(const float* x, const PoolLayout& in, float* y, const PoolLayout& out,
              const PoolWindow& w, int threads) {
  // Channels that lie next to each other in both layouts are computed together.
  int64_t group = 1;
  const bool in_unit =
      (in.block > 1 && in.channel == 1) || (in.block == 1 && in.channel_block == 1);
  const bool out_unit =
      (out.block > 1 && out.channel == 1) || (out.block == 1 && out.channel_block == 1);
  if (in_unit && out_unit) {
    const int64_t run =
        std::min(in.block > 1 ? in.block : w.channels, out.block > 1 ? out.block : w.channels);
    group = run % 16 == 0 ? 16 : run % 8 == 0 ? 8 : 1;
    if (in.block > 1 && out.block > 1 && in.block != out.block) group = 1;
  }
  const int64_t rows = w.batch * ((w.channels + group - 1) / group) * w.out[0] * w.out[1];
  const int64_t taps = w.kernel[0] * w.kernel[1] * w.kernel[2];
  const int64_t work = rows * group * w.out[2] * taps;
  const CpuIsa isa = cpu_isa();
  split(rows, work, threads, [&](int64_t begin, int64_t end) {
    if (isa >= CpuIsa::Avx512) {
      pool_avx512(x, in, y, out, w, group, begin, end);
    } else if (isa >= CpuIsa::Avx2) {
      pool_avx2(x, in, y, out, w, group, begin, end);
    } else {
      pool_generic(x, in, y, out, w, group, begin, end);
    }
  });
}

void softmax_nan_rows(const float* x, float* y, int64_t outer, int64_t len, int64_t inner,
                      int threads) {
  split(outer * inner, outer * inner * len, threads,
        [&](int64_t begin, int64_t end) { softmax_rows(x, y, len, inner, begin, end); });
}

}  // namespace ember::cpu
