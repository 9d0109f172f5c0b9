// The cpu backend's int8 chains (onednn/quant_conv.cc): quantized steps handing each other uint8,
// the input's quantize, residual adds, max poolings and depthwise convolutions among them, against
// ATen computing PyTorch's reference decomposition.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/kernels/depthwise.h"
#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/test/quant_test_util.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

// conv -> relu -> requantize, twice: the first writes the second's uint8 source directly.
// Weight ranges per layer: both full (integers with VNNI on oneDNN, without it on Ember's kernel
// of gathered rows), both 7-bit (integers from AVX2 up), and a 7-bit layer before a full one:
// where neither runs the second in integers (no own kernels, no VNNI) it runs in float, so the
// first must not hand it uint8.
class ChainedConvolutions : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(ChainedConvolutions, PassInt8WhereBothRunInIntegers) {
  at::manual_seed(9);
  const int64_t ranges[2] = {GetParam().first, GetParam().second};
  const at::Tensor x = at::randn({1, 8, 9, 9});
  const double sx = 0.04, s1 = 0.06, s2 = 0.09;
  const int64_t zx = 0, z1 = -128, z2 = 7;
  QuantConvChain chain(x, sx, zx);
  at::Tensor ref = dequantize(quantize(x, sx, zx), sx, zx);
  double s_in = sx;
  for (int layer = 0; layer < 2; ++layer) {
    const int64_t hi = ranges[layer];
    const at::Tensor wq = at::randint(-hi, hi + 1, {8, 8, 3, 3}).to(at::kChar);
    const at::Tensor scales = at::rand({8}) * 0.01 + 0.002, bias = at::randn({8});
    const at::Tensor w = wq.to(at::kFloat) * scales.view({8, 1, 1, 1});
    const double s_out = layer == 0 ? s1 : s2;
    const int64_t z_out = layer == 0 ? z1 : z2;
    const at::Tensor y =
        at::relu(at::convolution(ref, w, bias, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1));
    ref = dequantize(quantize(y, s_out, z_out), s_out, z_out);
    chain.add(std::to_string(layer), wq, scales, bias, y, 1, 1, false, s_out, z_out);
    s_in = s_out;
  }
  auto program = chain.program();
  ASSERT_NE(program, nullptr);
  const Compiled compiled = compile(*program);
  DelegateSummary summary;
  auto out = run(compiled, {x}, {ref}, {}, &summary);
  ASSERT_EQ(out.size(), 1u);
  bool integers[2];
  for (int layer = 0; layer < 2; ++layer) {
    integers[layer] = quant_conv_in_integers(ranges[layer]);
  }
  EXPECT_EQ(summary.int8_convolutions, int(integers[0]) + int(integers[1]));
  // The input's quantize writes uint8 for a first layer in integers, that layer for a second.
  const bool input_u8 = integers[0] && own_kernels_supported();
  EXPECT_EQ(summary.int8_chained, int(input_u8) + int(integers[0] && integers[1]));
  // Full-range layers without VNNI run on Ember's kernel of gathered rows, which writes uint8
  // only: the second's result is dequantized for the program's float output by a step.
  const int gathered[2] = {gathered_quant_conv(ranges[0]), gathered_quant_conv(ranges[1])};
  EXPECT_EQ(summary.gathered_conv_steps, gathered[0] + gathered[1]);
  EXPECT_EQ(summary.int8_elementwise, (input_u8 ? 1 : 0) + gathered[1]);
  // A tie rounded the other way in the first layer moves a few of the second's sums: two steps
  // at most, on few elements.
  expect_within_steps(out[0], ref, s_in, 2, 50);
}

INSTANTIATE_TEST_SUITE_P(CpuQuant, ChainedConvolutions,
                         ::testing::Values(std::pair<int64_t, int64_t>{127, 127},
                                           std::pair<int64_t, int64_t>{63, 63},
                                           std::pair<int64_t, int64_t>{63, 127}));

