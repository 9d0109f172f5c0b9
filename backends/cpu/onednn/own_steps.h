// How Ember's own kernels run as steps of the cpu delegate; runtime/cpu_runtime.cc decides where
// they apply and builds their buffers. Each step reads its buffers' data pointers at execute (a
// caller's buffer is rebound every call), runs on the delegate's OpenMP threads, and carries a
// name and a problem in the shape of oneDNN's verbose lines (EMBER_CPU_VERBOSE,
// bench/layer_report.py) and its kind (summarize()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "backends/cpu/kernels/depthwise.h"
#include "backends/cpu/kernels/inverted_residual.h"
#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_conv_gemm.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace ember::cpu {

// Exact: the steps that keep ATen's NaN semantics where oneDNN's primitives lose them
// (kernels/nan_exact.h: clamps, max pooling, softmax rows).
enum class OwnKind {
  InvertedResidual,
  Depthwise,
  Pointwise,
  GatheredConv,  // an int8 convolution as gathered rows by the 1x1 kernel (QuantGatheredConv)
  MatVec,
  SmallMatMul,  // a small product of two activations on Ember's GEMM (onednn/matmul.cc)
  GroupQuantMatMul,
  DotMatMul,
  Int8Elementwise,  // a quantize to uint8, an add of uint8 values (onednn/quant_conv.cc)
  Lookup,           // a unary op of uint8 values requantized, as a table (onednn/quant_chain.cc)
  Exact,
  Pad,  // a constant padding (kernels/pad.h)
};

struct OwnStep {
  OwnKind kind;
  std::string what;     // "KIND,IMPL,PROP,MDS,ATTRS" as oneDNN prints them
  std::string problem;  // in the style of oneDNN's verbose lines
  // Runs the step with `scratch`, scratch_bytes of working memory on a cache line that the
  // delegate's steps share (they run one after another), contents unknown.
  std::function<void(void* scratch)> run;
  size_t scratch_bytes = 0;
};

// `p`: the parameters the kernel was built from (with their weight pointers: they say whether
// it has an expansion or a stem). `residual`: empty for none.
OwnStep inverted_residual_step(std::shared_ptr<InvertedResidual> kernel,
                               const InvertedResidual::Params& p, dnnl::memory src,
                               dnnl::memory residual, dnnl::memory dst);

// src [batch][h][w][c] -> dst, channels-last.
OwnStep depthwise_step(std::shared_ptr<Depthwise3x3> kernel, int64_t batch, int64_t h, int64_t w,
                       int64_t c, int64_t stride, dnnl::memory src, dnnl::memory dst);
// The same of quantized values, uint8 in and out (QuantDepthwise3x3).
OwnStep quant_depthwise_step(std::shared_ptr<QuantDepthwise3x3> kernel, int64_t batch, int64_t h,
                             int64_t w, int64_t c, int64_t stride, dnnl::memory src,
                             dnnl::memory dst);

// The int8 1x1 convolution of the uint8 channels-last src [batch][h][w][b.w.k] -> dst
// [...][b.w.n], requantized (QuantPointwise).
OwnStep quant_pointwise_step(std::shared_ptr<QuantPointwise> b, int64_t batch, int64_t h, int64_t w,
                             int threads, dnnl::memory src, dnnl::memory dst);

// The int8 convolution of the uint8 channels-last src -> dst (QuantGatheredConv's shape),
// requantized.
OwnStep quant_gathered_step(std::shared_ptr<QuantGatheredConv> conv, int threads, dnnl::memory src,
                            dnnl::memory dst);

// A 1x1 convolution of the channels-last src [batch][h][w][b.k] -> dst [...][b.n]; residual
// (empty for none) has dst's shape.
OwnStep pointwise_step(std::shared_ptr<PackedMatrix> b, int64_t batch, int64_t h, int64_t w,
                       Clamp act, int threads, dnnl::memory src, dnnl::memory residual,
                       dnnl::memory dst);

// m rows a [m][b.k] by b -> dst [m][b.n] (a matrix-vector product for m = 1); with `sum`, dst
// holds the summand when the step runs.
OwnStep matvec_step(std::shared_ptr<PackedMatrix> b, int64_t m, Clamp act, bool sum, int threads,
                    dnnl::memory a, dnnl::memory dst);

// m rows by a grouped-integer weight -> dst [m][cols] (kernels/quant_gemm.h). The input is a itself
// (floats); or, with zero_points and scales (m each), (a - zero) * scale, a holding integers; or,
// with a quantizer, a quantized as torchao's per-token quantization or PT2E's dynamic per-tensor
// one (DotRows::quantize, DotRows::quantize_tensor).
// A quantized input runs in integers with `dot` (a weight of zero points 0); else `b` takes the
// floats (dequantized where quantized).
OwnStep group_quant_matmul_step(std::shared_ptr<DotPackedMatrix> dot,
                                std::shared_ptr<QuantPackedMatrix> b, int64_t m, int threads,
                                std::optional<InputQuantizer> quantizer, dnnl::memory a,
                                dnnl::memory zero_points, dnnl::memory scales, dnnl::memory dst);

}  // namespace ember::cpu
