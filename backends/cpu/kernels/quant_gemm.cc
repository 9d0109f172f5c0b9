#include "backends/cpu/kernels/quant_gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/simd_kernels.h"

namespace ember::cpu {

namespace {

// Values [n][per] (a group's scale or sum, a column's bias) as the kernels read them:
// [panels][per][kGroup], the columns past n 0; null: all 0.
template <typename T>
void to_panels(const T* values, int64_t n, int64_t per, const Storage& storage, Stored<T>* out) {
  const int64_t panels = (n + kGroup - 1) / kGroup;
  *out = Stored<T>(static_cast<size_t>(panels * per * kGroup), storage, T{});
  if (out->empty()) return;  // the storage gave none
  for (int64_t j = 0; j < n && values != nullptr; ++j) {
    for (int64_t g = 0; g < per; ++g) {
      (*out)[static_cast<size_t>(((j / kGroup) * per + g) * kGroup + j % kGroup)] =
          values[j * per + g];
    }
  }
}

}  // namespace

QuantPackedMatrix QuantPackedMatrix::pack(const int8_t* q, const float* scales, const float* zeros,
                                          const float* bias, int64_t k, int64_t n, int64_t group,
                                          int64_t bits, const Storage& storage) {
  QuantPackedMatrix out;
  out.k = k;
  out.n = n;
  out.group = group;
  out.bits = bits;
  out.panels = (n + kGroup - 1) / kGroup;
  const int64_t groups = k / group;
  out.data = Stored<int8_t>(static_cast<size_t>(out.panels * out.panel_bytes()), storage, 0);
  to_panels(scales, n, groups, storage, &out.scales);
  if (zeros != nullptr) to_panels(zeros, n, groups, storage, &out.zeros);
  to_panels(bias, n, 1, storage, &out.bias);
  if (out.data.empty() || out.scales.empty() || out.bias.empty() ||
      (zeros != nullptr && out.zeros.empty())) {
    return QuantPackedMatrix{};  // the storage gave none
  }
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = j / kGroup, col = j % kGroup;
    int8_t* panel = out.data.data() + p * out.panel_bytes();
    for (int64_t i = 0; i < k; ++i) {
      const int8_t v = q[j * k + i];
      if (bits == 8) {
        panel[i * kGroup + col] = v;
      } else {
        auto& byte = reinterpret_cast<uint8_t&>(panel[(i / 2) * kGroup + col]);
        byte = static_cast<uint8_t>(byte | ((static_cast<uint8_t>(v) & 0xF) << (i % 2 ? 4 : 0)));
      }
    }
  }
  return out;
}

namespace {

// The plain loops (no AVX2): one output at a time, the same dequantized weights.
void quant_gemm_plain(int64_t m, const QuantPackedMatrix& b, const float* a, int64_t lda, float* c,
                      int64_t ldc, int64_t panel_begin, int64_t panel_end) {
  const int64_t groups = b.groups();
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int8_t* panel = b.data.data() + p * b.panel_bytes();
    const int64_t cols = std::min<int64_t>(kGroup, b.n - p * kGroup);
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        float sum = b.bias[static_cast<size_t>(p * kGroup + col)];
        for (int64_t i = 0; i < b.k; ++i) {
          int32_t v = 0;
          if (b.bits == 8) {
            v = panel[i * kGroup + col];
          } else {
            const int32_t byte = panel[(i / 2) * kGroup + col];
            v = i % 2 ? byte >> 4 : static_cast<int32_t>(static_cast<uint32_t>(byte) << 28) >> 28;
          }
          const size_t at = static_cast<size_t>((p * groups + i / b.group) * kGroup + col);
          const float zero = b.zeros.empty() ? 0.f : b.zeros[at];
          sum += a[row * lda + i] * ((static_cast<float>(v) - zero) * b.scales[at]);
        }
        c[row * ldc + p * kGroup + col] = sum;
      }
    }
  }
}

}  // namespace

void quant_gemm(int64_t m, const QuantPackedMatrix& b, const float* a, int64_t lda, float* c,
                int64_t ldc, int64_t panel_begin, int64_t panel_end) {
  if (panel_end < 0 || panel_end > b.panels) panel_end = b.panels;
  if (const simd::Kernels* k = simd::kernels()) {
    k->quant_gemm(m, b, a, lda, c, ldc, panel_begin, panel_end);
  } else {
    quant_gemm_plain(m, b, a, lda, c, ldc, panel_begin, panel_end);
  }
}

