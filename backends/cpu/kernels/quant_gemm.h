// A linear layer by a weight of 4- or 8-bit integers quantized by groups along each row (torchao's
// 8da4w, 8da8w and weight-only int4/int8 linears;
// quantized_decomposed::dequantize_per_channel_group in the program): Ember's own kernel of the cpu
// backend, so the weight stays as small as its integers (half a byte or one byte a weight, against
// four) and a matrix-vector product, which streams the whole weight from memory each call, reads an
// eighth or a quarter of float32's bytes.
//
//   QuantPackedMatrix b = QuantPackedMatrix::pack(q, scales, zeros, bias, k, n, group, bits);
//   quant_gemm_threads(threads, m, b, a, lda, c, ldc);   // c [m][n] = a [m][k] W^T + bias
//
// and its integer form for a dynamically quantized input (8da: DotPackedMatrix, DotRows, below).
//
// W's element (j, i) is (q[j][i] - zero[j][i / group]) * scale[j][i / group], as PyTorch's
// dequantize computes it. The kernel sums x (q - zero) over a group (the difference exact in
// float32), then multiplies by the group's scale, in float32 with fused multiply-adds: the same
// products as ATen's matmul by the dequantized weight, rounded in another order, so the result is
// the reference's to float32 rounding (tested to 1e-5 against ATen).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/cpu/kernels/policy.h"

namespace ember::cpu {

// Round half to even, as PyTorch's round, for |t| <= 2^22 (callers clamp first): the float
// addition of 1.5 * 2^23 and back. libm's nearbyintf is not inlined: a call an element cost 85% of
// an int8 MobileNetV2, and most of a Llama 8da4w prefill.
inline float round_half_even(float t) { return (t + 0x1.8p23f) - 0x1.8p23f; }

// PyTorch's dequantize of a weight quantized per output channel (zero points 0), as the
// reference's float weight: out[i] = q[i] * scales[i / per], `per` values a channel.
inline void dequantize_per_channel(const int8_t* q, const float* scales, int64_t count, int64_t per,
                                   float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(q[i]) * scales[i / per];
}

// PyTorch's quantize to int8's grid, as a float: clamp(round(x * inv) + zp, -128, 127); NaN gives
// 0, as PyTorch's conversion of NaN to int8 does (the clamp to +-512 first changes nothing the
// final clamp keeps). Branch-free, so loops of it vectorize.
inline float quantize_int8(float x, float inv, float zp) {
  const float t = x * inv;
  const float c = t < -512.f ? -512.f : t > 512.f ? 512.f : t;  // NaN stays NaN
  float q = round_half_even(c) + zp;
  q = q < -128.f ? -128.f : q > 127.f ? 127.f : q;
  return t == t ? q : 0.f;
}

struct QuantPackedMatrix {
  int64_t k = 0, n = 0, group = 0, bits = 8;
  int64_t panels = 0;  // of kGroup columns, the last zero-padded
  // Panel p's integers: bits 8: [k][kGroup] int8; bits 4: [k / 2][kGroup] bytes, each holding
  // rows 2i (low nibble) and 2i + 1 (high nibble) of a column, as two's complement nibbles.
  Stored<int8_t> data;
  Stored<float> scales;  // [panels][k / group][kGroup]
  Stored<float> zeros;   // the same, or empty where every zero point is 0
  Stored<float> bias;    // [panels * kGroup], zero-padded

  int64_t groups() const { return k / group; }
  int64_t panel_bytes() const { return k * kGroup * bits / 8; }