// conv -> relu -> requantize -> 3x3 depthwise -> relu6 -> requantize -> conv -> requantize: the
// depthwise convolution between two quantized ones runs on Ember's uint8 kernel where both hand
// it uint8 (with oneDNN on VNNI, at stride 2 only in integers; kernels/depthwise.h), and agrees
// with PyTorch's reference as oneDNN's does (a tie rounded the other way moves a few values one or
// two steps).
class QuantizedDepthwise : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(QuantizedDepthwise, BetweenQuantizedConvolutions) {
  const auto [stride, range] = GetParam();
  at::manual_seed(10);
  const int64_t c = 32;
  const at::Tensor x = at::randn({1, c, 11, 11});
  const double scales[4] = {0.04, 0.06, 0.05, 0.09};
  const int64_t zeros[4] = {0, -128, -128, 7};
  QuantConvChain chain(x, scales[0], zeros[0]);
  at::Tensor ref = dequantize(quantize(x, scales[0], zeros[0]), scales[0], zeros[0]);
  for (int layer = 0; layer < 3; ++layer) {
    const bool dw = layer == 1;
    const int64_t hi = range, s = dw ? stride : 1;
    const at::Tensor wq = at::randint(-hi, hi + 1, {c, dw ? 1 : c, 3, 3}).to(at::kChar);
    const at::Tensor ws = at::rand({c}) * (dw ? 0.05 : 0.01) + 0.002, bias = at::randn({c});
    const at::Tensor w = wq.to(at::kFloat) * ws.view({c, 1, 1, 1});
    at::Tensor y = at::convolution(ref, w, bias, {s, s}, {1, 1}, {1, 1}, false, {0, 0}, dw ? c : 1);
    y = dw ? at::hardtanh(y, 0, 6) : at::relu(y);
    ref = dequantize(quantize(y, scales[layer + 1], zeros[layer + 1]), scales[layer + 1],
                     zeros[layer + 1]);
    chain.add(std::to_string(layer), wq, ws, bias, y, s, dw ? c : 1, dw, scales[layer + 1],
              zeros[layer + 1]);
  }
  auto program = chain.program();
  ASSERT_NE(program, nullptr);
  const Compiled compiled = compile(*program);
  DelegateSummary summary;
  auto out = run(compiled, {x}, {ref}, {}, &summary);
  ASSERT_EQ(out.size(), 1u);
  const bool outer_integers = quant_conv_in_integers(range);
  // At stride 2 with oneDNN's VNNI kernel, only where Ember's runs in integers too.
  const bool integer_depthwise = own_kernels_supported() && (simd::kernels()->vnni || range <= 63);
  const bool own = own_kernels_supported() && outer_integers &&
                   (stride == 1 || !int8_supported() || integer_depthwise);
  EXPECT_EQ(summary.depthwise_steps, own ? 1 : 0);
  expect_within_steps(out[0], ref, scales[3], 2, 50);
}

INSTANTIATE_TEST_SUITE_P(CpuQuant, QuantizedDepthwise,
                         ::testing::Values(std::pair<int64_t, int64_t>{1, 63},
                                           std::pair<int64_t, int64_t>{2, 63},
                                           std::pair<int64_t, int64_t>{1, 127},
                                           std::pair<int64_t, int64_t>{2, 127}));

// Two residual blocks' ends, MobileNet's (no relu after the add) and ResNet's (relu): x ->
// conv0 (relu) = a; conv1 requantized, + a, [relu], requantized = b; conv2 requantized, + b,
// requantized = c; conv3 (relu) of c. The adds run on uint8 where the convolutions run in
// integers (own_kernels_supported), their summands a and b handed over as uint8, b by the add.
class ResidualAdds : public ::testing::TestWithParam<std::pair<bool, int64_t>> {};

