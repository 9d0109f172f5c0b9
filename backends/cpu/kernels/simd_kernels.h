// The instruction-set variants of the cpu backend's own kernels that are not a GEMM: the 3x3
// depthwise row (kernels/depthwise.h), the grouped-integer linears (kernels/quant_gemm.h) and the
// uint8 rows of an int8 chain. (The float GEMM, packed_gemm.h's, is the shared library's:
// runtime/kernels/gemm, its own variants, the same cpu_isa() choice.) Each is written once, in
// kernels/simd_kernels.inc and the families it includes, kernels/simd_convolutions.inc and
// kernels/simd_linear.inc (GCC/Clang vector extensions; the few integer instructions they do not
// reach, int8 widening and byte dot products, as intrinsics), and compiled once per variant:
// kernels/simd_kernels_avx2.cc (AVX2 + FMA, 8 floats a vector, 16 registers),
// kernels/simd_kernels_avx512.cc (AVX-512F, 16 floats a vector, 32 registers) and
// kernels/simd_kernels_avx512_vnni.cc (the same with VNNI's vpdpbusd). kernels() picks the variant
// cpu_isa() allows (EMBER_CPU_ISA caps it) and the CPU has, or none below AVX2, where the backend
// leaves every op to oneDNN (and the grouped linears to plain loops). Callers use kernels/policy.h,
// kernels/depthwise.h and kernels/quant_gemm.h, not this header.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"

namespace ember::cpu::simd {

struct Kernels {
  const char* name;  // "avx2", "avx512"
  // Whether the backend takes convolutions with them (the inverted residual, depthwise and
  // pointwise steps) rather than oneDNN's: on AVX-512; not yet on AVX2, where oneDNN's were
  // faster on MobileNetV2 (Zen 3; the matrix-vector step is faster there, and runs).
  bool convolutions;
  // Whether the backend takes matmuls of several rows by a constant matrix (a linear layer over
  // a sequence) with them rather than oneDNN's sgemm: on AVX2, where oneDNN 2.6's ran BERT's and
  // Llama's at a third of the peak; not on AVX-512, where oneDNN's was 3-5 % faster (Sapphire
  // Rapids, bench/ab_runners.py 12 rounds: BERT 180 against 188 ms at 1 thread, 95 against 100
  // at 2; Llama prefill 41.2 against 42.4, 23.9 against 24.7), and level after the GEMM's k
  // chunks (BERT 204.6 against 202.7 ms own at 1 thread, 110.7 against 109.5 at 2; Llama
  // prefill 49.0 against 46.7, 26.7 against 27.2). One row always.
  bool linear;
  // depthwise_row() of depthwise.h.
  void (*depthwise_row)(int64_t stride, const float* const rows[3], int64_t ld, int64_t w,
                        int64_t wo, const float* wts, const float* bias, int64_t cpad,
                        int64_t c_begin, int64_t c_end, float* out, Clamp act);
  // quant_gemm() of kernels/quant_gemm.h over the panels [panel_begin, panel_end).
  void (*quant_gemm)(int64_t m, const QuantPackedMatrix& b, const float* a, int64_t lda, float* c,
                     int64_t ldc, int64_t panel_begin, int64_t panel_end);
  // dot_gemm_threads() of kernels/quant_gemm.h over the panels [panel_begin, panel_end).
  void (*dot_gemm)(int64_t m, const DotPackedMatrix& b, const DotRows& rows, float* c, int64_t ldc,
                   int64_t panel_begin, int64_t panel_end);
  // x = (q - shift) * scale for n bytes q: PyTorch's dequantize of int8 values held as q + 128
  // (shift = zero point + 128).
  void (*dequantize_u8)(const uint8_t* q, float* x, int64_t n, float shift, float scale);
  // q = quantize_int8(y, inv, zero_point) + 128 (kernels/quant_gemm.h), for n floats y (any: NaN
  // gives 128, infinities saturate).
  void (*quantize_u8)(const float* y, uint8_t* q, int64_t n, float inv, float zero_point);
  // Rows [row_begin, row_end) by panels [panel_begin, panel_end) of quant_pointwise_threads()
  // (kernels/quant_gemm.h).
  void (*quant_pointwise)(int64_t row_begin, int64_t row_end, const QuantPointwise& b,
                          const uint8_t* a, uint8_t* c, int64_t panel_begin, int64_t panel_end);
  // Whether the four-product sums are vpdpbusd's (any int8 weight), or pmaddubsw's 16-bit pairs
  // (weights within [-64, 63]).
  bool vnni;
  // The integer 3x3 depthwise convolution (QuantDepthwise3x3, kernels/depthwise.h; without VNNI for
  // weights within [-64, 63] only). quads_row: a uint8 row x [w][c] as r4[q / stride][ch], for q =
  // 0, stride, ..., the bytes x[q - 1][ch], x[q][ch], x[q + 1][ch], 0 (`pad` outside the row): an
  // output pixel's three taps of the row, one dot4 operand. depthwise_u8_row: output channels
  // [c_begin, c_end) of one row from the three input rows' quads, the weights w4 [3][c] (a row's
  // three taps, then 0), requantized by rq (kernels/quant_gemm.h) into out [wo][c].
  void (*quads_row)(const uint8_t* x, int64_t w, int64_t c, int64_t stride, uint8_t pad,
                    int32_t* r4);
  void (*depthwise_u8_row)(const int32_t* const rows[3], int64_t wo, int64_t c, const int32_t* w4,
                           const Requantize& rq, int64_t c_begin, int64_t c_end, uint8_t* out);
};

const Kernels& kernels_avx2();
const Kernels& kernels_avx512();
const Kernels& kernels_avx512_vnni();  // the same, the integer linear by vpdpbusd

// The variant cpu_isa() allows, or null (below AVX2). Decided once.
const Kernels* kernels();

}  // namespace ember::cpu::simd
