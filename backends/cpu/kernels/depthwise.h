// Ember's fp32 3x3 depthwise convolution (padding 1, stride 1 or 2) in channels-last (NHWC)
// layout: the depthwise pass of the fused inverted residual block (kernels/inverted_residual.h),
// and a step of its own for the depthwise convolutions of the blocks that are not fused.
//
//   Depthwise3x3 k(batch, h, w, c, stride, weight, bias, act, threads);   // packs the weights
//   k.run(src, dst);                      // NHWC [batch][h][w][c] -> [batch][oh][ow][c]
//
// oneDNN 2.6's depthwise kernel (brdgmm_dw) takes about 2.5 cycles a vector FMA on MobileNetV2's
// 14x14 and 7x7 layers in the model, and splits their few rows badly between two threads; this
// one loads each input column once for the three windows over it (1.7-2 cycles an FMA there)
// and splits rows between threads evenly (the row where two threads meet, by channels). AVX-512
// or AVX2 (kernels/simd_kernels.h): callers check own_kernels_supported() (kernels/policy.h) first.
// NaN passes through the clamp as NaN, as in PyTorch.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"

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
  // Both are copied, into `storage` (the heap where empty; it gives the bytes or throws).
  Depthwise3x3(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t stride, const float* weight,
               const float* bias, Clamp act, int threads, const Storage& storage = {});

  static bool supports(int64_t c, int64_t stride) {
    return c > 0 && c % 16 == 0 && (stride == 1 || stride == 2);
  }
  int64_t out_h() const { return out_h_; }
  int64_t out_w() const { return out_w_; }

  // src [batch][h][w][c] -> dst [batch][out_h][out_w][c]; they must not overlap. Reentrant.
  void run(const float* src, float* dst) const;
  // One output row, channels [c_begin, c_end) (multiples of 16), from the three input rows
  // window[ky] ([w][c], null in the padding) into out ([out_w][c]).
  void row(const float* const window[3], int64_t c_begin, int64_t c_end, float* out) const;

 private:
  void run_units(const float* src, float* dst, int64_t u0, int64_t u1) const;

  int64_t batch_, h_, w_, c_, stride_, out_h_, out_w_;
  Clamp act_;
  int threads_;
  Stored<float> w9_, bias_;  // [9][c], [c]
};

// The same convolution of quantized values, uint8 in and out (the int8 chain of a quantized
// MobileNet, onednn/quant_conv.cc: each value held as its int8 integer + 128), computed as
// PyTorch's reference computes it: the input dequantized, x = (q - zero point) * scale in float32;
// the weight dequantized, (q - 0) * scale[c]; the float convolution plus bias, then the clamp; then
// the result quantized, round_half_even(y * inv_scale) + zero point, saturated. Only the order
// of the float sums differs from ATen's. Rows are dequantized once each into a ring of three per
// thread, in the caller's working memory (scratch_bytes()). Faster than oneDNN 2.6's int8 depthwise
// (jit_int8: 2.5x on MobileNetV2's layers), and on AVX2 as on AVX-512. Where it can (in_integers():
// VNNI, or weights within [-64, 63]) it runs in integers instead: each input row as quads (an
// output pixel's left, centre and right byte of a channel, Kernels::quads_row), so that a row's
// three taps are one four-product sum (vpdpbusd; pmaddubsw and pmaddwd on AVX2); the sums exact in
// int32, requantized as QuantPointwise's are (Requantize, kernels/quant_gemm.h: 1 / out scale
// folded into the multiplier, so a result can differ from the float path's only at a tie). With
// VNNI 1.6x the float path's speed on MobileNetV2's stride-1 layers, 2.2x at stride 2; on AVX2
// (7-bit weights) 1.2-1.3x and 2.0x (bench/cpu_kernels_bench.cc).
class QuantDepthwise3x3 {
 public:
  // The input's dequantize, x = (q - zero_point) * scale, and the output's quantize,
  // round_half_even(y * inv_scale) + zero_point (inv_scale = (float)(1 / scale), PyTorch's); each
  // q held as q + 128.
  struct Quant {
    float scale, zero_point;
  };
  struct Requant {
    float inv_scale, zero_point;
  };
  // weight: int8 [c, 1, 3, 3] with one scale a channel; bias [c] or null. Copied into `storage`
  // (as Depthwise3x3's).
  QuantDepthwise3x3(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t stride,
                    const int8_t* weight, const float* weight_scales, const float* bias, Clamp act,
                    Quant in, Requant out, int threads, const Storage& storage = {});

  // Whether it runs in integers with this weight ([c, 1, 3, 3]) on this CPU: with VNNI, else
  // with weights within [-64, 63] (pmaddubsw's pairs cannot saturate).
  static bool in_integers(const int8_t* weight, int64_t c);

  int64_t out_h() const { return float_.out_h(); }
  int64_t out_w() const { return float_.out_w(); }

  // The working memory run() takes: per thread, a ring of three rows (and an output row).
  size_t scratch_bytes() const;
  // src [batch][h][w][c] -> dst [batch][out_h][out_w][c], uint8; `scratch`: scratch_bytes() on a
  // cache line. Reentrant, each caller with its own scratch.
  void run(const uint8_t* src, uint8_t* dst, void* scratch) const;

 private:
  // A thread's share of the working memory, in 4-byte values.
  int64_t per_thread() const;
  void run_units(const uint8_t* src, uint8_t* dst, int64_t u0, int64_t u1, float* ring,
                 float* out_row) const;
  // The same units in integers (in_integers()): a ring of three rows of quads
  // (Kernels::quads_row).
  void run_integers(const uint8_t* src, uint8_t* dst, int64_t u0, int64_t u1, int32_t* ring) const;

  Depthwise3x3 float_;  // the float convolution of the dequantized values
  int64_t batch_, h_, w_, c_, stride_;
  Quant in_;
  Requant out_;
  int threads_;
  // In integers: the weights' quads [3][c], the requantization, the padding's quads
  // [w][c]; per thread a ring of three rows of quads. In floats: per thread three input rows,
  // then an output row.
  bool integers_ = false;
  Stored<int32_t> w4_, pad_row_;
  Requantize rq_;
};

}  // namespace ember::cpu
