// Private to gemm.cc: the ISA variants of the GEMM, one translation unit each (gemm_kernel.inc).
#pragma once

#include "runtime/kernels/portable/util/gemm.h"

namespace ember::gemm_variants {

#define EMBER_GEMM_DECLARE_VARIANT(isa)                                  \
  void run_f32_##isa(const GemmProblem<float>& p, ThreadPool* threads);  \
  void run_f64_##isa(const GemmProblem<double>& p, ThreadPool* threads); \
  double fma_probe_##isa(double seconds);

EMBER_GEMM_DECLARE_VARIANT(generic)
#if defined(EMBER_GEMM_X86_VARIANTS)
EMBER_GEMM_DECLARE_VARIANT(avx2)
EMBER_GEMM_DECLARE_VARIANT(avx512)
#endif
#undef EMBER_GEMM_DECLARE_VARIANT

}  // namespace ember::gemm_variants
