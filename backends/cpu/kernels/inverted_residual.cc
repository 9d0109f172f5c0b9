#include "backends/cpu/kernels/inverted_residual.h"

#include <omp.h>

#include <unistd.h>

#include <algorithm>

#include "backends/cpu/kernels/depthwise.h"

namespace ember::cpu {
namespace {

// w pixels of c channels (stride c) into rows of stride ld (the padding channels untouched).
void copy_row(const float* in, int64_t c, int64_t w, float* out, int64_t ld) {
  for (int64_t x = 0; x < w; ++x) std::copy_n(in + x * c, c, out + x * ld);
}

}  // namespace

int64_t l2_cache_bytes() {
  static const int64_t bytes = [] {
    const long b = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return b > 0 ? static_cast<int64_t>(b) : int64_t{1} << 20;
  }();
  return bytes;
}

InvertedResidual::InvertedResidual(const Params& p, int threads, const Storage& storage)
    : p_(p), threads_(std::max(threads, 1)) {
  out_h_ = (p.h - 1) / p.stride + 1;  // (h + 2 - 3) / stride + 1
  out_w_ = (p.w - 1) / p.stride + 1;
  ce_pad_ = round_up_group(p.ce);
  dw_w_ = Stored<float>(static_cast<size_t>(9 * ce_pad_), storage, 0.f);
  dw_b_ = Stored<float>(static_cast<size_t>(ce_pad_), storage, 0.f);
  for (int64_t c = 0; c < p.ce; ++c) {
    for (int t = 0; t < 9; ++t) dw_w_[t * ce_pad_ + c] = p.dw_w[c * 9 + t];
    if (p.dw_b != nullptr) dw_b_[c] = p.dw_b[c];
  }
  project_ = PackedMatrix::pack(p.project_w, p.project_b, p.ce, p.cout, storage);
  // Output rows a step: enough that the projection's GEMM has about 48 rows (narrow late
  // blocks), at most 8.
  group_ = std::clamp<int64_t>((48 + out_w_ - 1) / out_w_, 1, 8);
  if (p.expand_w != nullptr) {
    expand_ = PackedMatrix::pack(p.expand_w, p.expand_b, p.cin, p.ce, storage);
  }
  has_expand_ = p.expand_w != nullptr;
  has_stem_ = p.stem_w != nullptr;
  if (has_stem_) {
    // [ce][cin][3][3] is the GEMM's [n][k], taps in (channel, ky, kx) order; tap (c, ky, kx) of
    // output column x reads image row c * 3 + ky, padded column x * stride + kx.
    expand_ = PackedMatrix::pack(p.stem_w, p.stem_b, p.cin * 9, p.ce, storage);
    image_row_floats_ = p.image_w + 2;
    stem_taps_ = Stored<int32_t>(static_cast<size_t>(p.cin * 9), storage, 0);
    for (int64_t c = 0; c < p.cin; ++c) {
      for (int64_t ky = 0; ky < 3; ++ky) {
        for (int64_t kx = 0; kx < 3; ++kx) {
          stem_taps_[static_cast<size_t>((c * 3 + ky) * 3 + kx)] =
              static_cast<int32_t>((c * 3 + ky) * image_row_floats_ + kx);
        }
      }
    }
  }
  // The caller's weights are copied; nothing points at them any more.
  p_.expand_w = p_.expand_b = p_.dw_w = p_.dw_b = p_.project_w = p_.project_b = nullptr;
  p_.stem_w = p_.stem_b = nullptr;
  scratch_per_thread_ = ((group_ * p.stride + 2) * p.w + group_ * out_w_) * ce_pad_ +
                        round_up_group(p.cin * 3 * image_row_floats_);
}

// Threads split the output rows; each computes the expanded rows its windows need, so a thread
// recomputes at most 2 rows of its neighbour's.
void InvertedResidual::run(const float* src, const float* residual, float* dst,
                           void* scratch) const {
  const int64_t rows = p_.batch * out_h_;
  const int threads = static_cast<int>(std::min<int64_t>(threads_, rows));
  auto* per_thread = static_cast<float*>(scratch);
  if (threads <= 1) {
    run_rows(src, residual, dst, 0, rows, per_thread);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    run_rows(src, residual, dst, rows * t / n, rows * (t + 1) / n,
             per_thread + t * scratch_per_thread_);
  }
}

void InvertedResidual::run_rows(const float* src, const float* residual, float* dst,
                                int64_t row_begin, int64_t row_end, float* scratch) const {
  const int64_t h = p_.h, w = p_.w, cin = p_.cin, s = p_.stride;
  // The band: a ring of expanded input rows (row y in slot y % slots), each [w][ce_pad]; then
  // the group's depthwise rows, [group][out_w][ce_pad]. Without expansion, rows whose channels
  // fill whole vectors are read from src in place.
  const int64_t slots = group_ * s + 2;
  const int64_t row_floats = w * ce_pad_;
  float* band = scratch;
  float* dw_rows = scratch + slots * row_floats;
  float* image_rows = dw_rows + group_ * out_w_ * ce_pad_;  // with a stem: [cin][3][iw + 2]
  // The band's padding channels, which the depthwise pass reads (and nothing uses), are zero:
  // the scratch holds what another step left, perhaps subnormal floats, slow to multiply.
  if (ce_pad_ != p_.ce) std::fill(band, band + slots * row_floats, 0.f);
  const bool in_place = !has_expand_ && !has_stem_ && cin == ce_pad_;
  auto input_row = [&](int64_t img, int64_t y) -> const float* {
    return in_place ? src + (img * h + y) * w * cin : band + (y % slots) * row_floats;
  };
  int64_t band_image = -1, band_last = -1;  // the image and last input row the band holds
  for (int64_t row = row_begin; row < row_end;) {
    const int64_t img = row / out_h_, oy0 = row % out_h_;
    const int64_t rows = std::min({group_, row_end - row, out_h_ - oy0});
    // The input rows the group's windows cover, inside the image (at most `slots`). Those the
    // band holds from the previous group are kept; the rest are computed once.
    const int64_t first = std::max<int64_t>(oy0 * s - 1, 0);
    const int64_t last = std::min((oy0 + rows - 1) * s + 1, h - 1);
    if (band_image != img) band_last = -1;
    const int64_t from = std::max(first, band_last + 1);
    // Consecutive rows in consecutive slots go through one GEMM (rows w at a time: the
    // expansion's weights are streamed once a run, and narrow blocks get enough rows).
    for (int64_t y = from; y <= last && has_stem_; ++y) {
      stem_row(src, img, y, image_rows, band + (y % slots) * row_floats);
    }
    for (int64_t y = from; y <= last && !in_place && !has_stem_;) {
      const int64_t run = std::min(last + 1 - y, slots - y % slots);
      const float* in = src + ((img * h + y) * w) * cin;
      float* slot = band + (y % slots) * row_floats;
      if (has_expand_) {
        gemm(run * w, expand_, in, cin, nullptr, 0, slot, ce_pad_, p_.expand_act);
      } else {
        copy_row(in, cin, run * w, slot, ce_pad_);
      }
      y += run;
    }
    band_image = img;
    band_last = std::max(band_last, last);  // the group's rows are inside the ring
    for (int64_t r = 0; r < rows; ++r) {
      const float* window[3];
      for (int ky = 0; ky < 3; ++ky) {
        const int64_t iy = (oy0 + r) * s - 1 + ky;
        window[ky] = iy < 0 || iy >= h ? nullptr : input_row(img, iy);
      }
      float* out = dw_rows + r * out_w_ * ce_pad_;
      const int64_t ld = in_place ? cin : ce_pad_;
      depthwise_row(s, window, ld, w, out_w_, dw_w_.data(), dw_b_.data(), ce_pad_, 0, ce_pad_, out,
                    p_.dw_act);
    }
    const int64_t out_at = row * out_w_ * p_.cout;
    gemm(rows * out_w_, project_, dw_rows, ce_pad_,
         residual == nullptr ? nullptr : residual + out_at, p_.cout, dst + out_at, p_.cout,
         p_.project_act);
    row += rows;
  }
}

// Row y of the stem's output, [w][ce_pad]: the 3 x cin image rows its windows cover, zero-padded
// left and right (zero rows past the top and bottom), then one GEMM over the patches in place.
void InvertedResidual::stem_row(const float* src, int64_t img, int64_t y, float* image_rows,
                                float* out) const {
  const int64_t ih = p_.image_h, iw = p_.image_w, s = p_.stem_stride;
  for (int64_t c = 0; c < p_.cin; ++c) {
    for (int64_t ky = 0; ky < 3; ++ky) {
      float* row = image_rows + (c * 3 + ky) * image_row_floats_;
      const int64_t iy = y * s - 1 + ky;
      if (iy < 0 || iy >= ih) {
        std::fill(row, row + image_row_floats_, 0.f);
        continue;
      }
      row[0] = row[iw + 1] = 0.f;
      std::copy_n(src + ((img * p_.cin + c) * ih + iy) * iw, iw, row + 1);
    }
  }
  gemm_gathered(p_.w, expand_, image_rows, s, stem_taps_.data(), out, ce_pad_, p_.expand_act);
}

}  // namespace ember::cpu
