// Dense float32 rows of softmax, log_softmax and layer norm: the inner loops of those kernels when
// the row is contiguous in memory (the last dim of a dense tensor, the common case).
//
//   softmax_row_f32(x, y, n, /*log=*/false);                  // y[0..n) = softmax(x[0..n))
//   layer_norm_row_f32(x, y, n, w, b, 1e-5f, &mean, &rstd);  // w, b may be null
//
// Pointers are borrowed for the call; x and y may be the same row. The loops are plain C++ written
// so that the compiler vectorizes them (independent lanes, no per-element index math, no libm
// call); on x86-64 they are also compiled for AVX2 and AVX-512 and picked at load time (the rest of
// the library is built for the baseline ISA). Results match the strided kernels' semantics: NaN
// anywhere in a softmax row makes the row NaN, sums are accumulated in double, and layer norm's
// statistics are the two-pass mean and biased variance of row_stats (normalization.h), in double,
// and the row is normalized in double too.
#pragma once

#include <cstdint>

namespace ember {

// Softmax (or log-softmax with `log`) of one contiguous row of `n` floats.
void softmax_row_f32(const float* x, float* y, int64_t n, bool log);

// Layer norm of one contiguous row of `n` floats: y = (x - mean) * rstd * w + b, with
// rstd = 1 / sqrt(var + eps); a null `w` means 1 and a null `b` means 0.
void layer_norm_row_f32(const float* x, float* y, int64_t n, const float* w, const float* b,
                        float eps, float* mean, float* rstd);

}  // namespace ember
