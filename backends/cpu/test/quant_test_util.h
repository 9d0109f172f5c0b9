// The cpu backend's quantization tests' helpers: PyTorch's quantize and dequantize in ATen (the
// reference), their calls in IR text, and programs of quantized convolutions layer after layer.
#pragma once

#include <ATen/ATen.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {

// PyTorch's quantize_per_tensor to int8, as floats: clamp(round(x * (1 / scale)) + zp).
inline at::Tensor quantize(const at::Tensor& x, double scale, int64_t zp) {
  const auto inv = static_cast<float>(1.0 / scale);
  return at::clamp(at::round(x * inv) + static_cast<double>(zp), -128, 127);
}
inline at::Tensor dequantize(const at::Tensor& q, double scale, int64_t zp) {
  return (q - static_cast<double>(zp)) * static_cast<float>(scale);
}

inline std::string qdq_call(const std::string& op, const std::string& x, double scale, int64_t zp) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", scale);
  return "quantized_decomposed::" + op + ".default(input=" + x + ", scale=" + buf +
         ", zero_point=" + std::to_string(zp) + ", quant_min=-128, quant_max=127, dtype=dtype(i8)" +
         (op == "dequantize_per_tensor" ? ", out_dtype=none)" : ")");
}

inline std::string i8_type(const at::Tensor& t) {
  std::string s = type_of(t);
  return "i8" + s.substr(s.find('['));
}

// Requantized results against the reference's: at most `steps` steps of `step` apart, on at
// most one element in `per` (a tie rounded the other way moves a value a step, and the layers
// after it a few of theirs).
inline void expect_within_steps(const at::Tensor& got, const at::Tensor& want, double step,
                                int steps, int64_t per) {
  const at::Tensor diff = (got - want).abs();
  EXPECT_LE(diff.max().item<float>(), steps * step * 1.001);
  EXPECT_LE((diff > 0).sum().item<int64_t>(), want.numel() / per + 1);
}

// Whether a quantized convolution of `groups` groups whose weights lie within [-weight_max,
// weight_max], requantized, runs on Ember's kernel of gathered rows (QuantGatheredConv): full-range
// weights of one group without VNNI, where oneDNN's int8 kernels would saturate.
inline bool gathered_quant_conv(int64_t weight_max, int64_t groups = 1) {
  return !int8_supported() && own_kernels_supported() && weight_max > 63 && groups == 1;
}

// Whether it runs in integers at all: oneDNN's int8 kernels with VNNI, or with weights within
// [-64, 63] from AVX2 up, or Ember's kernel of gathered rows.
inline bool quant_conv_in_integers(int64_t weight_max, int64_t groups = 1) {
  return int8_supported() || (weight_max <= 63 && int8_7bit_supported()) ||
         gathered_quant_conv(weight_max, groups);
}

// Whether a quantized linear layer (requantized, k a multiple of 4) whose weights lie within
// [-weight_max, weight_max] runs in integers: oneDNN's int8 matmul with VNNI, or with weights
// within [-64, 63]; without VNNI Ember's int8 1x1 kernel, on any weights.
inline bool quant_linear_in_integers(int64_t weight_max) {
  return int8_supported() || (weight_max <= 63 && int8_7bit_supported()) || own_kernels_supported();
}

// The variants of the backend's own kernels this CPU runs (none below AVX2).
inline std::vector<const simd::Kernels*> simd_variants() {
  std::vector<const simd::Kernels*> variants;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    variants.push_back(&simd::kernels_avx2());
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    variants.push_back(&simd::kernels_avx512());
    if (__builtin_cpu_supports("avx512vnni")) variants.push_back(&simd::kernels_avx512_vnni());
  }
  return variants;
}

// A program of quantized convolutions (3x3 with padding 1, or 1x1), layer after layer: each a
// dequantize of an int8 weight with per-channel scales, the convolution, relu (or relu6), and a
// requantize.
struct QuantConvChain {
  Prog p;
  std::string decls, params, cur;

