// Private to ember_gemm: the ISA variants, one translation unit each (variant.inc compiled by
// variant_generic.cc, variant_avx2.cc and variant_avx512.cc), and the one in force.
#pragma once

#include <cstdint>

#include "runtime/kernels/gemm/gemm.h"
#include "runtime/kernels/gemm/packed_gemm.h"

namespace ember::gemm_variants {

struct Variant {
  const char* name;  // gemm_isa()
  // gemm.h's front-end.
  void (*f32)(const GemmProblem<float>& p, ThreadPool* threads);
  void (*f64)(const GemmProblem<double>& p, ThreadPool* threads);
  double (*fma_probe)(double seconds);
  // packed_gemm.h's front-end: rows of a tile over a panel of nv groups (the unit of
  // gemm_units), and the dense and gathered forms over the units [unit_begin, unit_end).
  int64_t (*rows_for)(int64_t nv);
  void (*packed)(int64_t m, const PackedMatrix& b, const float* a, int64_t lda, const float* r,
                 int64_t ldr, float* c, int64_t ldc, Clamp act, int64_t unit_begin,
                 int64_t unit_end);
  void (*packed_gathered)(int64_t m, const PackedMatrix& b, const float* a, int64_t lda,
                          const int32_t* k_offsets, float* c, int64_t ldc, Clamp act,
                          int64_t unit_begin, int64_t unit_end);
};

const Variant& variant_generic();
#if defined(EMBER_GEMM_X86_VARIANTS)
const Variant& variant_avx2();
const Variant& variant_avx512();
#endif

// The variant cpu_isa() allows (runtime/platform/cpu_isa.h), decided once (gemm.cc).
const Variant& variant();

}  // namespace ember::gemm_variants
