#include "backends/cpu/kernels/resize.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace ember::cpu {

std::vector<LinearTap> linear_taps(int64_t in, int64_t out, bool align_corners) {
  std::vector<LinearTap> taps(static_cast<size_t>(out));
  const float ratio =
      align_corners ? (out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f)
                    : static_cast<float>(in) / static_cast<float>(out);
  for (int64_t dst = 0; dst < out; ++dst) {
    LinearTap& t = taps[static_cast<size_t>(dst)];
    if (in == out) {  // ATen copies
      t = {dst, dst, 1.f, 0.f};
      continue;
    }
    float src = align_corners ? ratio * static_cast<float>(dst)
                              : ratio * (static_cast<float>(dst) + 0.5f) - 0.5f;
    if (!align_corners && src < 0.f) src = 0.f;
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    const float l1 = std::min(std::max(src - static_cast<float>(i0), 0.f), 1.f);
    t = {i0, i0 < in - 1 ? i0 + 1 : i0, 1.f - l1, l1};
  }
  return taps;
}

std::vector<int64_t> nearest_taps(int64_t in, int64_t out) {
  std::vector<int64_t> taps(static_cast<size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t dst = 0; dst < out; ++dst) {
    const auto src = static_cast<int64_t>(std::floor(scale * static_cast<float>(dst)));
    taps[static_cast<size_t>(dst)] = std::min(src, in - 1);
  }
  return taps;
}

void resize_bilinear(const float* x, float* y, const ResizeShape& s, const LinearTap* h,
                     const LinearTap* w, int threads) {
  const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t p = 0; p < s.planes; ++p) {
    const float* src = x + p * in_plane;
    float* dst = y + p * out_plane;
    for (int64_t i = 0; i < s.out_h; ++i) {
      const LinearTap th = h[i];
      const float* r0 = src + th.i0 * s.in_w;
      const float* r1 = src + th.i1 * s.in_w;
      float* out = dst + i * s.out_w;
      for (int64_t j = 0; j < s.out_w; ++j) {
        const LinearTap tw = w[j];
        // Each product rounded before its sum, as ATen's float arithmetic (no contraction).
        const float p00 = r0[tw.i0] * tw.l0, p01 = r0[tw.i1] * tw.l1;
        const float p10 = r1[tw.i0] * tw.l0, p11 = r1[tw.i1] * tw.l1;
        const float t0 = p00 + p01, t1 = p10 + p11;
        const float q0 = t0 * th.l0, q1 = t1 * th.l1;
        out[j] = q0 + q1;
      }
    }
  }
}

void resize_nearest(const float* x, float* y, const ResizeShape& s, const int64_t* h,
                    const int64_t* w, int threads) {
  const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t p = 0; p < s.planes; ++p) {
    const float* src = x + p * in_plane;
    float* dst = y + p * out_plane;
    for (int64_t i = 0; i < s.out_h; ++i) {
      const float* row = src + h[i] * s.in_w;
      float* out = dst + i * s.out_w;
      for (int64_t j = 0; j < s.out_w; ++j) out[j] = row[w[j]];
    }
  }
}

}  // namespace ember::cpu