void quant_gemm_threads(int threads, int64_t m, const QuantPackedMatrix& b, const float* a,
                        int64_t lda, float* c, int64_t ldc) {
  threads = static_cast<int>(std::min<int64_t>(threads, b.panels));
  if (threads <= 1) {
    quant_gemm(m, b, a, lda, c, ldc);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    quant_gemm(m, b, a, lda, c, ldc, b.panels * t / count, b.panels * (t + 1) / count);
  }
}

namespace {

// Whether the `count` zero points are all 0 (null: none, so yes).
bool zero_points_zero(const float* zeros, int64_t count) {
  return zeros == nullptr || std::all_of(zeros, zeros + count, [](float z) { return z == 0.f; });
}

}  // namespace

int DotPackedMatrix::fits(const int8_t* q, const float* zeros, int64_t k, int64_t n,
                          int64_t group) {
  if (k % group != 0 || group % 4 != 0 || !zero_points_zero(zeros, n * (k / group))) return 0;
  bool nibbles = group % 8 == 0;
  for (int64_t i = 0; i < n * k && nibbles; ++i) nibbles = q[i] >= -8 && q[i] <= 7;
  return nibbles ? 4 : 8;
}

namespace {

// DotPackedMatrix::pack of the weight whose integer (j, i) is q(j, i).
template <typename Q>
DotPackedMatrix pack_dot(Q q, const float* scales, const float* bias, int64_t k, int64_t n,
                         int64_t group, int bits, bool symmetric, const Storage& storage) {
  DotPackedMatrix out;
  out.k = k;
  out.n = n;
  out.group = group;
  out.bits = bits;
  out.panels = (n + kGroup - 1) / kGroup;
  const int64_t groups = k / group;
  // Padding columns hold q = 0.
  out.data = Stored<uint8_t>(static_cast<size_t>(out.panels * out.panel_bytes()), storage,
                             bits == 4 ? 8 | 8 << 4 : 0);
  to_panels(scales, n, groups, storage, &out.scales);
  to_panels(bias, n, 1, storage, &out.bias);
  if (out.data.empty() || out.scales.empty() || out.bias.empty()) return DotPackedMatrix{};
  out.symmetric = symmetric;
  // Of each group's q, for 8 bits (the 4-bit kernel sums the nibbles it loads).
  std::vector<int32_t> sums(bits == 8 ? static_cast<size_t>(n * groups) : 0, 0);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = j / kGroup, col = j % kGroup;
    uint8_t* panel = out.data.data() + p * out.panel_bytes();
    for (int64_t i = 0; i < k; ++i) {
      const int8_t v = q(j, i);
      if (bits == 4) {
        const auto u = static_cast<uint8_t>(v + 8);
        uint8_t& byte = panel[((i / 8) * kGroup + col) * 4 + i % 4];
        byte = static_cast<uint8_t>(i % 8 < 4 ? (byte & 0xF0) | u : (byte & 0x0F) | u << 4);
      } else {
        panel[((i / 4) * kGroup + col) * 4 + i % 4] = static_cast<uint8_t>(v);
      }
      if (bits == 8) sums[static_cast<size_t>(j * groups + i / group)] += v;
    }
  }
  if (bits == 4) return out;
  to_panels(sums.data(), n, groups, storage, &out.sums);
  if (out.sums.empty()) return DotPackedMatrix{};
  return out;
}

}  // namespace

DotPackedMatrix DotPackedMatrix::pack(const int8_t* q, const float* scales, const float* bias,
                                      int64_t k, int64_t n, int64_t group, int bits,
                                      const Storage& storage) {
  const bool symmetric = std::none_of(q, q + n * k, [](int8_t v) { return v == -128; });
  return pack_dot([q, k](int64_t j, int64_t i) { return q[j * k + i]; }, scales, bias, k, n, group,
                  bits, symmetric, storage);
}

DotPackedMatrix DotPackedMatrix::pack_nibbles(const uint8_t* nibbles, const float* zeros,
                                              const float* scales, const float* bias, int64_t k,
                                              int64_t n, int64_t group, const Storage& storage) {
  if (k % group != 0 || group % 8 != 0 || !zero_points_zero(zeros, n * (k / group))) {
    return DotPackedMatrix{};
  }
  return pack_dot(
      [nibbles, k](int64_t j, int64_t i) {
        const int64_t at = j * k + i;
        const auto nibble = static_cast<uint8_t>((nibbles[at / 2] >> (at % 2 ? 4 : 0)) & 0xF);
        return static_cast<int8_t>(nibble >= 8 ? nibble - 16 : nibble);
      },
      scales, bias, k, n, group, 4, /*symmetric=*/true, storage);
}

