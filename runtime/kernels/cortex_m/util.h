// Shared integer arithmetic and argument checks of the cortex_m kernels
// (docs/kernels-cortex-m.md; the rules are ../shared/docs/cortex-m-ops.md §2).
//
//   int32_t acc = ...;                                     // 32-bit, wrapping (§2.4)
//   int32_t q = cortex_m::requantize(acc, mult, shift);   // double rounding (§2.5)
//   EMBER_TRY(cortex_m::read_int(*args[6], op, "input_offset", &offset));
//
// Everything here is arithmetic on int32 that wraps modulo 2^32 as the Cortex-M kernels do, done
// through uint32 (or exact int64) so that it is never signed overflow in C++.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"

namespace ember::cortex_m {

inline constexpr int32_t kInt32Min = INT32_MIN;
inline constexpr int32_t kInt32Max = INT32_MAX;

inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
inline int32_t wrap_sub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
inline int32_t wrap_mul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}
// v * 2^e modulo 2^32, e in [0, 31].
inline int32_t wrap_shl(int32_t v, int e) {
  return static_cast<int32_t>(static_cast<uint32_t>(v) << e);
}

// DHM (§2.5): a*b/2^31 rounded to nearest, ties toward +inf, low 32 bits kept (so the one
// overflow, INT32_MIN * INT32_MIN, gives INT32_MIN as the non-saturating kernels do).
inline int32_t dhm(int32_t a, int32_t b) {
  const int64_t p = int64_t{a} * int64_t{b} + (int64_t{1} << 30);
  return static_cast<int32_t>(p >> 31);
}
// The saturating DHM of softmax (§3.14): INT32_MIN * INT32_MIN gives INT32_MAX.
inline int32_t dhm_sat(int32_t a, int32_t b) {
  return a == kInt32Min && b == kInt32Min ? kInt32Max : dhm(a, b);
}

// RDIV (§2.5): x / 2^e rounded to nearest, ties away from zero. e in [0, 62]; done in int64 so
// that e >= 32 (softmax's `bits` for very long rows) is the exact value, 0, where C's 32-bit
// shift would be undefined.
inline int32_t rdiv(int32_t x, int e) {
  if (e <= 0) return x;
  const int64_t mask = (int64_t{1} << e) - 1;
  const int64_t q = int64_t{x} >> e;
  const int64_t r = int64_t{x} & mask;
  const int64_t t = (mask >> 1) + (q < 0 ? 1 : 0);
  return static_cast<int32_t>(q + (r > t ? 1 : 0));
}

// REQUANT (§2.5): RDIV(DHM(wrap32(v * 2^max(s, 0)), m), max(-s, 0)); s in [-31, 31].
inline int32_t requantize(int32_t v, int32_t m, int32_t s) {
  const int left = s > 0 ? static_cast<int>(s) : 0;
  const int right = s < 0 ? static_cast<int>(-s) : 0;
  return rdiv(dhm(wrap_shl(v, left), m), right);
}

// Softmax's fixed-point pieces (§3.14), defined in op_softmax.cc; exposed for the tests of the
// document's intermediate values. EXP: exp(a) for a <= 0, Q5.26 in, Q0.31 out. RECIP: 1/(1+x)
// for x in [0, 1), Q0.31 in and out.
int32_t exp_on_negative(int32_t a);
int32_t one_over_one_plus_x(int32_t v);

inline int32_t clamp_i32(int32_t v, int32_t lo, int32_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// The shift range every requantizing kernel accepts: REQUANT is defined for it, and a wider shift
// would be an undefined C shift in the Cortex-M kernel.
inline constexpr int32_t kMinShift = -31;
inline constexpr int32_t kMaxShift = 31;

// --- argument checks: each returns InvalidArgument with "<op>: <what> ..." on failure.

// An Int argument, which must lie in [lo, hi] (the kernels narrow Ints to int32; a value that
// would not survive that is rejected rather than silently wrapped).
Error read_int(const EValue& v, const char* op, const char* what, int64_t lo, int64_t hi,
               int32_t* out);
inline Error read_int32(const EValue& v, const char* op, const char* what, int32_t* out) {
  return read_int(v, op, what, kInt32Min, kInt32Max, out);
}
// activation_min and activation_max (§2.7): int8 values with min <= max.
Error read_activation(const EValue& min, const EValue& max, const char* op, int32_t* lo,
                      int32_t* hi);
// A two-entry int list (stride, padding, dilation, kernel size), each entry in [min, 2^20].
Error read_pair(const EValue& v, const char* op, const char* what, int64_t min, int64_t out[2]);

Error check_dtype(const Tensor& t, ScalarType want, const char* op, const char* what);
Error check_rank(const Tensor& t, int rank, const char* op, const char* what);
// t's sizes equal `want` (the size Ember computes; §2.1: the kernels do not check it).
Error check_sizes(const Tensor& t, std::span<const int64_t> want, const char* op, const char* what);
// A tensor of `dtype` with exactly `count` elements, dense (bias, multipliers, shifts, LUT).
Error check_vector(const Tensor& t, ScalarType dtype, int64_t count, const char* op,
                   const char* what);
// Every per-channel shift in [kMinShift, kMaxShift].
Error check_shifts(const Tensor& shifts, const char* op);

// True when t's elements lie densely with its dims nested in `order` (outermost first); dims of
// size 1 may sit anywhere, since they do not change the bytes.
bool dense_in_order(const Tensor& t, std::span<const int> order);
// Dense in logical (row-major) order: how the layout-blind kernels read memory (§6.6).
bool is_dense(const Tensor& t);
// Same sizes and strides: an element-wise kernel can walk both in memory order.
bool same_layout(const Tensor& a, const Tensor& b);

// One 4-D activation tensor [N, C, H, W], addressed through its strides so that any dim order
// reads the same logical element (channels-last, [0,2,3,1], is what export writes).
struct Act4 {
  int64_t n, c, h, w;
  int64_t sn, sc, sh, sw;
  static Act4 of(const Tensor& t) {
    return {t.size(0),   t.size(1),   t.size(2),   t.size(3),
            t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
  }
  int64_t at(int64_t in, int64_t ic, int64_t iy, int64_t ix) const {
    return in * sn + ic * sc + iy * sh + ix * sw;
  }
};

// The quantized dtype of a ScalarType code (1: int8, 2: int16) and its range.
Error quantized_dtype(const EValue& code, const char* op, ScalarType* type, int32_t* lo,
                      int32_t* hi);
// Output size along one axis of a pool (avg pool's rule of §3.6, with ceil_mode), rejecting a
// window that covers no input position.
Error pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode, const char* op,
                    const char* axis, int64_t* out);
// Output size along one axis of a convolution: floor((in + 2p - d(k-1) - 1) / s) + 1, at least 1.
Error conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, const char* op,
                    const char* axis, int64_t* out);

// An int8 4-D activation tensor [N, C, H, W].
Error check_activation(const Tensor& t, const char* op, const char* what);

}  // namespace ember::cortex_m