  // q: [n][k] integers in [-8, 7] (bits 4) or [-128, 127]; scales, zeros: [n][k / group] (zeros
  // null: all 0); bias: [n] or null. k % group == 0; for bits 4, group is even. The arrays
  // come from `storage` (where it gives none, the result is empty: data.empty()).
  static QuantPackedMatrix pack(const int8_t* q, const float* scales, const float* zeros,
                                const float* bias, int64_t k, int64_t n, int64_t group,
                                int64_t bits, const Storage& storage = {});
};

// c = a W^T + bias for the panels [panel_begin, panel_end) (all by default), a [m][k] with row
// stride lda, c [m][n] with ldc. Ember's SIMD kernels where own_kernels_supported(), else plain
// loops (the same arithmetic).
void quant_gemm(int64_t m, const QuantPackedMatrix& b, const float* a, int64_t lda, float* c,
                int64_t ldc, int64_t panel_begin = 0, int64_t panel_end = -1);

// The same on up to `threads` OpenMP threads, split by panels.
void quant_gemm_threads(int threads, int64_t m, const QuantPackedMatrix& b, const float* a,
                        int64_t lda, float* c, int64_t ldc);

// The linear of a dynamically quantized activation (torchao's 8da4w, 8da8w) in integers: rows of
// int8 integers xq with one zero point and scale a row, the input (xq - zero) * scale, by a 4- or
// 8-bit weight of zero points 0. Within a group the sum of (xq - zero) q is exact in int32, times
// the weight's scale in float32; the row's sum times its scale, plus the bias.
struct DotPackedMatrix {
  int64_t k = 0, n = 0, group = 0, bits = 4;
  int64_t panels = 0;  // of kGroup columns
  // bits 4: panel p, rows 8o .. 8o + 7: kGroup columns of 4 bytes, byte j holding q + 8 of row
  // 8o + j (low nibble) and of row 8o + 4 + j (high nibble): each column's four rows side by
  // side, as pmaddubsw pairs them. 8 rows a 64-byte line, k / 2 * kGroup bytes a panel.
  // bits 8 (8da8w): rows 4o .. 4o + 3 of a column as its 4 bytes, q itself; the activation is
  // the unsigned operand, xq + 128: one vpdpbusd (VNNI: u8 x s8 products summed in 32 bits).
  // Without VNNI pmaddubsw adds products in 16-bit pairs, which full-range bytes would saturate:
  // where every q lies in [-127, 127] (`symmetric`), |xq| by q with xq's sign (pairs at most
  // 2 * 128 * 127), else the two nibbles of xq + 128 in two pmaddubsw (pairs at most
  // 2 * 15 * 128). k * kGroup bytes a panel.
  Stored<uint8_t> data;
  bool symmetric = false;  // bits 8: no q is -128
  Stored<int32_t> sums;    // bits 8: [panels][groups][kGroup], sum of q (bits 4: none; the
                           // kernel sums the nibbles it loads)
  Stored<float> scales;    // [panels][groups][kGroup]
  Stored<float> bias;      // [panels * kGroup]

  int64_t groups() const { return k / group; }
  int64_t panel_bytes() const { return bits == 4 ? k / 2 * kGroup : k * kGroup; }
  // The bits a weight fits, or 0: zero points 0, and integers in [-8, 7] with k and group
  // multiples of 8 (4), or any with multiples of 4 (8).
  static int fits(const int8_t* q, const float* zeros, int64_t k, int64_t n, int64_t group);
  // q: [n][k]; scales: [n][k / group]; bias: [n] or null; bits from fits(). The arrays come
  // from `storage` (where it gives none, the result is empty: data.empty()).
  static DotPackedMatrix pack(const int8_t* q, const float* scales, const float* bias, int64_t k,
                              int64_t n, int64_t group, int bits, const Storage& storage = {});
  // pack(q, ..., 4, ...) of 4-bit weights as a program stores them, two a byte in two's
  // complement, the low nibble first (q[j][i] is nibble j * k + i): no int8 copy of the whole
  // weight on the way (an LLM's output layer: 136 MB). Where its zero points are 0 and the group
  // a multiple of 8 (fits() of any such weight is 4); else empty.
  static DotPackedMatrix pack_nibbles(const uint8_t* nibbles, const float* zeros,
                                      const float* scales, const float* bias, int64_t k, int64_t n,
                                      int64_t group, const Storage& storage = {});
  // Weight (j, i)'s integer, read back from the panels.
  int8_t weight(int64_t j, int64_t i) const;
};

// PT2E's dynamic per-tensor quantization parameters of `count` values (choose_qparams.tensor:
// torch.ao's determine_qparams, per-tensor affine over int8's [-128, 127]), op by op in float32:
// mn = min(min(x), 0), mx = max(max(x), 0), scale = max((mx - mn) / 255, eps),
// zero_point = clamp(-128 - int32(round(mn / scale)), -128, 127); and the reciprocal
// quantize_per_tensor.tensor multiplies by, (float)(1.0 / (double)scale). NaN in x makes the
// scale NaN (every value then quantizes to 0, as x86 casts NaN).
struct TensorQParams {
  float scale = 0, inverse = 0;
  int32_t zero_point = 0;
};
TensorQParams per_tensor_qparams(const float* x, int64_t count, float eps);

// The integers of m rows of k, ready for dot_gemm: xq [m][k] int8, xsum [m][groups] (the sum of
// each group's xq), zero [m]. Its arrays lie in memory the caller gives: a step's working memory
// (the delegate's scratch, runtime rule 3), so that neither init nor a call allocates for them.
struct DotRows {
  std::span<int8_t> xq;
  std::span<uint8_t> xu;               // xq + 128: the unsigned operand for 8-bit weights
  std::span<uint8_t> xu_high, xu_low;  // its nibbles, for 8-bit weights without VNNI
  std::span<uint8_t> xabs;             // |xq|, for symmetric 8-bit weights without VNNI
  std::span<int32_t> xsum, zero;
  std::span<float> scale;