int8_t DotPackedMatrix::weight(int64_t j, int64_t i) const {
  const uint8_t* panel = data.data() + (j / kGroup) * panel_bytes();
  const int64_t col = j % kGroup;
  if (bits == 4) {
    const uint8_t byte = panel[((i / 8) * kGroup + col) * 4 + i % 4];
    return static_cast<int8_t>((i % 8 < 4 ? byte & 0xF : byte >> 4) - 8);
  }
  return static_cast<int8_t>(panel[((i / 4) * kGroup + col) * 4 + i % 4]);
}

namespace {

// The row loops, compiled for AVX-512 and AVX2 beside the baseline and chosen at load by the CPU
// (the arithmetic is the same on each: no contraction, exact roundings).
#define EMBER_ROW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// min and max of a row, and whether it holds a NaN: 8 lanes at a time in GCC's vector types, two
// accumulators (a single running min is a chain of dependent compares, 4 cycles a value, and GCC
// does not vectorize it; 16-lane types spilled to the stack in the AVX2 clone, most of a short
// row's time: Swin's rows of 16 to 128 values, quantized per token). Each lane keeps
// v < lo ? v : lo (minps), NaN tracked apart; the result is the same in any order: min and max
// of the values that are not NaN.
EMBER_ROW_CLONES void min_max(const float* row, int64_t k, float* mn, float* mx, bool* nan) {
  using F8 = float __attribute__((vector_size(32)));
  using I8 = int32_t __attribute__((vector_size(32)));
  using F4 = float __attribute__((vector_size(16)));
  F8 lo0 = F8{} + row[0], hi0 = lo0, lo1 = lo0, hi1 = lo0;
  I8 any_nan = {};
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    F8 a, b;
    std::memcpy(&a, row + i, sizeof a);
    std::memcpy(&b, row + i + 8, sizeof b);
    lo0 = a < lo0 ? a : lo0;
    hi0 = a > hi0 ? a : hi0;
    lo1 = b < lo1 ? b : lo1;
    hi1 = b > hi1 ? b : hi1;
    any_nan |= (a != a) | (b != b);
  }
  const F8 lo8 = lo1 < lo0 ? lo1 : lo0, hi8 = hi1 > hi0 ? hi1 : hi0;
  const F4 lo_a = __builtin_shufflevector(lo8, lo8, 0, 1, 2, 3);
  const F4 lo_b = __builtin_shufflevector(lo8, lo8, 4, 5, 6, 7);
  const F4 hi_a = __builtin_shufflevector(hi8, hi8, 0, 1, 2, 3);
  const F4 hi_b = __builtin_shufflevector(hi8, hi8, 4, 5, 6, 7);
  const F4 lo4 = lo_b < lo_a ? lo_b : lo_a, hi4 = hi_b > hi_a ? hi_b : hi_a;
  float l = lo4[0], h = hi4[0];
  bool n = false;
  for (int j = 0; j < 4; ++j) {
    l = lo4[j] < l ? lo4[j] : l;
    h = hi4[j] > h ? hi4[j] : h;
  }
  for (int j = 0; j < 8; ++j) n = n || any_nan[j] != 0;
  for (; i < k; ++i) {
    const float v = row[i];
    l = v < l ? v : l;
    h = v > h ? v : h;
    n = n || v != v;
  }
  *mn = l;
  *mx = h;
  *nan = n;
}

EMBER_ROW_CLONES void quantize_row(const float* row, int64_t k, float inverse, float zero,
                                   int8_t* out) {
  for (int64_t i = 0; i < k; ++i)
    out[i] = static_cast<int8_t>(quantize_int8(row[i], inverse, zero));
}

// a row of float32 integers in [-128, 127] (clamped all the same) as int8.
EMBER_ROW_CLONES void integers_row(const float* row, int64_t k, int8_t* out) {
  for (int64_t i = 0; i < k; ++i) {
    const float v = row[i];
    out[i] = static_cast<int8_t>(v < -128.f ? -128.f : v > 127.f ? 127.f : v);
  }
}

EMBER_ROW_CLONES void unsigned_row(const int8_t* q, int64_t k, uint8_t* u, uint8_t* high,
                                   uint8_t* low, uint8_t* abs) {
  for (int64_t i = 0; i < k; ++i) {
    u[i] = static_cast<uint8_t>(q[i] + 128);
    high[i] = static_cast<uint8_t>(u[i] >> 4);
    low[i] = static_cast<uint8_t>(u[i] & 0xF);
    abs[i] = static_cast<uint8_t>(q[i] < 0 ? -q[i] : q[i]);
  }
}

