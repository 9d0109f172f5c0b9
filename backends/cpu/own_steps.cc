#include "backends/cpu/own_steps.h"

#include <initializer_list>
#include <string_view>
#include <utility>

#include "backends/cpu/simd_kernels.h"

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
  s.run = [kernel = std::move(kernel), src, residual, dst]() {
    kernel->run(in_of(src), in_of(residual), out_of(dst));
  };
  return s;
}

OwnStep depthwise_step(std::shared_ptr<Depthwise3x3> kernel, int64_t batch, int64_t h, int64_t w,
                       int64_t c, int64_t stride, dnnl::memory src, dnnl::memory dst) {
  OwnStep s{OwnKind::Depthwise, "convolution,ember:depthwise,forward_inference,,", "", {}};
  s.problem = cat({"g",     n(c),      "mb",        n(batch), "_ic", n(c),
                   "oc",    n(c),      "_ih",       n(h),     "oh",  n(kernel->out_h()),
                   "kh3sh", n(stride), "dh0ph1_iw", n(w),     "ow",  n(kernel->out_w()),
                   "kw3sw", n(stride), "dw0pw1"});
  s.run = [kernel = std::move(kernel), src, dst]() { kernel->run(in_of(src), out_of(dst)); };
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
  s.run = [b = std::move(b), m, act, threads, src, residual, dst]() {
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
  s.run = [b = std::move(b), m, act, sum, threads, a, dst]() {
    float* y = out_of(dst);
    gemm_threads(threads, m, *b, in_of(a), b->k, sum ? y : nullptr, b->n, y, b->n, act);
  };
  return s;
}

OwnStep group_quant_matmul_step(std::shared_ptr<QuantPackedMatrix> b, int64_t m, int threads,
                                dnnl::memory a, dnnl::memory zero_points, dnnl::memory scales,
                                dnnl::memory dst) {
  const bool dynamic = static_cast<bool>(scales);
  OwnStep s{OwnKind::GroupQuantMatMul,
            cat({"matmul,ember:quant_gemm,forward_inference,", dynamic ? "src_dyn_s8," : "",
                 "wei_s", n(b->bits), ",attr-group:", n(b->group)}),
            cat({n(m), "x", n(b->k), ":", n(b->k), "x", n(b->n), ":", n(m), "x", n(b->n)}),
            {}};
  // The dequantized input, (a - zero) * scale in float32 as PyTorch computes it.
  auto x = std::make_shared<AlignedFloats>(dynamic ? static_cast<size_t>(m * b->k) : 0);
  s.run = [b = std::move(b), m, threads, a, zero_points, scales, dst, x]() {
    const float* in = in_of(a);
    if (!x->empty()) {
      const float *zero = in_of(zero_points), *scale = in_of(scales);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t i = 0; i < b->k; ++i) {
          (*x)[static_cast<size_t>(r * b->k + i)] = (in[r * b->k + i] - zero[r]) * scale[r];
        }
      }
      in = x->data();
    }
    quant_gemm_threads(threads, m, *b, in, b->k, out_of(dst), b->n);
  };
  return s;
}

OwnStep dot_matmul_step(std::shared_ptr<DotPackedMatrix> b, int64_t m, int threads, dnnl::memory a,
                        dnnl::memory zero_points, dnnl::memory scales, dnnl::memory dst) {
  OwnStep s{OwnKind::DotMatMul,
            cat({"matmul,ember:dot_gemm,forward_inference,src_dyn_s8,wei_s", n(b->bits),
                 ",attr-group:", n(b->group)}),
            cat({n(m), "x", n(b->k), ":", n(b->k), "x", n(b->n), ":", n(m), "x", n(b->n)}),
            {}};
  auto rows = std::make_shared<DotRows>();
  s.run = [b = std::move(b), m, threads, a, zero_points, scales, dst, rows]() {
    rows->set(m, b->k, b->group, in_of(a), in_of(zero_points), in_of(scales), b->bits == 8);
    dot_gemm_threads(threads, m, *b, *rows, out_of(dst), b->n);
  };
  return s;
}

OwnStep quantized_input_matmul_step(std::shared_ptr<DotPackedMatrix> dot,
                                    std::shared_ptr<QuantPackedMatrix> b, int64_t m, float eps,
                                    int threads, dnnl::memory a, dnnl::memory dst) {
  const int64_t k = dot ? dot->k : b->k, n_out = dot ? dot->n : b->n;
  const int64_t group = dot ? dot->group : b->group;
  OwnStep s{dot ? OwnKind::DotMatMul : OwnKind::GroupQuantMatMul,
            cat({"matmul,ember:", dot ? "dot_gemm" : "quant_gemm",
                 ",forward_inference,src_f32_per_token_s8,wei_s", n(dot ? dot->bits : b->bits),
                 ",attr-group:", n(group)}),
            cat({n(m), "x", n(k), ":", n(k), "x", n(n_out), ":", n(m), "x", n(n_out)}),
            {}};
  auto rows = std::make_shared<DotRows>();
  auto x = std::make_shared<AlignedFloats>(dot ? 0 : static_cast<size_t>(m * k));
  s.run = [dot = std::move(dot), b = std::move(b), m, k, group, eps, threads, a, dst, rows, x]() {
    rows->quantize(m, k, group, in_of(a), eps, dot && dot->bits == 8);
    if (dot) {
      dot_gemm_threads(threads, m, *dot, *rows, out_of(dst), dot->n);
      return;
    }
    rows->dequantize(m, k, x->data());
    quant_gemm_threads(threads, m, *b, x->data(), k, out_of(dst), b->n);
  };
  return s;
}

}  // namespace ember::cpu