TEST_P(ResidualAdds, OnUint8AgainstTheReference) {
  const auto [relu, range] = GetParam();
  at::manual_seed(11);
  const int64_t c = 16;
  const at::Tensor x = at::randn({1, c, 10, 10});
  const double s[] = {0.04, 0.05, 0.07, 0.06, 0.08, 0.09, 0.05, 0.07};
  const int64_t z[] = {3, -128, 10, -20, 0, 5, -128, -7};
  QuantConvChain chain(x, s[0], z[0]);
  at::Tensor ref = dequantize(quantize(x, s[0], z[0]), s[0], z[0]);
  std::string names[2];
  at::Tensor values[2];
  for (int layer = 0; layer < 4; ++layer) {
    const at::Tensor wq = at::randint(-range, range + 1, {c, c, 3, 3}).to(at::kChar);
    const at::Tensor ws = at::rand({c}) * 0.01 + 0.002, bias = at::randn({c}) * 0.5;
    const at::Tensor w = wq.to(at::kFloat) * ws.view({c, 1, 1, 1});
    const at::Tensor y = at::convolution(ref, w, bias, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
    const std::string l = std::to_string(layer);
    if (layer == 0 || layer == 3) {
      const double so = s[layer == 0 ? 1 : 7];
      const int64_t zo = z[layer == 0 ? 1 : 7];
      ref = dequantize(quantize(at::relu(y), so, zo), so, zo);
      chain.add(l, wq, ws, bias, y, 1, 1, false, so, zo);
    } else {
      const int k = 2 * layer;  // the mid and out parameters: s[k], s[k + 1]
      const at::Tensor m = dequantize(quantize(y, s[k], z[k]), s[k], z[k]);
      at::Tensor sum = m + values[layer - 1];
      if (relu && layer == 1) sum = at::relu(sum);
      ref = dequantize(quantize(sum, s[k + 1], z[k + 1]), s[k + 1], z[k + 1]);
      chain.add_residual(l, wq, ws, bias, y, s[k], z[k], names[layer - 1], relu && layer == 1,
                         s[k + 1], z[k + 1]);
    }
    if (layer < 2) {
      names[layer] = chain.cur;
      values[layer] = ref;
    }
  }
  auto program = chain.program();
  ASSERT_NE(program, nullptr);
  const Compiled compiled = compile(*program);
  const bool integers = quant_conv_in_integers(range);
  const bool u8 = integers && own_kernels_supported();
  for (bool int8 : {true, false}) {
    SCOPED_TRACE(int8 ? "int8 on" : "int8 off");
    DelegateSummary summary;
    auto out = run(compiled, {x}, {ref}, {switched("int8", int8)}, &summary);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(summary.int8_convolutions, int8 && integers ? 4 : 0);
    // The input's quantize and the two adds; uint8 are x, a, the adds' results, conv3's input.
    // (On the kernel of gathered rows conv3 writes uint8, dequantized by a step.)
    EXPECT_EQ(summary.int8_elementwise, int8 && u8 ? 3 + gathered_quant_conv(range) : 0);
    EXPECT_EQ(summary.int8_chained, int8 && u8 ? 4 : 0);
    // A tie rounded the other way in one layer moves a few values of the next ones.
    expect_within_steps(out[0], ref, s[7], 3, 20);
  }
}

INSTANTIATE_TEST_SUITE_P(CpuQuant, ResidualAdds,
                         ::testing::Values(std::pair<bool, int64_t>{false, 63},
                                           std::pair<bool, int64_t>{true, 63},
                                           std::pair<bool, int64_t>{false, 127},
                                           std::pair<bool, int64_t>{true, 127}));

// The add step itself is PyTorch's arithmetic on the integers: with every layer's scale a power
// of two and small integer weights the convolutions are exact in float too, and Ember's result
// equals the reference bit for bit.
TEST(CpuQuant, ResidualAddIsBitForBitWhereTheSumsAreExact) {
  at::manual_seed(12);
  const int64_t c = 16;
  const at::Tensor x = at::randn({1, c, 8, 8}) * 4;
  QuantConvChain chain(x, 0.125, 0);
  const at::Tensor xd = dequantize(quantize(x, 0.125, 0), 0.125, 0);
  const std::string xn = chain.cur;
  const at::Tensor wq = at::randint(-7, 8, {c, c, 3, 3}).to(at::kChar);
  const at::Tensor ws = at::full({c}, 0.0625), bias = at::zeros({c});
  const at::Tensor y = at::convolution(xd, wq.to(at::kFloat) * 0.0625, bias, {1, 1}, {1, 1}, {1, 1},
                                       false, {0, 0}, 1);
  // Odd multiples of half a step: ties, rounded to even.
  const at::Tensor sum = dequantize(quantize(y, 0.25, -3), 0.25, -3) + xd;
  const at::Tensor d = dequantize(quantize(sum, 0.5, 2), 0.5, 2);
  chain.add_residual("0", wq, ws, bias, y, 0.25, -3, xn, false, 0.5, 2);
  // A last layer, which reads the add's result as uint8.
  const at::Tensor w2 = at::randint(-3, 4, {c, c, 3, 3}).to(at::kChar);
  const at::Tensor y2 = at::convolution(d, w2.to(at::kFloat) * 0.0625, bias, {1, 1}, {1, 1}, {1, 1},
                                        false, {0, 0}, 1);
  const at::Tensor want = dequantize(quantize(at::relu(y2), 0.5, -128), 0.5, -128);
  chain.add("1", w2, ws, bias, y2, 1, 1, false, 0.5, -128);
  auto program = chain.program();
  ASSERT_NE(program, nullptr);
  DelegateSummary summary;
  auto out = run(compile(*program), {x}, {want}, {}, &summary);
  ASSERT_EQ(out.size(), 1u);
  if (int8_7bit_supported() && own_kernels_supported()) {
    EXPECT_EQ(summary.int8_elementwise, 2);
  }
  EXPECT_TRUE(at::equal(out[0], want)) << (out[0] - want).abs().max().item<float>();
}

// The input's quantize to uint8 (NCHW, three channels as an image's, and a pooled input in
// the pooling's layout) is quantize_int8's: ties to even, saturation, infinities; NaN quantizes to
// 0.
TEST(CpuQuant, QuantizeToUint8IsPyTorchsQuantize) {
  for (const simd::Kernels* k : simd_variants()) {
    SCOPED_TRACE(k->name);
    const float inv = 4.f, zp = -5.f;
    std::vector<float> y = {0.125f, 0.375f, -0.125f, -0.375f, 31.9f, 32.f, -33.f,
                            1e30f,  -1e30f, 1.f,     -1.f,    0.f,   -0.f, 0.6f};
    y.push_back(std::numeric_limits<float>::infinity());
    y.push_back(-std::numeric_limits<float>::infinity());
    y.push_back(std::numeric_limits<float>::quiet_NaN());
    // 45: two vectors at once, one, and single values on AVX2 (16 + 16 + 8 + 5).
    while (y.size() < 45) y.push_back(static_cast<float>(y.size()) * 0.37f - 7.f);
    std::vector<uint8_t> q(y.size());
    k->quantize_u8(y.data(), q.data(), static_cast<int64_t>(y.size()), inv, zp);
    // ATen's clamp(round(y * inv) + zp), held + 128; a NaN becomes 0 in PyTorch's cast to int8
    // (x86), which ATen's float ops leave as NaN.
    const at::Tensor yt = at::from_blob(y.data(), {static_cast<int64_t>(y.size())}, at::kFloat);
    const at::Tensor want =
        at::nan_to_num(at::clamp(at::round(yt * inv) + zp, -128, 127), 0.0) + 128;
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(q[i], want[static_cast<int64_t>(i)].item<float>()) << y[i];
    }
    EXPECT_EQ(q[0], 0 - 5 + 128);  // 0.5 rounds to 0
    EXPECT_EQ(q[1], 2 - 5 + 128);  // 1.5 rounds to 2
    EXPECT_EQ(q[16], 128);         // NaN
  }
}