EMBER_ROW_CLONES int32_t sum_of(const int8_t* q, int64_t n) {
  int32_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += q[i];
  return sum;
}

// The next array of n T at address `at`, on a cache line; `at` moves past it.
template <typename T>
std::span<T> take(uintptr_t& at, int64_t n) {
  std::span<T> out(reinterpret_cast<T*>(at), static_cast<size_t>(n));
  at += (static_cast<size_t>(n) * sizeof(T) + 63) / 64 * 64;
  return out;
}

}  // namespace

size_t DotRows::bytes(int64_t m, int64_t k, int64_t group, bool unsigned_operands) {
  // The layout at address 0 (never read): where the last array ends is the size.
  const DotRows at_zero(nullptr, m, k, group, unsigned_operands);
  return reinterpret_cast<uintptr_t>(at_zero.scale.data()) +
         (static_cast<size_t>(m) * sizeof(float) + 63) / 64 * 64;
}

DotRows::DotRows(void* memory, int64_t m, int64_t k, int64_t group, bool unsigned_operands)
    : m_(m), k_(k), group_(group) {
  auto at = reinterpret_cast<uintptr_t>(memory);
  xq = take<int8_t>(at, m * k);
  const int64_t u = unsigned_operands ? m * k : 0;
  xu = take<uint8_t>(at, u);
  xu_high = take<uint8_t>(at, u);
  xu_low = take<uint8_t>(at, u);
  xabs = take<uint8_t>(at, u);
  xsum = take<int32_t>(at, m * (k / group));
  zero = take<int32_t>(at, m);
  scale = take<float>(at, m);
}

void DotRows::finish_row(int64_t r) {
  const int64_t k = k_, group = group_;
  const int8_t* q = xq.data() + r * k;
  for (int64_t g = 0; g < k / group; ++g) {
    xsum[static_cast<size_t>(r * (k / group) + g)] = sum_of(q + g * group, group);
  }
  if (!xu.empty()) {
    unsigned_row(q, k, xu.data() + r * k, xu_high.data() + r * k, xu_low.data() + r * k,
                 xabs.data() + r * k);
  }
}

void DotRows::set(const float* a, const float* zeros, const float* scales) {
  const int64_t m = m_, k = k_;
  std::copy_n(scales, m, scale.data());
  for (int64_t r = 0; r < m; ++r) {
    zero[static_cast<size_t>(r)] = static_cast<int32_t>(zeros[r]);
    // Integers in [-128, 127] by construction (an int8 tensor's copy).
    integers_row(a + r * k, k, xq.data() + r * k);
    finish_row(r);
  }
}

void DotRows::quantize(const float* x, float eps) {
  const int64_t m = m_, k = k_;
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k;
    // amin / amax propagate NaN; minimum / maximum with 0 too.
    float mn = 0, mx = 0;
    bool nan = false;
    min_max(row, k, &mn, &mx, &nan);
    if (nan) mn = mx = std::numeric_limits<float>::quiet_NaN();
    mn = std::isnan(mn) ? mn : std::min(mn, 0.f);
    mx = std::isnan(mx) ? mx : std::max(mx, 0.f);
    float s = (mx - mn) / 255.f;
    s = std::isnan(s) ? s : std::max(s, eps);
    // zero = clamp(-128 - round(mn / s), -128, 127): mn / s <= 0, and below -512 the clamp
    // saturates all the same. NaN casts to 0.
    float t = mn / s;
    t = t < -512.f ? -512.f : t;
    float zp = -128.f - round_half_even(t);
    zp = zp > 127.f ? 127.f : zp < -128.f ? -128.f : zp;
    const auto z = static_cast<int8_t>(std::isnan(zp) ? 0.f : zp);
    zero[static_cast<size_t>(r)] = z;
    scale[static_cast<size_t>(r)] = s;
    quantize_row(row, k, (1.f / s) * 1.f, static_cast<float>(z), xq.data() + r * k);
    finish_row(r);
  }
}

