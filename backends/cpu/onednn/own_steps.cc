#include "backends/cpu/onednn/own_steps.h"

#include <initializer_list>
#include <string_view>
#include <utility>

#include "backends/cpu/kernels/simd_kernels.h"

namespace ember::cpu {
namespace {

// The data pointer of `m` at execute; no exceptions.
void* handle_of(const dnnl::memory& m) {
  void* p = nullptr;
  dnnl_memory_get_data_handle(m.get(), &p);
  return p;
}

const float* in_of(const dnnl::memory& m) {
  return m ? static_cast<const float*>(handle_of(m)) : nullptr;
}

float* out_of(const dnnl::memory& m) { return static_cast<float*>(handle_of(m)); }

std::string n(int64_t v) { return std::to_string(v); }

// The parts one after another (appends: gcc 12 warns falsely of overlapping copies in chains
// of operator+).
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

}  // namespace

OwnStep inverted_residual_step(std::shared_ptr<InvertedResidual> kernel,
                               const InvertedResidual::Params& p, dnnl::memory src,
                               dnnl::memory residual, dnnl::memory dst) {
  // The implementation names the instruction set of the kernels (ember:avx2, ember:avx512).
  OwnStep s{OwnKind::InvertedResidual,
            cat({"inverted_residual,ember:", simd::kernels()->name, ",forward_inference,,"}),
            "",
            {}};
  s.problem = cat({"mb",
                   n(p.batch),
                   "_ic",
                   n(p.cin),
                   "ec",
                   n(p.ce),
                   "oc",
                   n(p.cout),
                   "_ih",
                   n(p.h),
                   "oh",
                   n(kernel->out_h()),
                   "_iw",
                   n(p.w),
                   "ow",
                   n(kernel->out_w()),
                   "_s",
                   n(p.stride),
                   p.expand_w != nullptr ? "_expand" : "",
                   p.stem_w != nullptr ? cat({"_stem3x3s", n(p.stem_stride)}) : "",
                   residual ? "_residual" : ""});
  s.scratch_bytes = kernel->scratch_bytes();
  s.run = [kernel = std::move(kernel), src, residual, dst](void* scratch) {
    kernel->run(in_of(src), in_of(residual), out_of(dst), scratch);
  };
  return s;
}

namespace {

// A 3x3 depthwise convolution's problem, in oneDNN's verbose style.
std::string depthwise_problem(int64_t batch, int64_t h, int64_t w, int64_t c, int64_t stride,
                              int64_t oh, int64_t ow) {
  return cat({"g",         n(c),  "mb", n(batch), "_ic",   n(c),      "oc",
              n(c),        "_ih", n(h), "oh",     n(oh),   "kh3sh",   n(stride),
              "dh0ph1_iw", n(w),  "ow", n(ow),    "kw3sw", n(stride), "dw0pw1"});
}

}  // namespace

OwnStep depthwise_step(std::shared_ptr<Depthwise3x3> kernel, int64_t batch, int64_t h, int64_t w,
                       int64_t c, int64_t stride, dnnl::memory src, dnnl::memory dst) {
  OwnStep s{OwnKind::Depthwise,
            "convolution,ember:depthwise,forward_inference,,",
            depthwise_problem(batch, h, w, c, stride, kernel->out_h(), kernel->out_w()),
            {}};
  s.run = [kernel = std::move(kernel), src, dst](void*) { kernel->run(in_of(src), out_of(dst)); };
  return s;
}

OwnStep quant_depthwise_step(std::shared_ptr<QuantDepthwise3x3> kernel, int64_t batch, int64_t h,
                             int64_t w, int64_t c, int64_t stride, dnnl::memory src,
                             dnnl::memory dst) {
  OwnStep s{OwnKind::Depthwise,
            "convolution,ember:depthwise_u8,forward_inference,,",
            depthwise_problem(batch, h, w, c, stride, kernel->out_h(), kernel->out_w()),
            {}};
  s.scratch_bytes = kernel->scratch_bytes();
  s.run = [kernel = std::move(kernel), src, dst](void* scratch) {
    kernel->run(static_cast<const uint8_t*>(handle_of(src)), static_cast<uint8_t*>(handle_of(dst)),
                scratch);
  };
  return s;
}

OwnStep quant_pointwise_step(std::shared_ptr<QuantPointwise> b, int64_t batch, int64_t h, int64_t w,
                             int threads, dnnl::memory src, dnnl::memory dst) {
  OwnStep s{OwnKind::Pointwise, "convolution,ember:pointwise_u8,forward_inference,,", "", {}};
  s.problem = cat({"mb", n(batch), "_ic", n(b->w.k), "oc", n(b->w.n), "_ih", n(h), "oh", n(h),
                   "kh1sh1dh0ph0_iw", n(w), "ow", n(w), "kw1sw1dw0pw0"});
  const int64_t m = batch * h * w;
  s.run = [b = std::move(b), m, threads, src, dst](void*) {
    quant_pointwise_threads(threads, m, *b, static_cast<const uint8_t*>(handle_of(src)),
                            static_cast<uint8_t*>(handle_of(dst)));
  };
  return s;
}

OwnStep quant_gathered_step(std::shared_ptr<QuantGatheredConv> conv, int threads, dnnl::memory src,
                            dnnl::memory dst) {
  OwnStep s{OwnKind::GatheredConv, "convolution,ember:gathered_u8,forward_inference,,", "", {}};
  const QuantGatheredConv::Shape& g = conv->shape();
  s.problem = cat({"mb", n(g.batch),    "_ic", n(g.c),
                   "oc", n(conv->n()),  "_ih", n(g.h),
                   "oh", n(g.out_h),    "kh",  n(g.kh),
                   "sh", n(g.stride_h), "dh",  n(g.dilation_h - 1),
                   "ph", n(g.pad_h),    "_iw", n(g.w),
                   "ow", n(g.out_w),    "kw",  n(g.kw),
                   "sw", n(g.stride_w), "dw",  n(g.dilation_w - 1),
                   "pw", n(g.pad_w)});
  s.scratch_bytes = conv->scratch_bytes(threads);
  s.run = [conv = std::move(conv), threads, src, dst](void* scratch) {
    conv->run(threads, static_cast<const uint8_t*>(handle_of(src)),
              static_cast<uint8_t*>(handle_of(dst)), scratch);
  };
  return s;
}

OwnStep pointwise_step(std::shared_ptr<PackedMatrix> b, int64_t batch, int64_t h, int64_t w,
                       Clamp act, int threads, dnnl::memory src, dnnl::memory residual,
                       dnnl::memory dst) {
  OwnStep s{
      OwnKind::Pointwise,
      cat({"convolution,ember:pointwise,forward_inference,,", residual ? "attr-post-ops:sum" : ""}),
      "",
      {}};
  s.problem = cat({"mb", n(batch), "_ic", n(b->k), "oc", n(b->n), "_ih", n(h), "oh", n(h),
                   "kh1sh1dh0ph0_iw", n(w), "ow", n(w), "kw1sw1dw0pw0"});
  const int64_t m = batch * h * w;
  s.run = [b = std::move(b), m, act, threads, src, residual, dst](void*) {
    gemm_threads(threads, m, *b, in_of(src), b->k, in_of(residual), b->n, out_of(dst), b->n, act);
  };
  return s;
}

OwnStep matvec_step(std::shared_ptr<PackedMatrix> b, int64_t m, Clamp act, bool sum, int threads,
                    dnnl::memory a, dnnl::memory dst) {
  OwnStep s{OwnKind::MatVec,
            cat({"matmul,ember:", m == 1 ? "matvec" : "packed_gemm", ",forward_inference,,",
                 sum ? "attr-post-ops:sum" : ""}),
            cat({n(m), "x", n(b->k), ":", n(b->k), "x", n(b->n), ":", n(m), "x", n(b->n)}),
            {}};
  s.run = [b = std::move(b), m, act, sum, threads, a, dst](void*) {
    float* y = out_of(dst);
    gemm_threads(threads, m, *b, in_of(a), b->k, sum ? y : nullptr, b->n, y, b->n, act);
  };
  return s;
}

OwnStep group_quant_matmul_step(std::shared_ptr<DotPackedMatrix> dot,
                                std::shared_ptr<QuantPackedMatrix> b, int64_t m, int threads,
                                std::optional<InputQuantizer> quantizer, dnnl::memory a,
                                dnnl::memory zero_points, dnnl::memory scales, dnnl::memory dst) {
  const int64_t k = dot ? dot->k : b->k, cols = dot ? dot->n : b->n;
  const int64_t group = dot ? dot->group : b->group, bits = dot ? dot->bits : b->bits;
  const bool integers = quantizer || static_cast<bool>(scales);  // a quantized input
  OwnStep s{dot ? OwnKind::DotMatMul : OwnKind::GroupQuantMatMul,
            cat({"matmul,ember:", dot ? "dot_gemm" : "quant_gemm", ",forward_inference,",
                 !quantizer              ? (integers ? "src_dyn_s8," : "")
                 : quantizer->per_tensor ? "src_f32_per_tensor_s8,"
                                         : "src_f32_per_token_s8,",
                 "wei_s", n(bits), ",attr-group:", n(group)}),
            cat({n(m), "x", n(k), ":", n(k), "x", n(cols), ":", n(m), "x", n(cols)}),
            {}};
  // The working memory: the rows' integers, then (a quantized input by `b`) their dequantized
  // floats.
  const bool unsigned_operands = dot && dot->bits == 8;
  const size_t rows_bytes = integers ? DotRows::bytes(m, k, group, unsigned_operands) : 0;
  s.scratch_bytes =
      rows_bytes + (integers && !dot ? static_cast<size_t>(m * k) * sizeof(float) : 0);
  s.run = [dot = std::move(dot), b = std::move(b), m, k, group, cols, threads, quantizer, integers,
           unsigned_operands, rows_bytes, a, zero_points, scales, dst](void* scratch) {
    const float* in = in_of(a);
    if (integers) {
      DotRows rows(scratch, m, k, group, unsigned_operands);
      if (quantizer && quantizer->per_tensor) {
        rows.quantize_tensor(in, quantizer->eps);
      } else if (quantizer) {
        rows.quantize(in, quantizer->eps);
      } else {
        rows.set(in, in_of(zero_points), in_of(scales));
      }
      if (dot) {
        dot_gemm_threads(threads, m, *dot, rows, out_of(dst), cols);
        return;
      }
      auto* x = reinterpret_cast<float*>(static_cast<std::byte*>(scratch) + rows_bytes);
      rows.dequantize(x);
      in = x;
    }
    quant_gemm_threads(threads, m, *b, in, k, out_of(dst), cols);
  };
  return s;
}

}  // namespace ember::cpu
