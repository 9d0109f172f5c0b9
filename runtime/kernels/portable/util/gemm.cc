#include "runtime/kernels/portable/util/gemm.h"

#include "runtime/kernels/portable/util/gemm_variants.h"
#include "runtime/platform/cpu_isa.h"

// Why ISA variants: the portable library is built without -march flags so that one binary runs on
// any CPU of its architecture, which leaves the compiler SSE2 on x86-64, a quarter of the FMA
// width of an AVX-512 core. The GEMM is the one place where that costs most of the time of a model,
// so it alone is compiled three times (gemm_kernel.inc: generic, -mavx2 -mfma, -mavx512f...) and
// the widest variant the CPU and OS support is picked once, at first use, by
// cpu_isa() (runtime/platform/cpu_isa.h: EMBER_CPU_ISA caps it). The kernel stays plain C++ (vector
// extensions, no intrinsics), and the rest of the library stays portable.

namespace ember {
namespace {

struct Variant {
  void (*f32)(const GemmProblem<float>&, ThreadPool*);
  void (*f64)(const GemmProblem<double>&, ThreadPool*);
  double (*probe)(double);
  const char* name;
};

Variant pick() {
#if defined(EMBER_GEMM_X86_VARIANTS)
  switch (cpu_isa()) {
    case CpuIsa::Avx512:
      return {gemm_variants::run_f32_avx512, gemm_variants::run_f64_avx512,
              gemm_variants::fma_probe_avx512, "avx512"};
    case CpuIsa::Avx2:
      return {gemm_variants::run_f32_avx2, gemm_variants::run_f64_avx2,
              gemm_variants::fma_probe_avx2, "avx2"};
    case CpuIsa::Generic:
      break;
  }
#endif
  return {gemm_variants::run_f32_generic, gemm_variants::run_f64_generic,
          gemm_variants::fma_probe_generic, "generic"};
}

const Variant& variant() {
  static const Variant v = pick();
  return v;
}

}  // namespace

void gemm(const GemmProblem<float>& p, ThreadPool* threads) { variant().f32(p, threads); }
void gemm(const GemmProblem<double>& p, ThreadPool* threads) { variant().f64(p, threads); }
const char* gemm_isa() { return variant().name; }
double measure_fma_peak_flops(double seconds) { return variant().probe(seconds); }

}  // namespace ember
