// The avx512 variant of ember_gemm (see variant.inc, and the dispatch in gemm.cc).
#define EMBER_GEMM_ISA avx512
#define EMBER_GEMM_VBYTES 64
#define EMBER_GEMM_MR 12
#define EMBER_GEMM_TILE_VECS 4
#include "runtime/kernels/gemm/variant.inc"
