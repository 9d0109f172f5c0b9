// An int8 convolution of any kernel size, stride, padding and dilation (one group) on Ember's int8
// 1x1 kernel (QuantPointwise, kernels/quant_gemm.h): each block of output pixels' receptive fields
// gathered into rows of bytes (im2col: tap by tap, each tap's channels side by side, as the
// channels-last source holds them), then those rows by the weight's kh * kw * c columns, every sum
// exact in int32 and requantized as QuantPointwise's are. It exists for the full-range weights
// ExecuTorch's XNNPACKQuantizer writes on a CPU without VNNI, where oneDNN 2.6's int8 kernels
// saturate (pmaddubsw's 16-bit pairs) and the convolution would otherwise run in float on the
// dequantized weights: QuantPointwise's pairs form (vpmaddwd) is exact on any weights.
//
//   QuantGatheredConv conv = QuantGatheredConv::pack(shape, q, scales, bias, n, ...);
//   conv.run(threads, src, dst, scratch);   // scratch: conv.scratch_bytes(threads)
//
// A padded tap reads the source's zero point (the byte zero point + 128), whose (x - zero point)
// is 0, as the reference's zero padding of the dequantized values is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"

namespace ember::cpu {

class QuantGatheredConv {
 public:
  // The source [batch][h][w][c] and output [batch][out_h][out_w][n], channels-last uint8 (each
  // value its int8 integer + 128); pad_h, pad_w: the rows and columns of padding before the first
  // (top, left); dilation 1 for none.
  struct Shape {
    int64_t batch = 1, h = 1, w = 1, c = 1;
    int64_t out_h = 1, out_w = 1;
    int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    int64_t dilation_h = 1, dilation_w = 1;
  };

  // The weight's order: PyTorch's [n][c][kh][kw], or channels-last [n][kh][kw][c] (ExecuTorch's
  // XNNPACK filters; the gathered rows' own order).
  enum class Order { Oihw, Ohwi };

  // q: the weight in `order` with one scale an output channel; the rest as
  // QuantPointwise::pack's. Empty (empty()) where the storage gives none.
  static QuantGatheredConv pack(const Shape& shape, const int8_t* q, Order order,
                                const float* weight_scales, const float* bias, int64_t n,
                                float in_scale, float in_zero_point, Clamp act, float out_inv,
                                float out_zero_point, const Storage& storage = {},
                                QuantPointwise::Form form = QuantPointwise::Form::ForThisCpu);

  bool empty() const { return w_.rq.empty(); }
  const Shape& shape() const { return shape_; }
  int64_t n() const { return w_.w.n; }
  // The gathered row's bytes: kh * kw * c rounded up to 4 (the last ones 0, by weights 0).
  int64_t k() const { return w_.w.k; }
  bool paired() const { return w_.paired; }
  // The weight as the 1x1 kernel's [n][k()], and its requantization.
  const QuantPointwise& matrix() const { return w_; }

  // The working memory run() takes on up to `threads` threads: each a block of gathered rows.
  size_t scratch_bytes(int threads) const;
  // src -> dst (shape()); `scratch`: scratch_bytes(threads) on a cache line. Reentrant, each
  // caller with its own scratch. Ember's SIMD kernels (callers check own_kernels_supported()).
  void run(int threads, const uint8_t* src, uint8_t* dst, void* scratch) const;

  // Rows [row_begin, row_end) of the gathered matrix (output pixels in order) into `rows`, k()
  // bytes a row: the im2col run() multiplies. Exposed for the tests.
  void gather(const uint8_t* src, int64_t row_begin, int64_t row_end, uint8_t* rows) const;

 private:
  int64_t block_rows() const;

  Shape shape_;
  uint8_t pad_ = 128;  // the source's zero point + 128
  QuantPointwise w_;
};

}  // namespace ember::cpu
