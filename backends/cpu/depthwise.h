// Ember's fp32 3x3 depthwise convolution (padding 1, stride 1 or 2) in channels-last (NHWC)
// layout: the depthwise pass of the fused inverted residual block (inverted_residual.h), and a
// step of its own for the depthwise convolutions of the blocks that are not fused.
//
//   Depthwise3x3 k(batch, h, w, c, stride, weight, bias, act, threads);   // packs the weights
//   k.run(src, dst);                      // NHWC [batch][h][w][c] -> [batch][oh][ow][c]
//
// oneDNN 2.6's depthwise kernel (brdgmm_dw) takes about 2.5 cycles a vector FMA on MobileNetV2's
// 14x14 and 7x7 layers in the model, and splits their few rows badly between two threads; this
// one loads each input column once for the three windows over it (1.7-2 cycles an FMA there)
// and splits rows between threads evenly (the row where two threads meet, by channels). AVX-512
// or AVX2 (simd_kernels.h): callers check own_kernels_supported() (packed_gemm.h) first. NaN
// passes through the clamp as NaN, as in PyTorch.
#pragma once

#include <cstdint>

#include "backends/cpu/packed_gemm.h"

namespace ember::cpu {

// One output row of the convolution for channels [c_begin, c_end) (multiples of 16): out[ox][c],
// a pixel every `cpad` floats. rows[ky]: input row oy * stride - 1 + ky, [w][ld] floats, or null
// in the padding rows. wts: [9][cpad]; bias: [cpad]; out: [wo][cpad].
void depthwise_row(int64_t stride, const float* const rows[3], int64_t ld, int64_t w, int64_t wo,
                   const float* wts, const float* bias, int64_t cpad, int64_t c_begin,
                   int64_t c_end, float* out, Clamp act);

class Depthwise3x3 {
 public:
  // c: a multiple of 16 (supports()); weight [c, 1, 3, 3] (PyTorch's layout); bias [c] or null.
  // Both are copied.
  Depthwise3x3(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t stride, const float* weight,
               const float* bias, Clamp act, int threads);

  static bool supports(int64_t c, int64_t stride) {
    return c > 0 && c % 16 == 0 && (stride == 1 || stride == 2);
  }
  int64_t out_h() const { return out_h_; }
  int64_t out_w() const { return out_w_; }

  // src [batch][h][w][c] -> dst [batch][out_h][out_w][c]; they must not overlap. Reentrant.
  void run(const float* src, float* dst) const;

 private:
  void run_units(const float* src, float* dst, int64_t u0, int64_t u1) const;

  int64_t batch_, h_, w_, c_, stride_, out_h_, out_w_;
  Clamp act_;
  int threads_;
  AlignedFloats w9_, bias_;  // [9][c], [c]
};

}  // namespace ember::cpu
