// The AVX-512 variant of the cpu backend's own kernels (see kernels/simd_kernels.h).
#define EMBER_SIMD_ISA avx512
#define EMBER_SIMD_VBYTES 64
#define EMBER_SIMD_DW_COLS 8
#define EMBER_SIMD_CONVOLUTIONS true
#define EMBER_SIMD_LINEAR false
#include "backends/cpu/kernels/simd_kernels.inc"