TensorQParams per_tensor_qparams(const float* x, int64_t count, float eps) {
  float mn = 0, mx = 0;
  bool nan = false;
  if (count > 0) min_max(x, count, &mn, &mx, &nan);
  if (nan) mn = mx = std::numeric_limits<float>::quiet_NaN();
  mn = std::isnan(mn) ? mn : std::min(mn, 0.f);
  mx = std::isnan(mx) ? mx : std::max(mx, 0.f);
  float s = (mx - mn) / 255.f;
  s = std::isnan(s) ? s : std::max(s, eps);
  // zero = -128 - int32(round(mn / s)), clamped: mn / s lies in [-256, 0] when finite (s is at
  // least the range over 255); NaN (and inf, out of int32) casts to INT32_MIN on x86, whose
  // wrapped difference clamps to 127.
  const float t = std::nearbyint(mn / s);
  TensorQParams p;
  p.scale = s;
  p.inverse = static_cast<float>(1.0 / static_cast<double>(s));
  p.zero_point = std::isfinite(t) ? std::clamp(-128 - static_cast<int32_t>(t), -128, 127) : 127;
  return p;
}

void DotRows::quantize_tensor(const float* x, float eps) {
  const int64_t m = m_, k = k_;
  const TensorQParams p = per_tensor_qparams(x, m * k, eps);
  for (int64_t r = 0; r < m; ++r) {
    zero[static_cast<size_t>(r)] = p.zero_point;
    scale[static_cast<size_t>(r)] = p.scale;
    quantize_row(x + r * k, k, p.inverse, static_cast<float>(p.zero_point), xq.data() + r * k);
    finish_row(r);
  }
}

void DotRows::dequantize(float* out) const {
  const int64_t m = m_, k = k_;
  for (int64_t r = 0; r < m; ++r) {
    const auto z = static_cast<float>(zero[static_cast<size_t>(r)]);
    for (int64_t i = 0; i < k; ++i) {
      out[r * k + i] = (static_cast<float>(xq[static_cast<size_t>(r * k + i)]) - z) *
                       scale[static_cast<size_t>(r)];
    }
  }
}

Requantize Requantize::make(const int32_t* weight_sums, const float* weight_scales,
                            const float* bias, int64_t n, int64_t padded, float in_scale,
                            float in_zero_point, Clamp act, float out_inv, float out_zero_point,
                            const Storage& storage) {
  Requantize out;
  out.init = Stored<int32_t>(static_cast<size_t>(padded), storage, 0);
  out.mult = Stored<float>(static_cast<size_t>(padded), storage, 0.f);
  out.add = Stored<float>(static_cast<size_t>(padded), storage, 0.f);
  if (out.empty()) return Requantize{};
  const auto in_shift = static_cast<int32_t>(in_zero_point) + 128;
  for (int64_t j = 0; j < n; ++j) {
    const auto at = static_cast<size_t>(j);
    out.init[at] = -in_shift * weight_sums[j];
    out.mult[at] = in_scale * weight_scales[j] * out_inv;
    out.add[at] = bias != nullptr ? bias[j] * out_inv : 0.f;
  }
  out.lo = std::max(act.lo * out_inv, -512.f);
  out.hi = std::min(act.hi * out_inv, 512.f);
  out.shift = static_cast<int32_t>(out_zero_point) + 128;
  return out;
}

bool QuantPointwise::pairs_for(Form form, bool vnni, const int8_t* q, int64_t count) {
  if (form != Form::ForThisCpu) return form == Form::Pairs;
  // Quads where they are exact: with VNNI, or weights whose pmaddubsw pairs cannot saturate (then
  // faster than pairs: four products an instruction against two).
  return !vnni && !std::all_of(q, q + count, [](int8_t v) { return v >= -64 && v <= 63; });
}

