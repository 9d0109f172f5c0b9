// The avx512 variant of the GEMM (see gemm_kernel.inc and the dispatch in gemm.cc).
#define EMBER_GEMM_ISA avx512
#define EMBER_GEMM_VBYTES 64
#define EMBER_GEMM_MR 12
#include "runtime/kernels/portable/util/gemm_kernel.inc"
