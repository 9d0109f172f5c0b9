#include "backends/cpu/depthwise.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "backends/cpu/avx512.h"

namespace ember::cpu {
namespace {

using avx512::clamp;
using avx512::kVec;

// N output columns ox.. of a depthwise row, for channels c0..c0 + 15. rows[ky] point at input
// column 0 of a row of w columns; L: the first column's window starts in the left padding
// (ox == 0), R: the last column's window ends in the right padding. Each input column is loaded
// once and feeds every output column whose window covers it (3 of them at stride 1): N + 2
// loads a row of taps for 3 N FMAs.
template <int S, int N, bool L, bool R>
EMBER_AVX512 inline void depthwise_n(const float* const rows[3], int64_t ld, int64_t ox,
                                     const __m512 wv[9], __m512 bv, int64_t c0, float* out,
                                     int64_t cpad, __m512 lo, __m512 hi) {
  constexpr int kIn = (N - 1) * S + 3;  // input columns ox * S - 1 .. (ox + N - 1) * S + 1
  __m512 acc[N];
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j) acc[j] = bv;
  for (int ky = 0; ky < 3; ++ky) {
    if (rows[ky] == nullptr) continue;
    // The columns past the padding (L: column -1; R: column w), a pointer bumped along them
    // (indexing each load from the row start measured a quarter slower: gcc keeps ten offsets).
    const float* q = rows[ky] + (ox * S - (L ? 0 : 1)) * ld + c0;
#pragma GCC unroll 32
    for (int i = L ? 1 : 0; i < (R ? kIn - 1 : kIn); ++i) {
      const __m512 v = _mm512_loadu_ps(q);
      q += ld;
#pragma GCC unroll 3
      for (int kx = 0; kx < 3; ++kx) {
        const int d = i - kx;  // j * S for the output column j this tap of it reads
        if (d >= 0 && d % S == 0 && d / S < N) {
          acc[d / S] = _mm512_fmadd_ps(v, wv[ky * 3 + kx], acc[d / S]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j) _mm512_storeu_ps(out + (ox + j) * cpad + c0, clamp(acc[j], lo, hi));
}

// depthwise_n for a run-time n <= N.
template <int S, bool L, bool R, int N = 8>
EMBER_AVX512 void depthwise_upto(int64_t n, const float* const rows[3], int64_t ld, int64_t ox,
                                 const __m512 wv[9], __m512 bv, int64_t c0, float* out,
                                 int64_t cpad, __m512 lo, __m512 hi) {
  if constexpr (N > 1) {
    if (n < N) {
      depthwise_upto<S, L, R, N - 1>(n, rows, ld, ox, wv, bv, c0, out, cpad, lo, hi);
      return;
    }
  }
  depthwise_n<S, N, L, R>(rows, ld, ox, wv, bv, c0, out, cpad, lo, hi);
}

template <int S>
EMBER_AVX512 void depthwise_row_s(const float* const rows[3], int64_t ld, int64_t w, int64_t wo,
                                  const float* wts, const float* bias, int64_t cpad,
                                  int64_t c_begin, int64_t c_end, float* out, Clamp act) {
  const __m512 lo = _mm512_set1_ps(act.lo), hi = _mm512_set1_ps(act.hi);
  // A channel block at a time, its 9 weight vectors in registers, eight columns a step (eight
  // independent sums hide the FMA latency). (Finishing a group of columns for every channel
  // before the next, reloading the weights, measured a third slower.)
  for (int64_t c0 = c_begin; c0 < c_end; c0 += kVec) {
    __m512 wv[9];
    for (int t = 0; t < 9; ++t) wv[t] = _mm512_loadu_ps(wts + t * cpad + c0);
    const __m512 bv = _mm512_loadu_ps(bias + c0);
    for (int64_t ox = 0; ox < wo; ox += 8) {
      const int64_t n = std::min<int64_t>(8, wo - ox);
      const bool left = ox == 0, right = (ox + n - 1) * S + 1 >= w;
      if (!left && !right) {
        if (n == 8) {
          depthwise_n<S, 8, false, false>(rows, ld, ox, wv, bv, c0, out, cpad, lo, hi);
        } else {
          depthwise_upto<S, false, false>(n, rows, ld, ox, wv, bv, c0, out, cpad, lo, hi);
        }
      } else if (left && !right) {
        depthwise_upto<S, true, false>(n, rows, ld, ox, wv, bv, c0, out, cpad, lo, hi);
      } else if (!left) {
        depthwise_upto<S, false, true>(n, rows, ld, ox, wv, bv, c0, out, cpad, lo, hi);
      } else {
        depthwise_upto<S, true, true>(n, rows, ld, ox, wv, bv, c0, out, cpad, lo, hi);
      }
    }
  }
}

}  // namespace

void depthwise_row(int64_t stride, const float* const rows[3], int64_t ld, int64_t w, int64_t wo,
                   const float* wts, const float* bias, int64_t cpad, int64_t c_begin,
                   int64_t c_end, float* out, Clamp act) {
  if (stride == 1) {
    depthwise_row_s<1>(rows, ld, w, wo, wts, bias, cpad, c_begin, c_end, out, act);
  } else {
    depthwise_row_s<2>(rows, ld, w, wo, wts, bias, cpad, c_begin, c_end, out, act);
  }
}

Depthwise3x3::Depthwise3x3(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t stride,
                           const float* weight, const float* bias, Clamp act, int threads)
    : batch_(batch),
      h_(h),
      w_(w),
      c_(c),
      stride_(stride),
      out_h_((h - 1) / stride + 1),  // (h + 2 - 3) / stride + 1
      out_w_((w - 1) / stride + 1),
      act_(act),
      threads_(std::max(threads, 1)),
      w9_(9 * c),
      bias_(c, 0.f) {
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int t = 0; t < 9; ++t) w9_[t * c + ch] = weight[ch * 9 + t];
    if (bias != nullptr) bias_[ch] = bias[ch];
  }
}

// Threads split the output rows, as the convolution before wrote them (a split by channels,
// which reads across the other core's rows, measured a third slower at 2 threads); the row
// where two threads meet is split by channels, so 7 rows go 3.5 and 3.5.
void Depthwise3x3::run(const float* src, float* dst) const {
  const int64_t vectors = c_ / kVec, units = batch_ * out_h_ * vectors;
  const int threads = static_cast<int>(std::min<int64_t>(threads_, units));
  if (threads <= 1) {
    run_units(src, dst, 0, units);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    run_units(src, dst, units * t / n, units * (t + 1) / n);
  }
}

// Units [u0, u1) of (output row of the batch, channel vector), in that order.
void Depthwise3x3::run_units(const float* src, float* dst, int64_t u0, int64_t u1) const {
  const int64_t vectors = c_ / kVec, row_in = w_ * c_, row_out = out_w_ * c_;
  for (int64_t r = u0 / vectors; r * vectors < u1; ++r) {
    const int64_t img = r / out_h_, oy = r % out_h_;
    const float* in = src + img * h_ * row_in;
    const float* window[3];
    for (int ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy * stride_ - 1 + ky;
      window[ky] = iy < 0 || iy >= h_ ? nullptr : in + iy * row_in;
    }
    const int64_t c_begin = (std::max(u0, r * vectors) - r * vectors) * kVec;
    const int64_t c_end = (std::min(u1, (r + 1) * vectors) - r * vectors) * kVec;
    depthwise_row(stride_, window, c_, w_, out_w_, w9_.data(), bias_.data(), c_, c_begin, c_end,
                  dst + r * row_out, act_);
  }
}

}  // namespace ember::cpu
