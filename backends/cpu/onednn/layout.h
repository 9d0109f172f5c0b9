// Layouts and small oneDNN conversions the cpu engine's builders share: dims, dense and
// strided plain layouts, views of reshaped storage, element-wise algorithms in oneDNN's terms,
// and the engine's limits and switches. Internal to backends/cpu/onednn.
//
//   memory::desc md = plain_md(to_dims(t.dims), dt::f32, t.dim_order);
//   memory::dims s = reshaped_strides(dims, plain_strides(md), new_dims);  // empty: needs a copy
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace ember::cpu::delegate {

using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

memory::dims to_dims(const std::vector<int64_t>& d);
// "1x3x224x224", as the problems of own steps print dims.
std::string dims_text(const memory::dims& d);

// Strides of a dense tensor whose dims are laid out in `order` (outermost first; empty: in order).
memory::dims dense_strides(const memory::dims& dims, const std::vector<uint8_t>& order);

memory::desc plain_md(const memory::dims& dims, dt type, const std::vector<uint8_t>& order = {});

// The data of m as T*.
template <typename T>
T* data_as(const memory& m) {
  void* p = nullptr;
  dnnl_memory_get_data_handle(m.get(), &p);
  return static_cast<T*>(p);
}

// The strides of `md` when it is a plain (unblocked) f32 layout, any strides; else empty.
memory::dims plain_strides(const memory::desc& md);

// The strides that show a tensor of `dims` with `strides` as `new_dims` over the same storage,
// or empty when no strides do (a reshape that needs a copy). torch's view rule: dims merged or
// split only where the old ones are contiguous to each other.
memory::dims reshaped_strides(const memory::dims& dims, const memory::dims& strides,
                              const memory::dims& new_dims);

// Writes `from` into `to` as a oneDNN reorder would, without one: both f32 of the same dims,
// `from` plain with any strides, `to` any blocked layout (the ones oneDNN's primitives take for
// their weights, such as ABcd8b8a: its padding written with zeros) with no extra flags and no
// offset. Element by element through a table of each dim's offsets; for weights at load, where a
// reorder's JIT kernel would take longer to generate than a small weight to copy. False, with
// nothing written, for anything else.
bool copy_to_blocked(const memory& from, const memory& to);
// The largest weight Build::reorder_now copies so. Measured on AVX2 (EPYC), one thread: to
// ABcd8b8a from OHWI, 4096 elements take 12 us by copy_to_blocked, 30-40 us by a reorder
// primitive of a new shape (its JIT kernel) and about 10 us by one of a shape already made;
// 32768 take 90 us either way.
inline constexpr int64_t kCopiedWeightElements = 8192;

// `dims` right-aligned to `rank` with leading ones (broadcast operands, biases).
memory::dims pad_rank(const memory::dims& dims, size_t rank);

dnnl::algorithm eltwise_alg(EltwiseAlg a);

// (alpha, beta) in oneDNN's terms for one of our element-wise ops.
std::pair<float, float> eltwise_params(EltwiseAlg a, float alpha, float beta);

inline constexpr uint64_t kMaxActivationBytes = uint64_t{4} << 30;

// A 3x3 convolution of at most this many channels (an image's: RGB, RGBA) before a depthwise block
// is fused into it as its stem: oneDNN runs such a convolution at half the FMA peak, and the
// image's reorder to channels-last and the 3x3's output (32 x 112 x 112 floats in MobileNetV2)
// never go to memory.
inline constexpr int64_t kMaxStemChannels = 4;

// oneDNN's Winograd F(4x4, 3x3) subtracts inputs in its tile transforms: one inf becomes
// inf - inf = NaN, and a NaN spreads over the tile, where the direct convolution (ATen's) keeps
// them where the windows hold them. With |w| <= kWinogradMaxWeight (and the bias), input
// channels <= kWinogradMaxChannels and |x| <= kWinogradMaxInput, no transform, product or sum
// reaches 2^120 (the transforms grow a value by less than 2^15 in all), so Winograd's result is
// finite exactly where the direct one is: everywhere. Other convolutions run direct.
inline constexpr float kWinogradMaxInput = 0x1p48f;
inline constexpr float kWinogradMaxWeight = 0x1p32f;
inline constexpr int64_t kWinogradMaxChannels = int64_t{1} << 24;

// A plain channels-last (NHWC) f32 layout of NCHW `dims`.
memory::desc nhwc_md(const std::vector<int64_t>& dims);

// The runtime half's switches, from the compile specs (runtime/cpu_runtime.cc).
struct DelegateOptions {
  bool winograd = false;    // "fp32_winograd": 3x3 stride-1 fp32 convolutions by Winograd
  bool own_kernels = true;  // "ember_kernels": Ember's own kernels where they apply
  bool int8 = true;         // "int8": quantized convolutions in integers where the CPU has VNNI
};

}  // namespace ember::cpu::delegate