QuantPointwise QuantPointwise::pack(const int8_t* q, const float* weight_scales, const float* bias,
                                    int64_t k, int64_t n, float in_scale, float in_zero_point,
                                    Clamp act, float out_inv, float out_zero_point,
                                    const Storage& storage, Form form) {
  QuantPointwise out;
  const simd::Kernels* kernels = simd::kernels();
  out.paired = pairs_for(form, kernels != nullptr && kernels->vnni, q, n * k);
  const int64_t panels = (n + kGroup - 1) / kGroup;
  std::vector<int32_t> sums(static_cast<size_t>(n), 0);
  if (out.paired) {
    out.w.k = k;
    out.w.n = n;
    out.w.group = k;
    out.w.bits = 8;
    out.w.panels = panels;
    // Padding columns hold q = 0.
    out.pairs = Stored<int8_t>(static_cast<size_t>(panels * k * kGroup), storage, 0);
    if (out.pairs.empty()) return QuantPointwise{};
    // Written in order (a load's weights are megabytes: scattered writes made this loop most of
    // an int8 ResNet-18's load), each panel's columns read side by side.
    int8_t* to = out.pairs.data();
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t cols = std::min(kGroup, n - p * kGroup);
      const int8_t* panel = q + p * kGroup * k;
      for (int64_t quad = 0; quad < k / 4; ++quad) {
        for (int64_t half = 0; half < 2; ++half, to += 2 * kGroup) {
          for (int64_t c = 0; c < cols; ++c) {
            to[2 * c] = panel[c * k + 4 * quad + half];
            to[2 * c + 1] = panel[c * k + 4 * quad + half + 2];
          }
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < k; ++i) sums[static_cast<size_t>(j)] += q[j * k + i];
    }
  } else {
    const std::vector<float> ones(static_cast<size_t>(n), 1.f);
    out.w = DotPackedMatrix::pack(q, ones.data(), nullptr, k, n, k, 8, storage);
    if (out.w.data.empty()) return QuantPointwise{};
    // w.sums is [panels][1][kGroup]: column j at j.
    std::copy_n(out.w.sums.data(), n, sums.data());
  }
  out.rq = Requantize::make(sums.data(), weight_scales, bias, n, panels * kGroup, in_scale,
                            in_zero_point, act, out_inv, out_zero_point, storage);
  if (out.rq.empty()) return QuantPointwise{};
  return out;
}

void quant_pointwise_threads(int threads, int64_t m, const QuantPointwise& b, const uint8_t* a,
                             uint8_t* c) {
  const simd::Kernels& kernels = *simd::kernels();
  constexpr int64_t kUnit = 24;  // rows: a multiple of every tile's (kernels/simd_kernels.inc)
  const int64_t units = (m + kUnit - 1) / kUnit, panels = b.w.panels;
  // Fewer units of rows than threads: every thread all the rows by its share of the panels.
  const bool by_panels = units < threads && panels > units;
  threads = static_cast<int>(std::min<int64_t>(threads, by_panels ? panels : units));
  if (threads <= 1) {
    kernels.quant_pointwise(0, m, b, a, c, 0, panels);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    if (by_panels) {
      kernels.quant_pointwise(0, m, b, a, c, panels * t / count, panels * (t + 1) / count);
    } else {
      const int64_t begin = std::min(m, units * t / count * kUnit);
      const int64_t end = std::min(m, units * (t + 1) / count * kUnit);
      kernels.quant_pointwise(begin, end, b, a, c, 0, panels);
    }
  }
}

namespace {

// Row r of c as the reference computes it: bias + sum of (xq - zero) * scale times
// q * the group's scale, in float (for a row whose scale is not finite, where every term is inf or
// NaN and the order of the sum cannot matter).
void dot_row_in_float(const DotPackedMatrix& b, const DotRows& rows, int64_t r, float* out) {
  const auto at = static_cast<size_t>(r);
  const auto zero = static_cast<float>(rows.zero[at]);
  const int8_t* xq = rows.xq.data() + r * b.k;
  const int64_t groups = b.groups();
  for (int64_t j = 0; j < b.n; ++j) {
    const float* scales = b.scales.data() + (j / kGroup) * groups * kGroup + j % kGroup;
    float sum = 0;
    for (int64_t i = 0; i < b.k; ++i) {
      const float x = (static_cast<float>(xq[i]) - zero) * rows.scale[at];
      sum += x * (static_cast<float>(b.weight(j, i)) * scales[(i / b.group) * kGroup]);
    }
    out[j] = b.bias[static_cast<size_t>(j)] + sum;
  }
}

}  // namespace

void dot_gemm_threads(int threads, int64_t m, const DotPackedMatrix& b, const DotRows& rows,
                      float* c, int64_t ldc) {
  const simd::Kernels& kernels = *simd::kernels();
  threads = static_cast<int>(std::min<int64_t>(threads, b.panels));
  if (threads <= 1) {
    kernels.dot_gemm(m, b, rows, c, ldc, 0, b.panels);
  } else {
#pragma omp parallel num_threads(threads)
    {
      const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
      kernels.dot_gemm(m, b, rows, c, ldc, b.panels * t / count, b.panels * (t + 1) / count);
    }
  }
  for (int64_t r = 0; r < m; ++r) {
    if (!std::isfinite(rows.scale[static_cast<size_t>(r)]))
      dot_row_in_float(b, rows, r, c + r * ldc);
  }
}

}  // namespace ember::cpu
