// The NaN-exact softmax kernels (kernels/nan_exact.h): whole rows along the last dim as ATen
// computes them, and the rows of oneDNN's softmax that ATen makes NaN.
#include "backends/cpu/kernels/nan_exact.h"

#include <limits>

#include "backends/cpu/kernels/nan_exact_internal.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu {
namespace {

using nan_exact_internal::exp_clamped;
using nan_exact_internal::kInf;
using nan_exact_internal::split;

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

void softmax_nan_rows(const float* x, float* y, int64_t outer, int64_t len, int64_t inner,
                      int threads) {
  split(outer * inner, outer * inner * len, threads,
        [&](int64_t begin, int64_t end) { softmax_rows(x, y, len, inner, begin, end); });
}

}  // namespace ember::cpu
