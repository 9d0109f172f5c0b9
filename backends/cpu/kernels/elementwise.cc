// The unary kernels and the broadcast minimum, maximum and prelu of kernels/elementwise.h.
#include "backends/cpu/kernels/elementwise.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/nan_exact_internal.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu {
namespace {

using nan_exact_internal::split;

// The cheap ones, one body a ISA: the compiler turns each loop into vector instructions (roundps
// for floor, ceil and rint; the division is the correctly rounded one at every width).
template <UnaryOp Op>
EMBER_INLINE void unary_body(float* x, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if constexpr (Op == UnaryOp::Abs) {
      x[i] = __builtin_fabsf(v);
    } else if constexpr (Op == UnaryOp::Floor) {
      x[i] = __builtin_floorf(v);
    } else if constexpr (Op == UnaryOp::Ceil) {
      x[i] = __builtin_ceilf(v);
    } else if constexpr (Op == UnaryOp::Round) {
      x[i] = __builtin_rintf(v);  // the default rounding mode: to nearest, halves to even
    } else if constexpr (Op == UnaryOp::LeakyRelu) {
      x[i] = v > 0.f ? v : v * alpha;
    } else {
      x[i] = 1.f / v;
    }
  }
}

template <UnaryOp Op>
void unary_on_isa(CpuIsa isa, float* x, int64_t n, float alpha);
#define EMBER_UNARY(OP)                                                          \
  EMBER_TARGET_AVX512 void unary_avx512_##OP(float* x, int64_t n, float alpha) { \
    unary_body<UnaryOp::OP>(x, n, alpha);                                        \
  }                                                                              \
  EMBER_TARGET_AVX2 void unary_avx2_##OP(float* x, int64_t n, float alpha) {     \
    unary_body<UnaryOp::OP>(x, n, alpha);                                        \
  }                                                                              \
  template <>                                                                    \
  void unary_on_isa<UnaryOp::OP>(CpuIsa isa, float* x, int64_t n, float alpha) { \
    if (isa >= CpuIsa::Avx512) {                                                 \
      unary_avx512_##OP(x, n, alpha);                                            \
    } else if (isa >= CpuIsa::Avx2) {                                            \
      unary_avx2_##OP(x, n, alpha);                                              \
    } else {                                                                     \
      unary_body<UnaryOp::OP>(x, n, alpha);                                      \
    }                                                                            \
  }
EMBER_UNARY(Abs)
EMBER_UNARY(Floor)
EMBER_UNARY(Ceil)
EMBER_UNARY(Round)
EMBER_UNARY(LeakyRelu)
EMBER_UNARY(Reciprocal)
#undef EMBER_UNARY

// The transcendental ones by the C library, element by element (ATen's vectorized forms are
// Sleef's, within an ulp; both within about an ulp of the exact value).
template <float (*F)(float)>
void libm_body(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = F(x[i]);
}
float exp_f(float v) { return std::exp(v); }
float log_f(float v) { return std::log(v); }
float sin_f(float v) { return std::sin(v); }
float cos_f(float v) { return std::cos(v); }

// One row of broadcast_binary, b's stride along it 1 (B) or 0. Minimum and maximum: NaN wins,
// a's first; of equal values a's. Prelu: b * a where a is not above 0 (NaN included), ATen's
// operand order.
template <BroadcastOp Op>
EMBER_INLINE float broadcast_one(float x, float z) {
  if constexpr (Op == BroadcastOp::Prelu) {
    return x > 0.f ? x : z * x;
  } else if constexpr (Op == BroadcastOp::Add) {
    return x + z;
  } else if constexpr (Op == BroadcastOp::Sub) {
    return x - z;
  } else if constexpr (Op == BroadcastOp::Mul) {
    return x * z;
  } else if constexpr (Op == BroadcastOp::Div) {
    return x / z;
  } else {
    float r = Op == BroadcastOp::Maximum ? (x < z ? z : x) : (z < x ? z : x);
    r = z != z ? z : r;
    return x != x ? x : r;
  }
}
template <BroadcastOp Op, bool B>
EMBER_INLINE void broadcast_row(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = broadcast_one<Op>(a[i], b[B ? i : 0]);
}
template <BroadcastOp Op, bool B>
void broadcast_row_on(CpuIsa isa, const float* a, const float* b, float* y, int64_t n);
#define EMBER_BROADCAST_ROW(OP, B)                                                                \
  EMBER_TARGET_AVX512 void broadcast_avx512_##OP##B(const float* a, const float* b, float* y,     \
                                                    int64_t n) {                                  \
    broadcast_row<BroadcastOp::OP, B>(a, b, y, n);                                                \
  }                                                                                               \
  EMBER_TARGET_AVX2 void broadcast_avx2_##OP##B(const float* a, const float* b, float* y,         \
                                                int64_t n) {                                      \
    broadcast_row<BroadcastOp::OP, B>(a, b, y, n);                                                \
  }                                                                                               \
  template <>                                                                                     \
  void broadcast_row_on<BroadcastOp::OP, B>(CpuIsa isa, const float* a, const float* b, float* y, \
                                            int64_t n) {                                          \
    if (isa >= CpuIsa::Avx512) {                                                                  \
      broadcast_avx512_##OP##B(a, b, y, n);                                                       \
    } else if (isa >= CpuIsa::Avx2) {                                                             \
      broadcast_avx2_##OP##B(a, b, y, n);                                                         \
    } else {                                                                                      \
      broadcast_row<BroadcastOp::OP, B>(a, b, y, n);                                              \
    }                                                                                             \
  }
