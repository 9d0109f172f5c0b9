// Kernels for the ops whose oneDNN 2.6 forms lose NaN, so that the cpu backend gives ATen's
// result for every input: relu and hardtanh (oneDNN's max/min map NaN to a bound),
// sigmoid (oneDNN's reference form maps NaN to 0), max pooling (oneDNN's skips NaN) and softmax
// (oneDNN's gives [nan, 0, 0] for a row holding +inf, ATen a NaN row); and gelu and elu, whose
// oneDNN forms lose the sign of zero. They run on every instruction set (AVX-512, AVX2 or generic
// code, chosen by cpu_isa()), on the delegate's OpenMP threads, and allocate nothing.
//
//   clamp_in_place(y, n, {0.f, inf}, threads);               // relu after a convolution
//   max_pool(x, in_layout, y, out_layout, window, threads);  // any plain or channel-blocked layout
//   softmax_nan_rows(x, y, outer, len, inner, threads);      // after oneDNN's softmax
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/policy.h"

namespace ember::cpu {

// x[i] = min(hi, max(lo, x[i])) for i < n, NaN kept (ATen's clamp, relu and hardtanh).
void clamp_in_place(float* x, int64_t n, Clamp act, int threads);

// Where element (b, c, d, h, w) of a 5-D tensor lies (lower ranks: the missing spatial sizes 1):
// b * batch + (c / block) * channel_block + (c % block) * channel + d * spatial[0] + ... , in
// floats. A plain layout has block 1; oneDNN's nChw16c has block 16, channel 1.
struct PoolLayout {
  int64_t batch = 0, channel_block = 0, block = 1, channel = 0;
  int64_t spatial[3] = {0, 0, 0};
};

// A pooling window over 3 spatial dims (lower ranks: kernel 1, stride 1, no padding, size 1).
struct PoolWindow {
  int64_t batch = 1, channels = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};  // PyTorch's: 1 is none
};

// Max pooling as ATen computes it: the largest value of each window, NaN where the window holds
// a NaN; padding is never a candidate (a window of padding alone gives -inf).
void max_pool(const float* x, const PoolLayout& in, float* y, const PoolLayout& out,
              const PoolWindow& w, int threads);

// Softmax rows x[o][0..len)[i] (stride inner) -> y: every row of x holding a NaN or +inf, or only
// -inf, becomes NaN in y (ATen's result there); y's other rows are left as they are.
void softmax_nan_rows(const float* x, float* y, int64_t outer, int64_t len, int64_t inner,
                      int threads);

// Softmax of each of `rows` contiguous rows of `len` floats, x -> y (which may be x), as ATen
// computes it along the last dim (NaN rows included): one pass of Ember's kernel where oneDNN's
// softmax needed softmax_nan_rows after it.
void softmax_rows(const float* x, float* y, int64_t rows, int64_t len, int threads);

// y = where(c, a, b) over `rank` dims (at most 6): y[i] = c[i] != 0 ? a[i] : b[i], each operand
// read at its own strides (0 along a broadcast dim); y dense.
struct WhereShape {
  int64_t rank = 0;
  int64_t dims[6] = {};
  int64_t c[6] = {}, a[6] = {}, b[6] = {};  // strides, in elements
};
void where_broadcast(const uint8_t* c, const float* a, const float* b, float* y,
                     const WhereShape& shape, int threads);

// x[i] = sigmoid(x[i]) = 1 / (1 + exp(-x[i])) for i < n, NaN kept (oneDNN's reference logistic,
// which it runs for a convolution by GEMM or a channel-padded layout, maps NaN to 0).
void sigmoid_in_place(float* x, int64_t n, int threads);

// x[i] = elu(x[i]) = x > 0 ? x : alpha * expm1(x) for i < n, as ATen's vectorized elu: -0.0 stays
// -0.0 and subnormal results stay (oneDNN's elu gives +0.0 and flushes them).
void elu_in_place(float* x, int64_t n, float alpha, int threads);

// x[i] = gelu(x[i]) = x[i] / 2 * (1 + erf(x[i] / sqrt 2)) for i < n, ATen's exact gelu with its
// zero signs (oneDNN's gelu_erf gives +0.0 for -0.0 and below x = -5.5, where ATen gives -0.0,
// which a later division turns into the other infinity).
void gelu_in_place(float* x, int64_t n, int threads);

// x[i] = 1 / sqrt(x[i]) for i < n, ATen's rsqrt bit for bit (oneDNN 2.6 has no rsqrt).
void rsqrt_in_place(float* x, int64_t n, int threads);

// x[i] = -x[i] for i < n (the sign of zero flips, as in ATen; oneDNN's linear alpha = -1 gives
// +0.0 for +0.0).
void neg_in_place(float* x, int64_t n, int threads);

// Whether every |x[i]| (i < n) is at most `bound`; false where any is NaN. A guard of oneDNN's
// Winograd convolution (onednn/conv.cc), whose transforms turn an inf into NaN across a tile.
bool all_within(const float* x, int64_t n, float bound, int threads);

}  // namespace ember::cpu