  QuantConvChain(const at::Tensor& x, double scale, int64_t zero_point) {
    quantize_input(p.input("x", x), x, scale, zero_point);
  }
  // The chain from value v (of like's type) of program `from`.
  QuantConvChain(Prog from, const std::string& v, const at::Tensor& like, double scale,
                 int64_t zero_point)
      : p(std::move(from)) {
    quantize_input(v, like, scale, zero_point);
  }
  void quantize_input(const std::string& v, const at::Tensor& like, double scale,
                      int64_t zero_point) {
    p.body.push_back("%xq: " + i8_type(like) + " = " +
                     qdq_call("quantize_per_tensor", v, scale, zero_point));
    cur = p.node("xd", like, qdq_call("dequantize_per_tensor", "%xq", scale, zero_point));
  }
  // y: the layer's float result (before requantizing), for its type.
  void add(const std::string& l, const at::Tensor& wq, const at::Tensor& scales,
           const at::Tensor& bias, const at::Tensor& y, int64_t stride, int64_t groups, bool relu6,
           double s_out, int64_t z_out) {
    const std::string yv = conv(l, wq, scales, bias, y, stride, groups);
    const std::string r =
        p.node("r" + l, y,
               relu6 ? "aten::hardtanh.default(self=" + yv + ", min_val=0, max_val=6)"
                     : "aten::relu.default(self=" + yv + ")");
    cur = requantize(l, r, y, s_out, z_out);
  }
  // A residual block's end: the convolution (stride 1) requantized to (s_mid, z_mid), plus
  // `residual` (an earlier value), relu if asked, requantized to (s_out, z_out).
  void add_residual(const std::string& l, const at::Tensor& wq, const at::Tensor& scales,
                    const at::Tensor& bias, const at::Tensor& y, double s_mid, int64_t z_mid,
                    const std::string& residual, bool relu, double s_out, int64_t z_out) {
    const std::string m = requantize("m" + l, conv(l, wq, scales, bias, y, 1, 1), y, s_mid, z_mid);
    std::string sum =
        p.node("sum" + l, y, "aten::add.Tensor(self=" + m + ", other=" + residual + ", alpha=1)");
    if (relu) sum = p.node("r" + l, y, "aten::relu.default(self=" + sum + ")");
    cur = requantize(l, sum, y, s_out, z_out);
  }
  std::string conv(const std::string& l, const at::Tensor& wq, const at::Tensor& scales,
                   const at::Tensor& bias, const at::Tensor& y, int64_t stride, int64_t groups) {
    const at::Tensor w = wq.to(at::kFloat) * scales.view({-1, 1, 1, 1});
    decls += "weight \"wq" + l + "\": " + i8_type(wq) + " = hex\"" + hex(wq) + "\"\n";
    params += ",\n    %wq" + l + ": " + i8_type(wq) + " parameter \"wq" + l + "\"";
    const std::string si = p.weight("s" + l, scales), bi = p.weight("b" + l, bias);
    const std::string wd = p.node("wd" + l, w,
                                  "quantized_decomposed::dequantize_per_channel.default(input=%wq" +
                                      l + ", scales=" + si +
                                      ", zero_points=none, axis=0, quant_min=-127, "
                                      "quant_max=127, dtype=dtype(i8), out_dtype=none)");
    const std::string s = std::to_string(stride), pad = std::to_string(wq.size(2) / 2);
    return p.node("y" + l, y,
                  "aten::convolution.default(input=" + cur + ", weight=" + wd + ", bias=" + bi +
                      ", stride=[" + s + ", " + s + "], padding=[" + pad + ", " + pad +
                      "], dilation=[1, 1], transposed=false, output_padding=[0, 0], groups=" +
                      std::to_string(groups) + ")");
  }
  // Max pooling of the chain's value (kernel k, stride s, padding pad, PyTorch's max_pool2d),
  // `pooled` its result, requantized to (scale, zero_point).
  void max_pool(const std::string& l, const at::Tensor& pooled, int64_t k, int64_t s, int64_t pad,
                bool ceil, double scale, int64_t zero_point) {
    auto pair = [](int64_t v) { return "[" + std::to_string(v) + ", " + std::to_string(v) + "]"; };
    // The exported op's form after Ember's lowering: with indices (int64, unread).
    const std::string m = "%mp" + l;
    p.body.push_back("(" + m + ": " + type_of(pooled) + ", %mpi" + l + ": i64" +
                     type_of(pooled).substr(3) +
                     ") = aten::max_pool2d_with_indices.default(self=" + cur +
                     ", kernel_size=" + pair(k) + ", stride=" + pair(s) + ", padding=" + pair(pad) +
                     ", dilation=[1, 1], ceil_mode=" + (ceil ? "true" : "false") + ")");
    cur = requantize("p" + l, m, pooled, scale, zero_point);
  }
  // quantize -> dequantize of value v (of y's type); the dequantized value's name.
  std::string requantize(const std::string& l, const std::string& v, const at::Tensor& y,
                         double scale, int64_t zero_point) {
    p.body.push_back("%q" + l + ": " + i8_type(y) + " = " +
                     qdq_call("quantize_per_tensor", v, scale, zero_point));
    return p.node("d" + l, y, qdq_call("dequantize_per_tensor", "%q" + l, scale, zero_point));
  }
  // The program returning `outputs` (the chain's value where none is given).
  std::unique_ptr<ir::Program> program(std::vector<std::string> outputs = {}) {
    p.outputs = outputs.empty() ? std::vector<std::string>{cur} : std::move(outputs);
    std::string text = decls + p.text();
    text.insert(text.find("\n) {\n"), params);
    return parse_text(text);
  }
};

}  // namespace ember::cpu
