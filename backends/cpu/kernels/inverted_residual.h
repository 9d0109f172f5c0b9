// A fused fp32 kernel for MobileNet's inverted residual block, in channels-last (NHWC) layout:
//
//   [1x1 expand + act]  ->  3x3 depthwise (stride 1 or 2, padding 1) + act  ->  1x1 project
//   [+ residual] [+ act]
//
// Run as three oneDNN convolutions, the expanded tensor (6x the block's channels) goes to memory
// and comes back twice; in MobileNetV2's first blocks that is 5 MB a layer, and those layers run
// at 10-30% of the FMA peak. This kernel computes the block an output row at a time: each
// thread keeps the few expanded rows the depthwise windows need in a ring of rows (L2), the
// depthwise rows in L1, and writes only the block's output. Each expanded row is computed once
// per thread (a thread's first rows recompute at most 2 rows of its neighbour's). Narrow maps
// take several output rows a step, so that the 1x1 GEMMs (packed_gemm.h) have enough rows. The
// depthwise pass loads each input column once for the three windows over it. Every buffer is
// cache-line aligned.
//
//   InvertedResidual::Params p;  p.h = 56; ...;  p.expand_w = w1; ...
//   InvertedResidual k(p, threads);           // packs the weights (copies them), sizes scratch
//   k.run(src, residual_or_null, dst);        // NHWC in, NHWC out; allocates nothing
//
// Activations are clamps: relu is [0, inf), relu6/hardtanh [lo, hi], none (-inf, inf); NaN passes
// through as NaN, as in PyTorch. Sums are in a different order from ATen's, so results agree to
// rounding (the tests compare with ATen at 1e-4). The kernel needs AVX2 or AVX-512:
// `own_kernels_supported()` (kernels/policy.h) says whether this CPU has one; callers fall back to
// oneDNN when it does not.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/policy.h"

namespace ember::cpu {

// One core's L2 cache in bytes (sysconf), or 1 MiB where the system does not say. The cpu backend
// fuses a block only where its expanded tensor of one image is at least this: smaller, oneDNN's
// three convolutions keep it in L2 and are as fast or faster (docs/backends/cpu.md).
int64_t l2_cache_bytes();

class InvertedResidual {
 public:
  struct Params {
    int64_t batch = 1, h = 0, w = 0;    // the block's input
    int64_t cin = 0, ce = 0, cout = 0;  // ce: expanded channels (= cin without expansion)
    int64_t stride = 1;                 // of the depthwise convolution: 1 or 2
    // PyTorch layouts, dense fp32. expand_w [ce, cin] (null: no expansion, ce == cin);
    // dw_w [ce, 9]; project_w [cout, ce]; biases [channels] or null.
    const float* expand_w = nullptr;
    const float* expand_b = nullptr;
    const float* dw_w = nullptr;
    const float* dw_b = nullptr;
    const float* project_w = nullptr;
    const float* project_b = nullptr;
    // Or a stem in place of the expansion (MobileNet's first convolution): a 3x3 convolution,
    // padding 1, of an NCHW image [batch][cin][image_h][image_w] into the ce channels; h and w
    // are then its output's. stem_w [ce, cin, 3, 3]. Its activation is expand_act.
    const float* stem_w = nullptr;
    const float* stem_b = nullptr;
    int64_t stem_stride = 1;  // 1 or 2
    int64_t image_h = 0, image_w = 0;
    Clamp expand_act, dw_act, project_act;  // project_act applies after the residual
  };

  // Runs on `threads` OpenMP threads (at most one per output row). The weights are packed into
  // `storage` (PackedMatrix::pack; empty: the heap; it gives the bytes or throws).
  InvertedResidual(const Params& p, int threads, const Storage& storage = {});

  int64_t out_h() const { return out_h_; }
  int64_t out_w() const { return out_w_; }

  // The working memory run() takes: per thread, a band of input rows, depthwise rows [, image
  // rows].
  size_t scratch_bytes() const { return static_cast<size_t>(scratch_per_thread_ * threads_) * 4; }
  // dst[b, y, x, c] for the whole batch; `src` is NHWC, or the NCHW image with a stem;
  // `residual` (null: none) has dst's shape, NHWC. `src` and `residual` must not overlap `dst`.
  // `scratch`: scratch_bytes() on a cache line. Reentrant, each caller with its own scratch.
  void run(const float* src, const float* residual, float* dst, void* scratch) const;

 private:
  // Output rows [row_begin, row_end) of the batch (image * out_h + y).
  void run_rows(const float* src, const float* residual, float* dst, int64_t row_begin,
                int64_t row_end, float* scratch) const;
  // Row y of the stem's output for image img into `out` ([w][ce_pad]).
  void stem_row(const float* src, int64_t img, int64_t y, float* image_rows, float* out) const;

  Params p_;
  int threads_ = 1;
  int64_t out_h_ = 0, out_w_ = 0;
  int64_t ce_pad_ = 0;  // expanded channels rounded up to 16 (one vector)
  bool has_expand_ = false;
  PackedMatrix expand_;  // the expansion's or the stem's weights
  bool has_stem_ = false;
  Stored<int32_t> stem_taps_;     // offset of each of the stem's cin * 9 taps in image_rows
  int64_t image_row_floats_ = 0;  // one zero-padded image row: image_w + 2
  Stored<float> dw_w_, dw_b_;     // [9][ce_pad], [ce_pad]
  PackedMatrix project_;
  int64_t scratch_per_thread_ = 0;  // floats, a multiple of 16
  int64_t group_ = 1;               // output rows computed together
};

}  // namespace ember::cpu
