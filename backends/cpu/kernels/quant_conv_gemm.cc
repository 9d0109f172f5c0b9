#include "backends/cpu/kernels/quant_conv_gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/simd_kernels.h"

namespace ember::cpu {
namespace {

// n bytes from `from` to `to` (not overlapping), in copies of constant size (moves the compiler
// inlines: a tap's run is a few to a few hundred bytes, where a call of memcpy cost a third of a
// small layer), the last one overlapping the one before.
inline void copy_run(uint8_t* to, const uint8_t* from, int64_t n) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(to + i, from + i, 16);
    if (i < n) std::memcpy(to + n - 16, from + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, from + n - 4, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) to[i] = from[i];
  }
}

inline void fill_run(uint8_t* to, uint8_t value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) to[i] = value;
}

}  // namespace

QuantGatheredConv QuantGatheredConv::pack(const Shape& shape, const int8_t* q, Order order,
                                          const float* weight_scales, const float* bias, int64_t n,
                                          float in_scale, float in_zero_point, Clamp act,
                                          float out_inv, float out_zero_point,
                                          const Storage& storage, QuantPointwise::Form form) {
  const int64_t taps = shape.kh * shape.kw, c = shape.c;
  const int64_t k = (taps * c + 3) / 4 * 4;
  // [n][kh][kw][c], the gathered row's order, then zeros to k: the weight itself where it is so.
  std::vector<int8_t> rows;
  if (order == Order::Oihw || k != taps * c) {
    rows.assign(static_cast<size_t>(n * k), 0);
    for (int64_t j = 0; j < n; ++j) {
      int8_t* to = rows.data() + j * k;
      if (order == Order::Ohwi) {
        std::memcpy(to, q + j * taps * c, static_cast<size_t>(taps * c));
        continue;
      }
      const int8_t* from = q + j * c * taps;
      for (int64_t t = 0; t < taps; ++t) {
        for (int64_t ch = 0; ch < c; ++ch) *to++ = from[ch * taps + t];
      }
    }
  }
  QuantGatheredConv out;
  out.shape_ = shape;
  out.pad_ = static_cast<uint8_t>(static_cast<int32_t>(in_zero_point) + 128);
  out.w_ = QuantPointwise::pack(rows.empty() ? q : rows.data(), weight_scales, bias, k, n, in_scale,
                                in_zero_point, act, out_inv, out_zero_point, storage, form);
  return out;
}

// As the 1x1 kernel blocks its rows (kernels/simd_convolutions.inc, quant_pointwise): about 16 KB
// of gathered bytes, a multiple of 24 rows (every tile's) from 24 to 240, so that a block is
// gathered into L1 and multiplied while it is there.
int64_t QuantGatheredConv::block_rows() const {
  return std::clamp<int64_t>(16384 / std::max<int64_t>(k(), 1) / 24 * 24, 24, 240);
}

size_t QuantGatheredConv::scratch_bytes(int threads) const {
  const int64_t per_thread = (block_rows() * k() + 63) / 64 * 64;
  return static_cast<size_t>(std::max(threads, 1) * per_thread);
}

void QuantGatheredConv::gather(const uint8_t* src, int64_t row_begin, int64_t row_end,
                               uint8_t* rows) const {
  const Shape& s = shape_;
  const int64_t k = this->k(), c = s.c, used = s.kh * s.kw * c;
  // The first row's pixel, then each next one by counting (three divisions a row were a third of
  // a small layer's gather).
  int64_t ox = row_begin % s.out_w, oy = row_begin / s.out_w % s.out_h;
  int64_t b = row_begin / (s.out_w * s.out_h);
  for (int64_t r = row_begin; r < row_end; ++r) {
    if (r != row_begin && ++ox == s.out_w) {
      ox = 0;
      if (++oy == s.out_h) {
        oy = 0;
        ++b;
      }
    }
    uint8_t* row = rows + (r - row_begin) * k;
    const uint8_t* image = src + b * s.h * s.w * c;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
      uint8_t* taps = row + ky * s.kw * c;
      if (iy < 0 || iy >= s.h) {
        fill_run(taps, pad_, s.kw * c);
        continue;
      }
      const int64_t x0 = ox * s.stride_w - s.pad_w;
      if (s.dilation_w == 1 && x0 >= 0 && x0 + s.kw <= s.w) {
        // The row's taps are adjacent pixels: one run.
        copy_run(taps, image + (iy * s.w + x0) * c, s.kw * c);
        continue;
      }
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = x0 + kx * s.dilation_w;
        if (ix < 0 || ix >= s.w) {
          fill_run(taps + kx * c, pad_, c);
        } else {
          copy_run(taps + kx * c, image + (iy * s.w + ix) * c, c);
        }
      }
    }
    fill_run(row + used, 0, k - used);
  }
}

// Threads split the blocks of rows, each gathering its blocks into its own share of the scratch;
// where the blocks are fewer than the threads (ResNet's last layers: 49 rows or fewer), the rows
// are gathered once and the threads split the panels (the weight, most of the bytes there).
void QuantGatheredConv::run(int threads, const uint8_t* src, uint8_t* dst, void* scratch) const {
  const simd::Kernels& kernels = *simd::kernels();
  const int64_t m = shape_.batch * shape_.out_h * shape_.out_w, block = block_rows();
  const int64_t blocks = (m + block - 1) / block, n = this->n(), panels = w_.w.panels;
  const int64_t per_thread = (block * k() + 63) / 64 * 64;
  threads = std::max(threads, 1);
  if (blocks < threads && panels > blocks) {
    // The scratch holds threads blocks, so these fewer.
    gather(src, 0, m, static_cast<uint8_t*>(scratch));
    quant_pointwise_threads(threads, m, w_, static_cast<const uint8_t*>(scratch), dst);
    return;
  }
  auto run_blocks = [&](int64_t first, int64_t last, uint8_t* rows) {
    for (int64_t i = first; i < last; ++i) {
      const int64_t begin = i * block, end = std::min(m, begin + block);
      gather(src, begin, end, rows);
      kernels.quant_pointwise(0, end - begin, w_, rows, dst + begin * n, 0, panels);
    }
  };
  threads = static_cast<int>(std::min<int64_t>(threads, blocks));
  if (threads <= 1) {
    run_blocks(0, blocks, static_cast<uint8_t*>(scratch));
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    run_blocks(blocks * t / count, blocks * (t + 1) / count,
               static_cast<uint8_t*>(scratch) + t * per_thread);
  }
}

}  // namespace ember::cpu