  // The bytes the arrays take (each on a cache line). unsigned_operands: also xu, its nibbles
  // and |xq| (for 8-bit weights).
  static size_t bytes(int64_t m, int64_t k, int64_t group, bool unsigned_operands);
  // The arrays in `memory` (bytes(...) of it, on a cache line); their values are set below.
  DotRows(void* memory, int64_t m, int64_t k, int64_t group, bool unsigned_operands);

  // The rows of a (float32 integers in [-128, 127], row stride k), their zero points and scales
  // (m each).
  void set(const float* a, const float* zeros, const float* scales);
  // The rows of x quantized as torchao's per-token int8 quantization (choose_qparams_affine
  // ASYMMETRIC, quantize_affine) computes them, op by op in float32: mn = min(min(x), 0),
  // mx = max(max(x), 0), scale = max((mx - mn) / 255, eps), zero = clamp(-128 - round(mn / scale),
  // -128, 127), q = clamp(round(x * (1 / scale)) + zero, -128, 127), rounding half to even. A
  // NaN becomes 0 where PyTorch casts it to int8 (x86: 0).
  void quantize(const float* x, float eps);
  // All m * k values of x quantized with one scale and zero point (per_tensor_qparams), as
  // PT2E's dynamic quantization does: q = clamp(round(x * inverse) + zero, -128, 127), rounding
  // half to even.
  void quantize_tensor(const float* x, float eps);
  // (q - zero) * scale, as PyTorch's dequantize computes it, into out [m][k].
  void dequantize(float* out) const;

 private:
  // Row r's group sums, and its unsigned operands where kept.
  void finish_row(int64_t r);

  int64_t m_, k_, group_;
};

// How a float input is quantized before the integer linear: eps, and per tensor (PT2E's
// dynamic quantization) or per row (torchao's per token).
struct InputQuantizer {
  float eps = 0;
  bool per_tensor = false;
};

// c [m][n] = the rows' linear by b; Ember's SIMD kernels (callers check
// own_kernels_supported()). A row whose scale is not finite (an input row holding inf or NaN) is
// all inf and NaN once dequantized: its integer sum times the scale would give inf where the
// reference's products give NaN, so such a row is computed as the reference computes it, from
// its dequantized values and the dequantized weight in float.
void dot_gemm_threads(int threads, int64_t m, const DotPackedMatrix& b, const DotRows& rows,
                      float* c, int64_t ldc);

// How Ember's int8 kernels (QuantPointwise below, QuantDepthwise3x3 of kernels/depthwise.h)
// requantize an output channel's exact integer sum, sum (x - zero point) q, computed as sum (x +
// 128) q + init from uint8 values x + 128: y = sum * mult + add, clamped to [lo, hi], rounded half
// to even, plus `shift`, saturated to uint8. That is PyTorch's requantization of clamp(sum * scale
// * weight scale + bias), its 1 / out scale folded into the multipliers (the products rounded once,
// not twice: a result can differ from the unfolded one's only at a tie, as the integer sum already
// differs from the reference's float one).
struct Requantize {
  Stored<int32_t> init;           // [padded]: -(in zero point + 128) * the channel's weight sum
  Stored<float> mult;             // [padded]: in scale * weight scale * (1 / out scale)
  Stored<float> add;              // [padded]: bias * (1 / out scale)
  float lo = -512.f, hi = 512.f;  // the activation's bounds * (1 / out scale), within +-512
  int32_t shift = 128;            // out zero point + 128

