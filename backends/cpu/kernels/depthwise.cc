#include "backends/cpu/kernels/depthwise.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/kernels/simd_kernels.h"

namespace ember::cpu {

void depthwise_row(int64_t stride, const float* const rows[3], int64_t ld, int64_t w, int64_t wo,
                   const float* wts, const float* bias, int64_t cpad, int64_t c_begin,
                   int64_t c_end, float* out, Clamp act) {
  simd::kernels()->depthwise_row(stride, rows, ld, w, wo, wts, bias, cpad, c_begin, c_end, out,
                                 act);
}

Depthwise3x3::Depthwise3x3(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t stride,
                           const float* weight, const float* bias, Clamp act, int threads,
                           const Storage& storage)
    : batch_(batch),
      h_(h),
      w_(w),
      c_(c),
      stride_(stride),
      out_h_((h - 1) / stride + 1),  // (h + 2 - 3) / stride + 1
      out_w_((w - 1) / stride + 1),
      act_(act),
      threads_(std::max(threads, 1)),
      w9_(static_cast<size_t>(9 * c), storage, 0.f),
      bias_(static_cast<size_t>(c), storage, 0.f) {
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int t = 0; t < 9; ++t) w9_[t * c + ch] = weight[ch * 9 + t];
    if (bias != nullptr) bias_[ch] = bias[ch];
  }
}

// Threads split the output rows, as the convolution before wrote them (a split by channels,
// which reads across the other core's rows, measured a third slower at 2 threads); the row
// where two threads meet is split by channels, so 7 rows go 3.5 and 3.5.
void Depthwise3x3::run(const float* src, float* dst) const {
  const int64_t vectors = c_ / kGroup, units = batch_ * out_h_ * vectors;
  const int threads = static_cast<int>(std::min<int64_t>(threads_, units));
  if (threads <= 1) {
    run_units(src, dst, 0, units);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    run_units(src, dst, units * t / n, units * (t + 1) / n);
  }
}

void Depthwise3x3::row(const float* const window[3], int64_t c_begin, int64_t c_end,
                       float* out) const {
  depthwise_row(stride_, window, c_, w_, out_w_, w9_.data(), bias_.data(), c_, c_begin, c_end, out,
                act_);
}

// Units [u0, u1) of (output row of the batch, channel vector), in that order.
void Depthwise3x3::run_units(const float* src, float* dst, int64_t u0, int64_t u1) const {
  const int64_t vectors = c_ / kGroup, row_in = w_ * c_, row_out = out_w_ * c_;
  for (int64_t r = u0 / vectors; r * vectors < u1; ++r) {
    const int64_t img = r / out_h_, oy = r % out_h_;
    const float* in = src + img * h_ * row_in;
    const float* window[3];
    for (int ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy * stride_ - 1 + ky;
      window[ky] = iy < 0 || iy >= h_ ? nullptr : in + iy * row_in;
    }
    const int64_t c_begin = (std::max(u0, r * vectors) - r * vectors) * kGroup;
    const int64_t c_end = (std::min(u1, (r + 1) * vectors) - r * vectors) * kGroup;
    depthwise_row(stride_, window, c_, w_, out_w_, w9_.data(), bias_.data(), c_, c_begin, c_end,
                  dst + r * row_out, act_);
  }
}

namespace {

// Output row oy of image img reads input rows oy * stride - 1 .. + 1: window[ky] is the ring slot
// (of three, rows of row_size) holding input row iy, `fill(key, slot)` converting it the first
// time (key = img * h + iy; held: the key each slot holds), or `pad` where iy is in the padding.
template <typename T, typename Fill>
void ring_window(T* ring, int64_t row_size, int64_t held[3], int64_t img, int64_t oy,
                 int64_t stride, int64_t h, const T* pad, Fill fill, const T* window[3]) {
  for (int ky = 0; ky < 3; ++ky) {
    const int64_t iy = oy * stride - 1 + ky;
    if (iy < 0 || iy >= h) {
      window[ky] = pad;
      continue;
    }
    const int64_t key = img * h + iy, slot = iy % 3;
    T* row = ring + slot * row_size;
    if (held[slot] != key) {
      fill(key, row);
      held[slot] = key;
    }
    window[ky] = row;
  }
}

std::vector<float> dequantized_weight(const int8_t* q, const float* scales, int64_t c) {
  std::vector<float> w(static_cast<size_t>(c * 9));
  dequantize_per_channel(q, scales, c * 9, 9, w.data());
  return w;
}

}  // namespace

QuantDepthwise3x3::QuantDepthwise3x3(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t stride,
                                     const int8_t* weight, const float* weight_scales,
                                     const float* bias, Clamp act, Quant in, Requant out,
                                     int threads, const Storage& storage)
    : float_(batch, h, w, c, stride, dequantized_weight(weight, weight_scales, c).data(), bias, act,
             1, storage),
      batch_(batch),
      h_(h),
      w_(w),
      c_(c),
      stride_(stride),
      in_(in),
      out_(out),
      threads_(std::max(threads, 1)) {
  integers_ = in_integers(weight, c);
  if (!integers_) return;
  // In integers: each row's three taps one four-product sum (vpdpbusd, or pmaddubsw and
  // pmaddwd), the sums exact, then requantized as QuantPointwise does (1 / out scale folded into
  // the multiplier and the bias).
  const simd::Kernels* k = simd::kernels();
  const int32_t in_shift = static_cast<int32_t>(in.zero_point) + 128;
  w4_ = Stored<int32_t>(static_cast<size_t>(3 * c), storage, 0);
  std::vector<int32_t> sums(static_cast<size_t>(c), 0);
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t ky = 0; ky < 3; ++ky) {
      uint32_t quad = 0;
      for (int64_t kx = 0; kx < 3; ++kx) {
        const int8_t q = weight[ch * 9 + ky * 3 + kx];
        quad |= static_cast<uint32_t>(static_cast<uint8_t>(q)) << (8 * kx);
        sums[static_cast<size_t>(ch)] += q;
      }
      w4_[static_cast<size_t>(ky * c + ch)] = static_cast<int32_t>(quad);
    }
  }
  rq_ = Requantize::make(sums.data(), weight_scales, bias, c, c, in.scale, in.zero_point, act,
                         out.inv_scale, out.zero_point, storage);
  pad_row_ = Stored<int32_t>(static_cast<size_t>(w * c), storage, 0);
  const std::vector<uint8_t> pad_bytes(static_cast<size_t>(w * c), static_cast<uint8_t>(in_shift));
  k->quads_row(pad_bytes.data(), w, c, stride, static_cast<uint8_t>(in_shift), pad_row_.data());
}

