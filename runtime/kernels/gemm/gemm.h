// The strided front-end of Ember's one GEMM library (ember_gemm): mm, bmm, addmm, baddbmm and
// convolution of the portable kernels all go through `gemm`.
//
//   GemmProblem<float> p{m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1};
//   gemm(p, ctx.threads);  // C = alpha * A·B + beta * C
//
// Operands are described by element strides (row stride, column stride), so transposed and
// permuted inputs need no copy. B may instead be an implicit im2col matrix of a convolution input
// (`Im2col`), packed on the fly, so convolution needs no column buffer. Packing buffers live on
// the calling thread's stack (under 1 MiB); nothing is allocated on the heap. The register tile
// is the one packed_gemm.h's front-end runs (tile.inc): B is packed per block into its panel
// format, A into strips.
#pragma once

#include <cstdint>

namespace ember {

class ThreadPool;

// The implicit B matrix of a convolution: row r = (channel, kh, kw), column j = (oh, ow).
struct Im2col {
  int64_t channel_stride, h_stride, w_stride;  // element strides of the input image
  int64_t height, width;                       // input spatial size
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t out_w;  // output width (columns are oh * out_w + ow)
};

template <typename T>
struct GemmProblem {
  int64_t m, n, k;
  T alpha;
  const T* a;
  int64_t a_rs, a_cs;
  const T* b;  // a strided matrix, or the image of `im2col` when that is non-null
  int64_t b_rs, b_cs;
  T beta;  // 0 means C is not read (NaN in C does not propagate), as in BLAS
  T* c;
  int64_t c_rs, c_cs;
  const Im2col* im2col = nullptr;
};

// C = alpha * A·B + beta * C for float or double, split over `threads` (may be null) when large.
// Float, with beta 0: an element that comes out inf or NaN is summed again in double (gemm.cc,
// redo_non_finite), so an overflow of the float partial sums that exact arithmetic avoids is
// undone; with beta != 0 C's old value is gone by then, so callers add a bias after the GEMM.
// Runs the widest ISA variant this CPU supports (see gemm.cc).
void gemm(const GemmProblem<float>& p, ThreadPool* threads);
void gemm(const GemmProblem<double>& p, ThreadPool* threads);

// The ISA variant `gemm` (and packed_gemm.h's) runs on this CPU: "avx512", "avx2" or "generic".
const char* gemm_isa();

// Runs a chain of independent vector FMAs of the variant `gemm` uses and returns the floating-point
// operations per second of float32 measured over `seconds` of wall time: the FMA peak of one core
// that benchmarks report GEMM against.
double measure_fma_peak_flops(double seconds);

}  // namespace ember
