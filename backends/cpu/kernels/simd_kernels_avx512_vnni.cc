// The AVX-512 variant of the cpu backend's own kernels on CPUs with VNNI (see
// kernels/simd_kernels.h): the same source, the integer linear's four-product sums one vpdpbusd
// each.
#define EMBER_SIMD_ISA avx512_vnni
#define EMBER_SIMD_VBYTES 64
#define EMBER_SIMD_DW_COLS 8
#define EMBER_SIMD_CONVOLUTIONS true
#define EMBER_SIMD_LINEAR false
#define EMBER_SIMD_VNNI 1
#include "backends/cpu/kernels/simd_kernels.inc"