bool QuantDepthwise3x3::in_integers(const int8_t* weight, int64_t c) {
  const simd::Kernels* k = simd::kernels();
  if (k == nullptr) return false;
  // pmaddubsw's 16-bit pairs, 2 * 255 * 64 at most, cannot saturate with weights in [-64, 63].
  return k->vnni ||
         std::all_of(weight, weight + 9 * c, [](int8_t q) { return q >= -64 && q <= 63; });
}

int64_t QuantDepthwise3x3::per_thread() const {
  // Rows of int32 quads or floats, both 4 bytes a value; [w][c] each, c a multiple of 16.
  return integers_ ? 3 * w_ * c_ : (3 * w_ + out_w()) * c_;
}

size_t QuantDepthwise3x3::scratch_bytes() const {
  return static_cast<size_t>(threads_ * per_thread()) * 4;
}

void QuantDepthwise3x3::run(const uint8_t* src, uint8_t* dst, void* scratch) const {
  const int64_t vectors = c_ / kGroup, units = batch_ * out_h() * vectors;
  const int threads = static_cast<int>(std::min<int64_t>(threads_, units));
  const int64_t per = per_thread();
  auto part = [&](int64_t t, int64_t n) {
    const int64_t u0 = units * t / n, u1 = units * (t + 1) / n;
    if (integers_) {
      return run_integers(src, dst, u0, u1, static_cast<int32_t*>(scratch) + t * per);
    }
    float* ring = static_cast<float*>(scratch) + t * per;
    run_units(src, dst, u0, u1, ring, ring + 3 * w_ * c_);
  };
  if (threads <= 1) return part(0, 1);
#pragma omp parallel num_threads(threads)
  part(omp_get_thread_num(), omp_get_num_threads());
}

void QuantDepthwise3x3::run_integers(const uint8_t* src, uint8_t* dst, int64_t u0, int64_t u1,
                                     int32_t* ring) const {
  const int64_t vectors = c_ / kGroup, row_in = w_ * c_, row_out = out_w() * c_;
  const simd::Kernels& k = *simd::kernels();
  const auto pad = static_cast<uint8_t>(static_cast<int32_t>(in_.zero_point) + 128);
  int64_t held[3] = {-1, -1, -1};  // which input row (image * h + y) each ring slot holds
  for (int64_t r = u0 / vectors; r * vectors < u1; ++r) {
    const int64_t img = r / out_h(), oy = r % out_h();
    const int32_t* window[3];
    // A padding row's quads dequantize to 0: they add nothing to the exact sum.
    ring_window<int32_t>(
        ring, row_in, held, img, oy, stride_, h_, pad_row_.data(),
        [&](int64_t key, int32_t* row) {
          k.quads_row(src + key * row_in, w_, c_, stride_, pad, row);
        },
        window);
    const int64_t c_begin = (std::max(u0, r * vectors) - r * vectors) * kGroup;
    const int64_t c_end = (std::min(u1, (r + 1) * vectors) - r * vectors) * kGroup;
    k.depthwise_u8_row(window, out_w(), c_, w4_.data(), rq_, c_begin, c_end, dst + r * row_out);
  }
}

void QuantDepthwise3x3::run_units(const uint8_t* src, uint8_t* dst, int64_t u0, int64_t u1,
                                  float* ring, float* out_row) const {
  const int64_t vectors = c_ / kGroup, row_in = w_ * c_, row_out = out_w() * c_;
  const float in_shift = in_.zero_point + 128.f;
  const float inv = out_.inv_scale;
  const simd::Kernels& k = *simd::kernels();  // callers checked own_kernels_supported()
  int64_t held[3] = {-1, -1, -1};  // which input row (image * h + y) each ring slot holds
  for (int64_t r = u0 / vectors; r * vectors < u1; ++r) {
    const int64_t img = r / out_h(), oy = r % out_h();
    const float* window[3];
    ring_window<float>(
        ring, row_in, held, img, oy, stride_, h_, nullptr,
        [&](int64_t key, float* row) {
          k.dequantize_u8(src + key * row_in, row, row_in, in_shift, in_.scale);
        },
        window);
    const int64_t c_begin = (std::max(u0, r * vectors) - r * vectors) * kGroup;
    const int64_t c_end = (std::min(u1, (r + 1) * vectors) - r * vectors) * kGroup;
    float_.row(window, c_begin, c_end, out_row);
    uint8_t* q = dst + r * row_out;
    if (c_begin == 0 && c_end == c_) {
      k.quantize_u8(out_row, q, row_out, inv, out_.zero_point);
      continue;
    }
    for (int64_t ox = 0; ox < out_w(); ++ox) {
      k.quantize_u8(out_row + ox * c_ + c_begin, q + ox * c_ + c_begin, c_end - c_begin, inv,
                    out_.zero_point);
    }
  }
}

}  // namespace ember::cpu