  // weight_sums, weight_scales: [n]; bias: [n] or null; act: the clamp before the requantize;
  // out_inv: (float)(1 / out scale). `padded` (>= n) entries, 0 past n. Empty where the storage
  // gives none.
  static Requantize make(const int32_t* weight_sums, const float* weight_scales, const float* bias,
                         int64_t n, int64_t padded, float in_scale, float in_zero_point, Clamp act,
                         float out_inv, float out_zero_point, const Storage& storage = {});
  bool empty() const { return init.empty() || mult.empty() || add.empty(); }
};

// A 1x1 convolution of int8 values by an int8 weight with one scale an output channel,
// requantized: the int8 chain of a quantized CNN (onednn/quant_conv.cc), uint8 in and out (each
// value its int8 integer + 128), channels-last rows of pixels. Each output's integer sum is exact
// in int32, then requantized (Requantize). The sums come in one of two forms:
//  - quads: four u8 x s8 products an instruction, vpdpbusd with VNNI (any weights), else
//    pmaddubsw, whose 16-bit pairs saturate unless the weights fit [-64, 63] (2 * 255 * 64 <
//    2^15);
//  - pairs (full-range weights without VNNI, as ExecuTorch's XNNPACKQuantizer writes them): the
//    weights sign-extended to int16 and the input bytes zero-extended, two products summed in
//    32 bits an instruction (vpmaddwd), which nothing saturates. Half the products of a quad an
//    instruction, and the bytes of an input quad split in two by a mask and a shift.
// Either way the integers are the same, so the requantized bytes are too.
struct QuantPointwise {
  enum class Form {
    ForThisCpu,  // quads where simd::kernels() has VNNI or the weights fit [-64, 63], else pairs
    Quads,
    Pairs,
  };
  // bits 8, one group: [k / 4][kGroup][4] a panel; w.sums: column sums. For pairs, only its
  // sizes (k, n, panels): the weights are `pairs`.
  DotPackedMatrix w;
  // Pairs: [k / 4][2][kGroup][2] int8 a panel (k * kGroup values), sign-extended to int16 as
  // the kernel loads them: for input quad o, half h, column c: q[c][4o + h], q[c][4o + h + 2],
  // the products of the quad's bytes 0 and 2 (h = 0) or 1 and 3 (h = 1), as a mask and a 16-bit
  // shift of the broadcast quad give them.
  Stored<int8_t> pairs;
  bool paired = false;
  Requantize rq;  // [panels * kGroup]

  // Whether `form` is pairs for weights q (`count` of them) on a variant with or without VNNI.
  static bool pairs_for(Form form, bool vnni, const int8_t* q, int64_t count);
  // q: [n][k] int8 (k a multiple of 4); the rest as Requantize::make's. Empty (rq.empty())
  // where the storage gives none.
  static QuantPointwise pack(const int8_t* q, const float* weight_scales, const float* bias,
                             int64_t k, int64_t n, float in_scale, float in_zero_point, Clamp act,
                             float out_inv, float out_zero_point, const Storage& storage = {},
                             Form form = Form::ForThisCpu);
};

// c [m][n] = the requantized 1x1 convolution of a [m][k] (uint8, as above) on up to `threads`
// OpenMP threads, split by rows, or by panels where the rows are too few to share (a linear
// layer's one row); Ember's SIMD kernels (callers check own_kernels_supported()). Every variant
// runs both forms.
void quant_pointwise_threads(int threads, int64_t m, const QuantPointwise& b, const uint8_t* a,
                             uint8_t* c);

}  // namespace ember::cpu
