// The cpu backend's policy over Ember's own kernels, and its OpenMP split of the shared packed
// GEMM (ember_gemm: runtime/kernels/gemm/packed_gemm.h, which this header brings in):
//
//   if (!own_kernels_supported()) return false;               // oneDNN runs it instead
//   PackedMatrix b = PackedMatrix::pack(w, bias, k, n);
//   gemm_threads(threads, m, b, a, k, nullptr, 0, c, n, Clamp{0.f, 6.f});
//
// Own kernels run from AVX2 up only (the library's generic variant exists, but below AVX2 the
// backend leaves every op to oneDNN); which ops take them on each ISA is decided here, from the
// measurements in simd_kernels.h.
#pragma once

#include <cstdint>

#include "runtime/kernels/gemm/packed_gemm.h"

namespace ember::cpu {

// PackedMatrix's column group, and the channel unit of the depthwise and inverted residual
// kernels: a 512-bit vector, two 256-bit ones.
inline constexpr int64_t kGroup = PackedMatrix::kGroup;
inline int64_t round_up_group(int64_t n) { return (n + kGroup - 1) / kGroup * kGroup; }

// Below this many elements an element-wise pass runs on the calling thread: a parallel region
// costs a microsecond or two, more than a pass over a few thousand values.
inline constexpr int64_t kMinParallelElements = int64_t{1} << 15;

// Whether Ember's own kernels may run: cpu_isa() (runtime/platform/cpu_isa.h) is AVX2 or
// AVX-512 (each has its variant), so the CPU has it and EMBER_CPU_ISA does not cap it off.
bool own_kernels_supported();
// Whether the backend runs convolutions on them too (kernels/simd_kernels.h:
// Kernels::convolutions): AVX-512 only for now.
bool own_conv_kernels_chosen();
// Whether it runs matmuls of several rows by a constant matrix on them (Kernels::linear).
bool own_linear_kernels_chosen();

// packed_gemm.h's gemm() on up to `threads` OpenMP threads, each taking an even share of the
// units (gemm_units; inline on one thread).
void gemm_threads(int threads, int64_t m, const PackedMatrix& b, const float* a, int64_t lda,
                  const float* r, int64_t ldr, float* c, int64_t ldc, Clamp act);

}  // namespace ember::cpu
