// PyTorch's upsample_bilinear2d (align_corners true and false) and upsample_nearest2d of dense
// NCHW floats, for output sizes given (no scale factors), with ATen's source positions and
// weights computed in float as ATen computes them. The positions and weights along each dim are
// computed once (linear_taps, nearest_taps) and the kernels read them at every call.
//
//   const std::vector<LinearTap> h = linear_taps(in_h, out_h, false), w = linear_taps(...);
//   resize_bilinear(x, y, {planes, in_h, in_w, out_h, out_w}, h.data(), w.data(), threads);
#pragma once

#include <cstdint>
#include <vector>

namespace ember::cpu {

struct ResizeShape {
  int64_t planes = 0;  // N * C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};

// Output index -> the two input indices it reads and their weights (l0 + l1 = 1 but for rounding).
struct LinearTap {
  int64_t i0 = 0, i1 = 0;
  float l0 = 1, l1 = 0;
};

// ATen's taps of a linear resize of `in` positions to `out`: align_corners maps corner to corner
// (source = dst * (in - 1) / (out - 1)); otherwise half pixels, source = max((dst + 0.5) * in / out
// - 0.5, 0). in, out >= 1.
std::vector<LinearTap> linear_taps(int64_t in, int64_t out, bool align_corners);

// ATen's `nearest` source index of each of `out` positions: min(floor(dst * (float)(in / out)),
// in - 1).
std::vector<int64_t> nearest_taps(int64_t in, int64_t out);

// y[p][i][j] = h.l0 * (w.l0 * x[p][h.i0][w.i0] + w.l1 * x[p][h.i0][w.i1]) + h.l1 * (...h.i1...),
// each product rounded (the portable kernel's arithmetic; ATen's vector loops fuse some of it:
// within a few ulps), NaN and infinities spread as ATen's do (a weight of 0 times inf is NaN).
// Planes are split between `threads` OpenMP threads.
void resize_bilinear(const float* x, float* y, const ResizeShape& s, const LinearTap* h,
                     const LinearTap* w, int threads);

// y[p][i][j] = x[p][h[i]][w[j]]: the bits copied.
void resize_nearest(const float* x, float* y, const ResizeShape& s, const int64_t* h,
                    const int64_t* w, int threads);

}  // namespace ember::cpu
