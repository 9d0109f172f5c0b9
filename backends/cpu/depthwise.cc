#include "backends/cpu/depthwise.h"

#include <omp.h>

#include <algorithm>

#include "backends/cpu/simd_kernels.h"

namespace ember::cpu {

void depthwise_row(int64_t stride, const float* const rows[3], int64_t ld, int64_t w, int64_t wo,
                   const float* wts, const float* bias, int64_t cpad, int64_t c_begin,
                   int64_t c_end, float* out, Clamp act) {
  simd::kernels()->depthwise_row(stride, rows, ld, w, wo, wts, bias, cpad, c_begin, c_end, out,
                                 act);
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
  const int64_t vectors = c_ / kGroup, units = batch_ * out_h_ * vectors;
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
  const int64_t vectors = c_ / kGroup, row_in = w_ * c_, row_out = out_w_ * c_;
  for (int64_t r = u0 / vectors; r * vectors < u1; ++r) {
    const int64_t img = r / out_h_, oy = r % out_h_;
    const float* in = src + img * h_ * row_in;
    const float* window[3];
    for (int ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy * stride_ - 1 + ky;
      window[ky] = iy < 0 || iy >= h_ ? nullptr : in + iy * row_in;
    }
    const int64_t c_begin = (std::max(u0, r * vectors) - r * vectors) * kGroup;
    const int64_t c_end = (std::min(u1, (r + 1) * vectors) - r * vectors) * kGroup;
    depthwise_row(stride_, window, c_, w_, out_w_, w9_.data(), bias_.data(), c_, c_begin, c_end,
                  dst + r * row_out, act_);
  }
}

}  // namespace ember::cpu
