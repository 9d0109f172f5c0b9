// The avx2 variant of ember_gemm (see variant.inc, and the dispatch in gemm.cc).
#define EMBER_GEMM_ISA avx2
#define EMBER_GEMM_VBYTES 32
#define EMBER_GEMM_MR 6
#define EMBER_GEMM_TILE_VECS 2
#include "runtime/kernels/gemm/variant.inc"
