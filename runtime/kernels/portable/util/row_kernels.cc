#include "runtime/kernels/portable/util/row_kernels.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/kernels/portable/util/normalization.h"

// Why target clones: the library is built for the baseline ISA (SSE2 on x86-64), a quarter of an
// AVX-512 core's width. These rows are the inner loops of softmax and layer norm, so, like the
// GEMM (gemm.cc), they are also compiled for wider ISAs: GCC and clang emit one copy per target
// and an ifunc resolver that picks, when the library is loaded, the widest one whose CPU features
// are present (features, not "arch=" CPU models, which a newer CPU would not match). The code stays
// plain C++. (The resolver is an ifunc, hence glibc.) ThreadSanitizer builds take the baseline
// copy: an ifunc resolver runs while the program is relocated, before TSan's runtime is set up,
// and its instrumented code crashes there.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMBER_NO_TARGET_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define EMBER_NO_TARGET_CLONES 1
#endif
#if defined(__x86_64__) && defined(__GLIBC__) && !defined(EMBER_NO_TARGET_CLONES)
#define EMBER_ROW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define EMBER_ROW_CLONES
#endif

// The helpers below return 64-byte vectors; they are internal (and inlined), so the compilers'
// note that such values have no stable ABI without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

// The helpers are always inlined, so that each ISA clone of the row kernels compiles them for its
// own ISA (a call would run the baseline copy).
#define EMBER_ROW_INLINE [[gnu::always_inline]] inline

namespace ember {
namespace {

// Sixteen lanes in GCC/clang vector extensions (as the GEMM uses): the compiler maps them on the
// target's registers (4 SSE, 2 AVX2 or 1 AVX-512 register), with no intrinsics.
constexpr int kW = 16;
typedef float VecF __attribute__((vector_size(kW * sizeof(float))));
typedef int32_t VecI __attribute__((vector_size(kW * sizeof(int32_t))));
typedef double VecD __attribute__((vector_size(kW * sizeof(double))));

EMBER_ROW_INLINE VecF splat(float v) { return VecF{} + v; }
EMBER_ROW_INLINE VecF load(const float* p) {
  VecF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// The first `count` (< kW) elements of p, the rest `fill`.
EMBER_ROW_INLINE VecF load_part(const float* p, int64_t count, float fill) {
  float tmp[kW];
  for (int l = 0; l < kW; ++l) tmp[l] = l < count ? p[l] : fill;
  return load(tmp);
}
EMBER_ROW_INLINE void store(float* p, const VecF& v) { std::memcpy(p, &v, sizeof v); }
EMBER_ROW_INLINE void store_part(float* p, const VecF& v, int64_t count) {
  float tmp[kW];
  store(tmp, v);
  for (int64_t l = 0; l < count; ++l) p[l] = tmp[l];
}

// exp(x) for x <= 0 (softmax's shifted inputs; no NaN): x = k ln2 + r with |r| <= ln2 / 2, exp(r)
// by its Taylor series to degree 7 (truncation below 1e-8 relative, under float's rounding), 2^k
// built in the exponent bits. Results below the smallest normal float (x < -87) are flushed to 0,
// less than 2e-38 from exp(x); exp(-inf) is 0.
EMBER_ROW_INLINE VecF exp_nonpositive(const VecF& x) {
  constexpr float kLog2e = 1.44269504088896341f;
  // ln 2 in two parts; the high part has 9 significant bits, so k * kLn2Hi is exact.
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440054690583e-4f;
  // Adding and subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer.
  constexpr float kRound = 12582912.0f;
  constexpr float kLowest = -87.0f;
  const VecI tiny = x < kLowest;
  const VecF xc = tiny ? splat(kLowest) : x;
  const VecF k = (xc * kLog2e + kRound) - kRound;
  const VecF r = (xc - k * kLn2Hi) - k * kLn2Lo;
  VecF p = splat(1.0f / 5040);
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const VecI bits = (__builtin_convertvector(k, VecI) + 127) << 23;
  return tiny ? splat(0.0f) : p * std::bit_cast<VecF>(bits);
}

// Max of a row with no NaN or +inf checked by the caller's result: NaN if the row has a NaN.
EMBER_ROW_INLINE float row_max(const float* x, int64_t n) {
  const float lowest = -std::numeric_limits<float>::infinity();
  VecF m = splat(lowest);
  VecI nan = VecI{};
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const VecF v = load(x + i);
    nan |= v != v;
    m = v > m ? v : m;
  }
  if (i < n) {
    const VecF v = load_part(x + i, n - i, lowest);
    nan |= v != v;
    m = v > m ? v : m;
  }
  float out = lowest;
  for (int l = 0; l < kW; ++l) {
    if (nan[l] != 0) return std::numeric_limits<float>::quiet_NaN();
    out = m[l] > out ? m[l] : out;
  }
  return out;
}

// Sum over the row of exp(x - max) in double, for a finite max; with kStore, y = exp(x - max).
template <bool kStore>
EMBER_ROW_INLINE double exp_sum(const float* x, float* y, int64_t n, float max) {
  VecD sum = VecD{};
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const VecF e = exp_nonpositive(load(x + i) - max);
    if constexpr (kStore) store(y + i, e);
    sum += __builtin_convertvector(e, VecD);
  }
  if (i < n) {  // the padding is -inf, whose exp is 0
    const VecF e =
        exp_nonpositive(load_part(x + i, n - i, -std::numeric_limits<float>::infinity()) - max);
    if constexpr (kStore) store_part(y + i, e, n - i);
    sum += __builtin_convertvector(e, VecD);
  }
  double total = 0;
  for (int l = 0; l < kW; ++l) total += sum[l];
  return total;
}

}  // namespace

EMBER_ROW_CLONES
void softmax_row_f32(const float* x, float* y, int64_t n, bool log) {
  if (n <= 0) return;
  const float max = row_max(x, n);
  // A NaN in the row, +inf (inf - inf) or a row of -inf (-inf + inf) make every shifted value or
  // the sum NaN, so the whole row is NaN (as in the strided path and ATen).
  if (!std::isfinite(max)) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  if (log) {
    const float log_sum = static_cast<float>(std::log(exp_sum<false>(x, y, n, max)));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - max) - log_sum;
  } else {
    const float sum = static_cast<float>(exp_sum<true>(x, y, n, max));
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] / sum;
  }
}

EMBER_ROW_CLONES
void layer_norm_row_f32(const float* x, float* y, int64_t n, const float* w, const float* b,
                        float eps, float* mean, float* rstd) {
  const RowStats s = row_stats(n, [x](int64_t i) { return x[i]; });
  const double m = s.mean, r = s.rstd(eps);
  // The same arithmetic as the strided path, with 1 and 0 for a missing weight and bias.
  if (w != nullptr && b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - m) * r * w[i] + b[i]);
  } else if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - m) * r * w[i] + 0.0);
  } else if (b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - m) * r + b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - m) * r + 0.0);
  }
  *mean = static_cast<float>(m);
  *rstd = static_cast<float>(r);
}

}  // namespace ember
