// The avx2 variant of the GEMM (see gemm_kernel.inc and the dispatch in gemm.cc).
#define EMBER_GEMM_ISA avx2
#define EMBER_GEMM_VBYTES 32
#define EMBER_GEMM_MR 6
#include "runtime/kernels/portable/util/gemm_kernel.inc"
