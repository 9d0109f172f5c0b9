// The generic variant of the GEMM (see gemm_kernel.inc and the dispatch in gemm.cc).
#define EMBER_GEMM_ISA generic
#define EMBER_GEMM_VBYTES 16
#define EMBER_GEMM_MR 6
#include "runtime/kernels/portable/util/gemm_kernel.inc"