EMBER_BROADCAST_ROW(Minimum, false)
EMBER_BROADCAST_ROW(Minimum, true)
EMBER_BROADCAST_ROW(Maximum, false)
EMBER_BROADCAST_ROW(Maximum, true)
EMBER_BROADCAST_ROW(Prelu, false)
EMBER_BROADCAST_ROW(Prelu, true)
EMBER_BROADCAST_ROW(Add, false)
EMBER_BROADCAST_ROW(Add, true)
EMBER_BROADCAST_ROW(Sub, false)
EMBER_BROADCAST_ROW(Sub, true)
EMBER_BROADCAST_ROW(Mul, false)
EMBER_BROADCAST_ROW(Mul, true)
EMBER_BROADCAST_ROW(Div, false)
EMBER_BROADCAST_ROW(Div, true)
#undef EMBER_BROADCAST_ROW

template <BroadcastOp Op>
void broadcast_on(const float* a, const float* b, float* y, const BroadcastShape& shape,
                  int threads) {
  const int64_t r = shape.rank;
  const int64_t len = r == 0 ? 1 : shape.dims[r - 1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < r; ++d) rows *= shape.dims[d];
  const int64_t sb = r == 0 ? 0 : shape.b[r - 1];
  const CpuIsa isa = cpu_isa();
  split(rows, rows * len, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t ob = 0;  // the row's first element of b: i's digits over the outer dims
      for (int64_t d = r - 2, rest = i; d >= 0; --d) {
        ob += (rest % shape.dims[d]) * shape.b[d];
        rest /= shape.dims[d];
      }
      const float* x = a + i * len;
      float* out = y + i * len;
      if (sb == 0) {
        broadcast_row_on<Op, false>(isa, x, b + ob, out, len);
      } else if (sb == 1) {
        broadcast_row_on<Op, true>(isa, x, b + ob, out, len);
      } else {
        for (int64_t k = 0; k < len; ++k) out[k] = broadcast_one<Op>(x[k], b[ob + k * sb]);
      }
    }
  });
}

}  // namespace

bool unary_keeps_zero(UnaryOp op) {
  return op != UnaryOp::Exp && op != UnaryOp::Log && op != UnaryOp::Cos &&
         op != UnaryOp::Reciprocal;
}

void unary_in_place(UnaryOp op, float* x, int64_t n, float alpha, int threads) {
  // Chunks of 16 floats, so that each thread's part starts on a vector boundary.
  const int64_t chunks = (n + 15) / 16;
  const CpuIsa isa = cpu_isa();
  const int64_t work =
      op == UnaryOp::Exp || op == UnaryOp::Log || op == UnaryOp::Sin || op == UnaryOp::Cos ? 8 * n
                                                                                           : n;
  split(chunks, work, threads, [&](int64_t begin, int64_t end) {
    float* p = x + begin * 16;
    const int64_t m = std::min(end * 16, n) - begin * 16;
    if (m <= 0) return;
    switch (op) {
      case UnaryOp::Abs:
        return unary_on_isa<UnaryOp::Abs>(isa, p, m, alpha);
      case UnaryOp::Floor:
        return unary_on_isa<UnaryOp::Floor>(isa, p, m, alpha);
      case UnaryOp::Ceil:
        return unary_on_isa<UnaryOp::Ceil>(isa, p, m, alpha);
      case UnaryOp::Round:
        return unary_on_isa<UnaryOp::Round>(isa, p, m, alpha);
      case UnaryOp::LeakyRelu:
        return unary_on_isa<UnaryOp::LeakyRelu>(isa, p, m, alpha);
      case UnaryOp::Reciprocal:
        return unary_on_isa<UnaryOp::Reciprocal>(isa, p, m, alpha);
      case UnaryOp::Exp:
        return libm_body<exp_f>(p, m);
      case UnaryOp::Log:
        return libm_body<log_f>(p, m);
      case UnaryOp::Sin:
        return libm_body<sin_f>(p, m);
      case UnaryOp::Cos:
        return libm_body<cos_f>(p, m);
    }
  });
}

void broadcast_binary(BroadcastOp op, const float* a, const float* b, float* y,
                      const BroadcastShape& shape, int threads) {
  switch (op) {
    case BroadcastOp::Minimum:
      return broadcast_on<BroadcastOp::Minimum>(a, b, y, shape, threads);
    case BroadcastOp::Maximum:
      return broadcast_on<BroadcastOp::Maximum>(a, b, y, shape, threads);
    case BroadcastOp::Prelu:
      return broadcast_on<BroadcastOp::Prelu>(a, b, y, shape, threads);
    case BroadcastOp::Add:
      return broadcast_on<BroadcastOp::Add>(a, b, y, shape, threads);
    case BroadcastOp::Sub:
      return broadcast_on<BroadcastOp::Sub>(a, b, y, shape, threads);
    case BroadcastOp::Mul:
      return broadcast_on<BroadcastOp::Mul>(a, b, y, shape, threads);
    case BroadcastOp::Div:
      return broadcast_on<BroadcastOp::Div>(a, b, y, shape, threads);
  }
}

}  // namespace ember::cpu
