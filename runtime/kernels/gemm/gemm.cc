#include "runtime/kernels/gemm/gemm.h"

#include <cmath>

#include "runtime/kernels/gemm/variants.h"
#include "runtime/platform/cpu_isa.h"

// Why ISA variants: the runtime is built without -march flags so that one binary runs on any CPU
// of its architecture, which leaves the compiler SSE2 on x86-64, a quarter of the FMA width of an
// AVX-512 core. The GEMM is the one place where that costs most of the time of a model, so it
// alone is compiled three times (variant.inc: generic, -mavx2 -mfma, -mavx512f...) and the widest
// variant the CPU and OS support is picked once, at first use, by cpu_isa()
// (runtime/platform/cpu_isa.h: EMBER_CPU_ISA caps it). The kernel stays plain C++ (vector
// extensions, no intrinsics), and the rest of the library stays portable.

namespace ember {
namespace gemm_variants {

const Variant& variant() {
  static const Variant& v = []() -> const Variant& {
#if defined(EMBER_GEMM_X86_VARIANTS)
    switch (cpu_isa()) {
      case CpuIsa::Avx512:
        return variant_avx512();
      case CpuIsa::Avx2:
        return variant_avx2();
      case CpuIsa::Generic:
        break;
    }
#endif
    return variant_generic();
  }();
  return v;
}

}  // namespace gemm_variants

namespace {

// Element (r, j) of B: a strided matrix, or the implicit im2col matrix (zero in the padding).
float b_at(const GemmProblem<float>& p, int64_t r, int64_t j) {
  if (p.im2col == nullptr) return p.b[r * p.b_rs + j * p.b_cs];
  const Im2col& g = *p.im2col;
  const int64_t taps = g.kernel_h * g.kernel_w;
  const int64_t kh = (r % taps) / g.kernel_w, kw = r % g.kernel_w;
  const int64_t ih = (j / g.out_w) * g.stride_h - g.pad_h + kh * g.dilation_h;
  const int64_t iw = (j % g.out_w) * g.stride_w - g.pad_w + kw * g.dilation_w;
  if (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width) return 0.0f;
  return p.b[(r / taps) * g.channel_stride + ih * g.h_stride + iw * g.w_stride];
}

// An element of C that came out inf or NaN may be an overflow of float partial sums that the
// order of summation decides (values near float32's maximum): ATen's order may stay finite, or
// reach +inf before it meets the -inf that makes ours NaN. Such an element is summed again in
// double, where the products of floats cannot overflow, and rounded once: the value exact
// arithmetic rounds to, inf only where the true sum overflows, NaN only where the products hold
// inf - inf or 0 * inf. The scan costs one pass over C; the redo runs only on those elements.
void redo_non_finite(const GemmProblem<float>& p) {
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      float& c = p.c[i * p.c_rs + j * p.c_cs];
      if (std::isfinite(c)) continue;
      double sum = 0.0;
      for (int64_t r = 0; r < p.k; ++r) {
        sum += static_cast<double>(p.a[i * p.a_rs + r * p.a_cs]) * b_at(p, r, j);
      }
      c = static_cast<float>(static_cast<double>(p.alpha) * sum);
    }
  }
}

}  // namespace

void gemm(const GemmProblem<float>& p, ThreadPool* threads) {
  gemm_variants::variant().f32(p, threads);
  // beta * C is read from C, which now holds the result: callers pass beta 0 (bias added after).
  if (p.beta == 0.0f && p.k > 0) redo_non_finite(p);
}
void gemm(const GemmProblem<double>& p, ThreadPool* threads) {
  gemm_variants::variant().f64(p, threads);
}
const char* gemm_isa() { return gemm_variants::variant().name; }
double measure_fma_peak_flops(double seconds) {
  return gemm_variants::variant().fma_probe(seconds);
}

}  // namespace ember
