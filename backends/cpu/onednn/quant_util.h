// Helpers of the cpu delegate's quantized steps (onednn/quant_conv.cc, onednn/quant_matmul.cc),
// internal.
#pragma once

#include <omp.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/kernels/policy.h"

namespace ember::cpu::delegate {

// A quantize's 1 / scale or a dequantize's scale, and the zero point, of an int8 grid.
inline bool int8_params(float inv_or_scale, float zero_point) {
  return std::isfinite(inv_or_scale) && inv_or_scale > 0 && zero_point >= -128.f &&
         zero_point <= 127.f && zero_point == std::nearbyint(zero_point);
}

// The post-ops of a quantized convolution before its first quantize or dequantize.
inline size_t before_requantize(const OpDesc& op) {
  size_t k = 0;
  while (k < op.post_ops.size() &&
         (op.post_ops[k].is_sum || (op.post_ops[k].alg != EltwiseAlg::Quantize &&
                                    op.post_ops[k].alg != EltwiseAlg::Dequantize))) {
    ++k;
  }
  return k;
}

// Integers within [-64, 63]: without VNNI, oneDNN adds pairs of u8 x s8 products in 16 bits
// (vpmaddubsw), which such weights cannot saturate.
inline bool seven_bits(const int8_t* q, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (q[i] < -64 || q[i] > 63) return false;
  }
  return true;
}

// f(begin, count) over [0, n) in `threads` even parts.
template <typename F>
void split(int64_t n, int threads, F f);

// split() of n elements of an element-wise pass: one thread below kMinParallelElements
// (kernels/policy.h; an int8 autoencoder's 128-value requantizes took 0.9 us each on two threads).
template <typename F>
void split_elements(int64_t n, int threads, F f) {
  split(n, n < kMinParallelElements ? 1 : threads, f);
}

template <typename F>
void split(int64_t n, int threads, F f) {
  if (threads <= 1) {  // no parallel region to enter
    if (n > 0) f(0, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t parts = omp_get_num_threads(), part = omp_get_thread_num();
    const int64_t begin = n * part / parts, end = n * (part + 1) / parts;
    if (end > begin) f(begin, end - begin);
  }
}

}  // namespace ember::cpu::delegate
