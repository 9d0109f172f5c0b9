// Element-wise kernels with ATen's results for the unary ops oneDNN 2.6 lacks or computes
// otherwise (floor, ceil, sin, cos; abs, exp, log, round, leaky relu and reciprocal with ATen's
// NaN, infinity and signed-zero results), and minimum, maximum and prelu of a broadcast operand
// (minimum and maximum propagate NaN as torch.minimum and torch.maximum do; oneDNN's binary_min
// and binary_max return the other operand where one is NaN). They run on every instruction set
// (AVX-512, AVX2 or generic code, chosen by cpu_isa()), on the caller's OpenMP threads, and
// allocate nothing.
//
//   unary_in_place(UnaryOp::Floor, y, n, 0.f, threads);
//   broadcast_binary(BroadcastOp::Maximum, a, b, y, shape, threads);
#pragma once

#include <cstdint>

namespace ember::cpu {

enum class UnaryOp : uint8_t {
  Abs,         // |x|, the sign bit cleared (NaN stays NaN)
  Exp,         // e^x (the C library's expf: within an ulp of ATen's)
  Log,         // natural log: -inf at +-0, NaN below 0
  Floor,       // exact; NaN, infinities and -0.0 kept
  Ceil,        // exact; NaN, infinities and -0.0 kept (ceil(-0.5) is -0.0)
  Round,       // to nearest, halves to even (ATen's round); -0.0 for -0.5
  Sin,         // the C library's sinf
  Cos,         // the C library's cosf
  LeakyRelu,   // x > 0 ? x : x * alpha (ATen's; NaN and -0.0 * alpha kept)
  Reciprocal,  // 1 / x, correctly rounded: +-inf at +-0
};

// x[i] = op(x[i]) for i < n; `alpha` is LeakyRelu's negative slope (unused otherwise).
void unary_in_place(UnaryOp op, float* x, int64_t n, float alpha, int threads);

// Whether op(0) is 0 (then the zero padding of a channel-blocked layout stays zero).
bool unary_keeps_zero(UnaryOp op);

// y = op(a, b) over `rank` dims (at most 6): a and y dense at `dims`, b read at its strides (0
// along a dim it broadcasts). Minimum and Maximum as ATen's: a NaN in either operand gives NaN
// (a's where both are); of two equal values, a's (the portable kernels' nan_min / nan_max).
// Prelu: a > 0 ? a : b * a (ATen's prelu, b the slope; NaN kept). Add, Sub, Mul, Div: IEEE's
// a + b, a - b, a * b, a / b, as ATen's (no contraction).
enum class BroadcastOp : uint8_t { Minimum, Maximum, Prelu, Add, Sub, Mul, Div };
struct BroadcastShape {
  int64_t rank = 0;
  int64_t dims[6] = {};
  int64_t b[6] = {};  // b's strides, in elements
};
void broadcast_binary(BroadcastOp op, const float* a, const float* b, float* y,
                      const BroadcastShape& shape, int threads);

}  // namespace ember::cpu