TEST(CpuQuant, InputQuantizedStraightToUint8) {
  at::manual_seed(13);
  for (bool pooled : {false, true}) {
    for (int64_t c : {3, 16}) {
      SCOPED_TRACE(std::string(pooled ? "pooled " : "input ") + std::to_string(c) + " channels");
      at::Tensor x = at::randn({2, c, 12, 12}) * 3;
      x[0][0][0][0] = 0.02f;  // a tie: half a step of 0.04
      x[1][c - 1][3][4] = 1e9f;
      x[1][0][5][5] = -std::numeric_limits<float>::infinity();
      const double sx = 0.04;
      const int64_t zx = 7;
      Prog p;
      std::string xv = p.input("x", x);
      at::Tensor src = x;
      if (pooled) {
        src = at::avg_pool2d(x, {2, 2}, {2, 2});
        xv = p.node("pool", src,
                    "aten::avg_pool2d.default(self=" + xv +
                        ", kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], ceil_mode=false, "
                        "count_include_pad=true, divisor_override=none)");
      }
      QuantConvChain chain(p, xv, src, sx, zx);
      const at::Tensor wq = at::randint(-63, 64, {8, c, 3, 3}).to(at::kChar);
      const at::Tensor ws = at::rand({8}) * 0.01 + 0.002, bias = at::randn({8});
      const at::Tensor xd = dequantize(quantize(src, sx, zx), sx, zx);
      const at::Tensor y = at::convolution(xd, wq.to(at::kFloat) * ws.view({8, 1, 1, 1}), bias,
                                           {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
      const at::Tensor want = dequantize(quantize(at::relu(y), 0.05, -128), 0.05, -128);
      chain.add("0", wq, ws, bias, y, 1, 1, false, 0.05, -128);
      auto program = chain.program();
      ASSERT_NE(program, nullptr);
      DelegateSummary summary;
      auto out = run(compile(*program), {x}, {want}, {}, &summary);
      ASSERT_EQ(out.size(), 1u);
      const bool u8 = int8_7bit_supported() && own_kernels_supported();
      EXPECT_EQ(summary.int8_elementwise, u8 ? 1 : 0);
      EXPECT_EQ(summary.int8_chained, u8 ? 1 : 0);
      expect_within_steps(out[0], want, 0.05f, 1, 100);
    }
  }
}

// conv -> relu -> requantize -> max pool -> requantize -> conv (ResNet's stem and first block):
// the pooling runs on the first convolution's uint8 result, and the requantize after it on
// bytes. Against ATen's reference decomposition, and bit for bit against the same program with
// Ember's kernels off (the pooling and the requantize in float, between oneDNN's same int8
// convolutions). The pooling's grid the same as its source's, or another.
class MaxPoolOnUint8 : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MaxPoolOnUint8, AgainstTheReferenceAndTheFloatPooling) {
  const auto [same_grid, resnet_window] = GetParam();
  at::manual_seed(21);
  const at::Tensor x = at::randn({2, 8, 11, 11});
  const double sx = 0.05, s1 = 0.04, s2 = same_grid ? s1 : 0.07, s3 = 0.06;
  const int64_t zx = 3, z1 = -128, z2 = same_grid ? z1 : -100, z3 = 5;
  // ResNet's 3x3 window, stride 2, padding 1; or 2x2, stride 2, ceil mode (a clipped last one).
  const int64_t k = resnet_window ? 3 : 2, pad = resnet_window ? 1 : 0;
  const bool ceil = !resnet_window;
  QuantConvChain chain(x, sx, zx);
  const at::Tensor xd = dequantize(quantize(x, sx, zx), sx, zx);
  // A 3x3 convolution (padding 1) of `in` to `out` channels by a random int8 weight, added to
  // the chain as layer `name`, requantized to (scale, zero point); its float result.
  auto conv = [&chain](const char* name, const at::Tensor& in, int64_t out, double scale,
                       int64_t zero_point) {
    const at::Tensor w = at::randint(-63, 64, {out, in.size(1), 3, 3}).to(at::kChar);
    const at::Tensor sc = at::rand({out}) * 0.01 + 0.002, b = at::randn({out});
    const at::Tensor y = at::convolution(in, w.to(at::kFloat) * sc.view({out, 1, 1, 1}), b, {1, 1},
                                         {1, 1}, {1, 1}, false, {0, 0}, 1);
    chain.add(name, w, sc, b, y, 1, 1, false, scale, zero_point);
    return y;
  };
  const at::Tensor y0 = conv("0", xd, 16, s1, z1);
  const at::Tensor r0 = dequantize(quantize(at::relu(y0), s1, z1), s1, z1);
  const at::Tensor pooled = at::max_pool2d(r0, {k, k}, {2, 2}, {pad, pad}, {1, 1}, ceil);
  chain.max_pool("0", pooled, k, 2, pad, ceil, s2, z2);
  const at::Tensor pd = dequantize(quantize(pooled, s2, z2), s2, z2);
  const at::Tensor y1 = conv("1", pd, 8, s3, z3);
  const at::Tensor want = dequantize(quantize(at::relu(y1), s3, z3), s3, z3);
  auto program = chain.program();
  ASSERT_NE(program, nullptr);
  DelegateSummary summary, off_summary;
  const Compiled compiled = compile(*program);
  const auto out = run(compiled, {x}, {want}, {}, &summary);
  const auto off = run(compiled, {x}, {want}, {turned_off("ember_kernels")}, &off_summary);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(off.size(), 1u);
  const bool u8 = int8_7bit_supported() && own_kernels_supported();
  // The input's quantize, the uint8 pooling and its requantize; the input, the first
  // convolution's result, the pooling's and the requantized one handed on as uint8.
  EXPECT_EQ(summary.int8_elementwise, u8 ? 3 : 0);
  EXPECT_EQ(summary.int8_chained, u8 ? 4 : 0);
  EXPECT_EQ(off_summary.int8_chained, 0);
  EXPECT_TRUE(at::equal(out[0], off[0])) << (out[0] - off[0]).abs().max().item<float>();
  // A tie rounded the other way in a convolution: a step or two, on few elements.
  expect_within_steps(out[0], want, s3, 2, 50);
}

INSTANTIATE_TEST_SUITE_P(CpuQuant, MaxPoolOnUint8,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// Ember's int8 1x1 kernel (QuantPointwise) on every variant this CPU has: the same bytes from
// each (weights within [-64, 63], which the variants without VNNI take), and PyTorch's reference
// requantization to one step, at ties.
TEST(CpuQuant, PointwiseKernelAgainstTheReference) {
  const std::vector<const simd::Kernels*> variants = simd_variants();
  if (variants.empty()) GTEST_SKIP() << "no AVX2";
  at::manual_seed(16);
  const int64_t m = 61;  // full tiles and single rows
  const double sx = 0.05, so = 0.04;
  const int64_t zx = -3, zo = 9;
  // 576 input channels: blocks of 24 rows (24, 24, 13), the others one block.
  for (const auto& [k, n] : std::vector<std::pair<int64_t, int64_t>>{
           {16, 96}, {24, 24}, {144, 40}, {8, 200}, {32, 16}, {576, 40}}) {
    SCOPED_TRACE(std::to_string(k) + " -> " + std::to_string(n));
    const at::Tensor xu = at::randint(0, 256, {m, k}).to(at::kByte);  // q + 128
    const at::Tensor wq = at::randint(-64, 64, {n, k}).to(at::kChar);
    const at::Tensor ws = at::rand({n}) * 0.01 + 0.002, bias = at::randn({n});
    const at::Tensor x = dequantize(xu.to(at::kFloat) - 128, sx, zx);
    const at::Tensor y =
        at::hardtanh(at::addmm(bias, x, (wq.to(at::kFloat) * ws.view({n, 1})).t()), 0, 6);
    const at::Tensor want = quantize(y, so, zo) + 128;
    const auto inv = static_cast<float>(1.0 / so);
    const QuantPointwise b =
        QuantPointwise::pack(wq.data_ptr<int8_t>(), ws.data_ptr<float>(), bias.data_ptr<float>(), k,
                             n, static_cast<float>(sx), static_cast<float>(zx), Clamp{0.f, 6.f},
                             inv, static_cast<float>(zo));
    std::vector<std::vector<uint8_t>> outs;
    for (const simd::Kernels* v : variants) {
      outs.emplace_back(static_cast<size_t>(m * n + 1), uint8_t{0xAB});  // + a guard byte
      v->quant_pointwise(0, m, b, xu.data_ptr<uint8_t>(), outs.back().data(), 0, b.w.panels);
      EXPECT_EQ(outs.back().back(), 0xAB) << v->name << " wrote past the output";
      outs.back().pop_back();
      EXPECT_EQ(outs.back(), outs[0]) << v->name << " against " << variants[0]->name;
    }
    const at::Tensor got = at::from_blob(outs[0].data(), {m, n}, at::kByte).to(at::kFloat);
    const at::Tensor diff = (got - want).abs();
    EXPECT_LE(diff.max().item<float>(), 1.f);
    EXPECT_LE((diff > 0).sum().item<int64_t>(), m * n / 100 + 1);
  }
}

// MobileNet's 1x1 layers in a quantized chain: an expansion (relu6) and a projection whose
// result a residual add reads, channels not a multiple of 16 and input channels not a multiple
// of 4 (which stay on oneDNN) among them, against ATen's reference decomposition. Where the
// chain runs on uint8 with Ember's kernels, the 1x1 convolutions are Ember's pointwise steps.
TEST(CpuQuant, PointwiseConvolutionsInAChain) {
  at::manual_seed(17);
  for (const int64_t c : {24, 6}) {
    SCOPED_TRACE(std::to_string(c) + " channels");
    const at::Tensor x = at::randn({1, c, 9, 9});
    const double s[] = {0.04, 0.03, 0.05, 0.06, 0.07};
    const int64_t z[] = {2, -128, 4, -9, 0};
    QuantConvChain chain(x, s[0], z[0]);
    at::Tensor ref = dequantize(quantize(x, s[0], z[0]), s[0], z[0]);
    const std::string in = chain.cur;
    const at::Tensor in_ref = ref;
    const int64_t widths[] = {4 * c, c};
    for (int layer = 0; layer < 2; ++layer) {
      const int64_t out_c = widths[layer], in_c = ref.size(1);
      const at::Tensor wq = at::randint(-63, 64, {out_c, in_c, 1, 1}).to(at::kChar);
      const at::Tensor ws = at::rand({out_c}) * 0.01 + 0.002, bias = at::randn({out_c}) * 0.3;
      const at::Tensor w = wq.to(at::kFloat) * ws.view({out_c, 1, 1, 1});
      const at::Tensor y = at::convolution(ref, w, bias, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1);
      const std::string l = std::to_string(layer);
      if (layer == 0) {
        ref = dequantize(quantize(at::hardtanh(y, 0, 6), s[1], z[1]), s[1], z[1]);
        chain.add(l, wq, ws, bias, y, 1, 1, true, s[1], z[1]);
      } else {
        const at::Tensor sum = dequantize(quantize(y, s[2], z[2]), s[2], z[2]) + in_ref;
        ref = dequantize(quantize(sum, s[3], z[3]), s[3], z[3]);
        chain.add_residual(l, wq, ws, bias, y, s[2], z[2], in, false, s[3], z[3]);
      }
    }
    // A last 3x3 layer reads the add's result as uint8.
    const at::Tensor wq = at::randint(-63, 64, {8, c, 3, 3}).to(at::kChar);
    const at::Tensor ws = at::rand({8}) * 0.01 + 0.002, bias = at::randn({8});
    const at::Tensor y = at::convolution(ref, wq.to(at::kFloat) * ws.view({8, 1, 1, 1}), bias,
                                         {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
    ref = dequantize(quantize(at::relu(y), s[4], z[4]), s[4], z[4]);
    chain.add("2", wq, ws, bias, y, 1, 1, false, s[4], z[4]);
    auto program = chain.program();
    ASSERT_NE(program, nullptr);
    DelegateSummary summary;
    auto out = run(compile(*program), {x}, {ref}, {}, &summary);
    ASSERT_EQ(out.size(), 1u);
    const bool own = int8_7bit_supported() && own_kernels_supported();
    // The expansion's c input channels, the projection's 4c.
    EXPECT_EQ(summary.pointwise_steps, own ? (c % 4 == 0 ? 2 : 1) : 0);
    EXPECT_EQ(summary.int8_elementwise, own ? 2 : 0);  // the input's quantize, the add
    expect_within_steps(out[0], ref, s[4], 3, 20);
  }
}

// Ember's uint8 3x3 depthwise kernel alone (QuantDepthwise3x3: in integers with VNNI or 7-bit
// weights, each row's three taps one four-product sum; else the float kernel on dequantized
// rows) against ATen's reference requantization, to one step at ties: batches, both strides, odd
// widths, relu6, zero points at both ends, 8- and 7-bit weights.
TEST(CpuQuant, DepthwiseKernelAgainstTheReference) {
  if (!own_kernels_supported()) GTEST_SKIP() << "no AVX2";
  at::manual_seed(18);
  struct Case {
    int64_t batch, h, w, c, stride, zx, zo;
  };
  for (const auto& [k, range] :
       std::vector<std::pair<Case, int64_t>>{{Case{2, 7, 9, 32, 1, -128, 5}, 127},
                                             {Case{1, 5, 13, 48, 1, 127, -128}, 127},
                                             {Case{1, 9, 6, 16, 2, 3, 0}, 127},
                                             {Case{1, 1, 1, 16, 1, 0, 0}, 127},
                                             {Case{2, 7, 9, 32, 1, -128, 5}, 64},
                                             {Case{1, 9, 6, 16, 2, 3, 0}, 64},
                                             {Case{1, 6, 11, 48, 2, 20, 2}, 64}}) {
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w) + "x" + std::to_string(k.c) +
                 " stride " + std::to_string(k.stride) + ", weights within " +
                 std::to_string(range));
    const double sx = 0.03, so = 0.05;
    const at::Tensor xu = at::randint(0, 256, {k.batch, k.h, k.w, k.c}).to(at::kByte);  // NHWC
    const at::Tensor wq = at::randint(-range, range, {k.c, 1, 3, 3}).to(at::kChar);
    const at::Tensor ws = at::rand({k.c}) * 0.05 + 0.002, bias = at::randn({k.c});
    const at::Tensor x = dequantize(xu.to(at::kFloat) - 128, sx, k.zx).permute({0, 3, 1, 2});
    const at::Tensor y =
        at::hardtanh(at::convolution(x, wq.to(at::kFloat) * ws.view({k.c, 1, 1, 1}), bias,
                                     {k.stride, k.stride}, {1, 1}, {1, 1}, false, {0, 0}, k.c),
                     0, 6);
    const at::Tensor want = (quantize(y, so, k.zo) + 128).permute({0, 2, 3, 1}).contiguous();
    const QuantDepthwise3x3 kernel(k.batch, k.h, k.w, k.c, k.stride, wq.data_ptr<int8_t>(),
                                   ws.data_ptr<float>(), bias.data_ptr<float>(), Clamp{0.f, 6.f},
                                   {static_cast<float>(sx), static_cast<float>(k.zx)},
                                   {static_cast<float>(1.0 / so), static_cast<float>(k.zo)}, 2);
    std::vector<uint8_t> out(static_cast<size_t>(want.numel()) + 1, uint8_t{0xAB});  // + a guard
    AlignedFloats scratch(kernel.scratch_bytes() / sizeof(float), NAN);  // as another step left it
    kernel.run(xu.data_ptr<uint8_t>(), out.data(), scratch.data());
    EXPECT_EQ(out.back(), 0xAB) << "wrote past the output";
    out.pop_back();
    const at::Tensor got = at::from_blob(out.data(), want.sizes(), at::kByte).to(at::kFloat);
    const at::Tensor diff = (got - want.to(at::kFloat)).abs();
    EXPECT_LE(diff.max().item<float>(), 1.f);
    EXPECT_LE((diff > 0).sum().item<int64_t>(), want.numel() / 100 + 1);
  }
}

// The integer depthwise row (Kernels::quads_row, then depthwise_u8_row) on every variant this
// CPU has, 7-bit weights (which every variant takes): the same bytes from each, and variant by
// variant Requantize's arithmetic computed here one value at a time (the sum of a row's three taps
// by its weights from the sum's start, padding outside the row; fma by mult, add, clamp, round to
// nearest even, + shift, saturated to a byte). Channels outside [c_begin, c_end) stay untouched.
// The AVX-512 variant without VNNI runs only on CPUs without VNNI otherwise.
TEST(CpuQuant, DepthwiseRowVariantsAgree) {
  const std::vector<const simd::Kernels*> variants = simd_variants();
  if (variants.empty()) GTEST_SKIP() << "no AVX2";
  at::manual_seed(19);
  const int64_t w = 13, c = 48;
  const uint8_t pad = 131;  // the input's zero point + 128
  const at::Tensor x = at::randint(0, 256, {3, w, c}).to(at::kByte);
  const at::Tensor wq = at::randint(-64, 64, {c, 3, 3}).to(at::kChar);
  const at::Tensor ws = at::rand({c}) * 0.05 + 0.002, bias = at::randn({c});
  const auto* q = wq.data_ptr<int8_t>();
  std::vector<int32_t> sums(static_cast<size_t>(c)), w4(static_cast<size_t>(3 * c));
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t r = 0; r < 3; ++r) {
      uint32_t packed = 0;
      for (int64_t t = 0; t < 3; ++t) {
        const int8_t v = q[(ch * 3 + r) * 3 + t];
        sums[ch] += v;
        packed |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * t);
      }
      w4[r * c + ch] = static_cast<int32_t>(packed);
    }
  }
  const Requantize rq =
      Requantize::make(sums.data(), ws.data_ptr<float>(), bias.data_ptr<float>(), c, c, 0.03f,
                       static_cast<float>(pad - 128), Clamp{0.f, 6.f}, 20.f, -7.f);
  const auto* xb = x.data_ptr<uint8_t>();
  auto input = [&](int64_t row, int64_t col, int64_t ch) -> int32_t {
    return col < 0 || col >= w ? pad : xb[(row * w + col) * c + ch];
  };
  for (const int64_t stride : {1, 2}) {
    const int64_t wo = (w - 1) / stride + 1;
    for (const auto& [c_begin, c_end] :
         std::vector<std::pair<int64_t, int64_t>>{{0, c}, {16, 32}}) {
      SCOPED_TRACE("stride " + std::to_string(stride) + ", channels " + std::to_string(c_begin) +
                   " to " + std::to_string(c_end));
      std::vector<uint8_t> want(static_cast<size_t>(wo * c), uint8_t{0xAB});
      for (int64_t ox = 0; ox < wo; ++ox) {
        for (int64_t ch = c_begin; ch < c_end; ++ch) {
          int32_t acc = rq.init[static_cast<size_t>(ch)];
          for (int64_t r = 0; r < 3; ++r) {
            for (int64_t t = 0; t < 3; ++t) {
              acc += input(r, ox * stride + t - 1, ch) * q[(ch * 3 + r) * 3 + t];
            }
          }
          const float y =
              std::clamp(std::fmaf(static_cast<float>(acc), rq.mult[static_cast<size_t>(ch)],
                                   rq.add[static_cast<size_t>(ch)]),
                         rq.lo, rq.hi);
          const auto b = static_cast<int32_t>(std::nearbyint(y)) + rq.shift;
          want[static_cast<size_t>(ox * c + ch)] = static_cast<uint8_t>(std::clamp(b, 0, 255));
        }
      }
      for (const simd::Kernels* v : variants) {
        SCOPED_TRACE(v->name);
        std::vector<int32_t> quads(static_cast<size_t>(3 * w * c));
        const int32_t* rows[3];
        for (int64_t r = 0; r < 3; ++r) {
          v->quads_row(xb + r * w * c, w, c, stride, pad, quads.data() + r * w * c);
          rows[r] = quads.data() + r * w * c;
        }
        std::vector<uint8_t> got(static_cast<size_t>(wo * c + 1), uint8_t{0xAB});  // + a guard
        v->depthwise_u8_row(rows, wo, c, w4.data(), rq, c_begin, c_end, got.data());
        EXPECT_EQ(got.back(), 0xAB) << "wrote past the output";
        got.pop_back();
        EXPECT_EQ(got, want);
      }
    }
  }
}

