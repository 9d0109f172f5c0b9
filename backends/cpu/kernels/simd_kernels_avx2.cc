// The AVX2 + FMA variant of the cpu backend's own kernels (see kernels/simd_kernels.h).
#define EMBER_SIMD_ISA avx2
#define EMBER_SIMD_VBYTES 32
#define EMBER_SIMD_DW_COLS 4
#define EMBER_SIMD_CONVOLUTIONS false
#define EMBER_SIMD_LINEAR true
#include "backends/cpu/kernels/simd_kernels.inc"