// A unary op between int8 steps (MobileNetV3's hardswish, a sigmoid, a tanh), requantized, as
// ExecuTorch's XNNPACK programs hold it (its own op, not a convolution's post-op: a convolution's
// result read twice keeps it apart here): with Ember's kernels a lookup of its 256 results per
// byte, uint8 in, and uint8 out where a convolution reads it next, floats where the program
// returns them. The same values as the float path (the op's own step on the dequantized values,
// then the requantize) exactly, and PyTorch's reference within its rounding steps.
class UnaryLookups : public ::testing::TestWithParam<std::string> {};

TEST_P(UnaryLookups, EqualTheFloatPathAndTheReference) {
  const std::string& name = GetParam();
  at::manual_seed(13);
  const int64_t c = 16;
  const at::Tensor x = at::randn({1, c, 9, 9});
  const double s[] = {0.04, 0.05, 0.03, 0.06, 0.02};
  const int64_t z[] = {3, -5, 0, 9, -128};
  auto f = [&](const at::Tensor& t) {
    return name == "hardswish" ? at::hardswish(t)
           : name == "sigmoid" ? at::sigmoid(t)
                               : at::tanh(t);
  };
  auto conv = [&](QuantConvChain& chain, const std::string& l, at::Tensor& ref, double so,
                  int64_t zo) {
    const at::Tensor wq = at::randint(-127, 128, {c, c, 3, 3}).to(at::kChar);
    const at::Tensor ws = at::rand({c}) * 0.01 + 0.002, bias = at::randn({c});
    const at::Tensor w = wq.to(at::kFloat) * ws.view({c, 1, 1, 1});
    const at::Tensor y =
        at::relu(at::convolution(ref, w, bias, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1));
    ref = dequantize(quantize(y, so, zo), so, zo);
    chain.add(l, wq, ws, bias, y, 1, 1, false, so, zo);
  };
  QuantConvChain chain(x, s[0], z[0]);
  at::Tensor ref = dequantize(quantize(x, s[0], z[0]), s[0], z[0]);
  conv(chain, "0", ref, s[1], z[1]);
  const std::string d0 = chain.cur;
  const at::Tensor u = f(ref);
  // The op twice on the convolution's result: requantized and convolved (uint8 out), and
  // requantized and returned (floats out).
  std::string outs[2];
  at::Tensor refs[2];
  for (int branch = 0; branch < 2; ++branch) {
    const std::string l = std::to_string(branch);
    const std::string fu = chain.p.node("f" + l, u, "aten::" + name + ".default(self=" + d0 + ")");
    chain.cur = chain.requantize("u" + l, fu, u, s[2 + branch], z[2 + branch]);
    refs[branch] =
        dequantize(quantize(u, s[2 + branch], z[2 + branch]), s[2 + branch], z[2 + branch]);
    if (branch == 0) conv(chain, "1", refs[0], s[4], z[4]);
    outs[branch] = chain.cur;
  }
  auto program = chain.program({outs[0], outs[1]});
  ASSERT_NE(program, nullptr);
  const Compiled compiled = compile(*program);
  DelegateSummary summary, off_summary;
  const auto out = run(compiled, {x}, {refs[0], refs[1]}, {}, &summary);
  const auto off =
      run(compiled, {x}, {refs[0], refs[1]}, {turned_off("ember_kernels")}, &off_summary);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(off.size(), 2u);
  EXPECT_EQ(summary.int8_lookups, own_kernels_supported() ? 2 : 0);
  EXPECT_EQ(off_summary.int8_lookups, 0);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(at::equal(out[i], off[i]))
        << "output " << i << ": the lookup is not the float path";
    expect_within_steps(out[i], refs[i], i == 0 ? s[4] : s[3], 2, 20);
  }
}

INSTANTIATE_TEST_SUITE_P(CpuQuant, UnaryLookups, ::testing::Values("hardswish", "sigmoid", "tanh"));

}  // namespace
}  // namespace ember::cpu
