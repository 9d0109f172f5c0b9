// The cpu backend on PyTorch's quantized patterns (docs/quantization.md): quantize/dequantize
// pairs and convolutions of quantized values by int8 weights, against ATen computing PyTorch's
// reference decomposition (torch/ao/quantization/fx/_decomposed.py) in float.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/test/quant_test_util.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

// A program (IR text) of x -> quantize -> dequantize -> conv (int8 weight, per-channel scales)
// -> relu -> quantize -> dequantize, and its reference.
struct QuantConvCase {
  at::Tensor x, wq, scales, bias, want;
  std::string text;
};

QuantConvCase quant_conv_case(int64_t in_c, int64_t out_c, int64_t groups, int64_t hw,
                              int64_t stride, int64_t weight_max) {
  QuantConvCase c;
  c.x = at::randn({1, in_c, hw, hw});
  c.wq = at::randint(-weight_max, weight_max + 1, {out_c, in_c / groups, 3, 3}).to(at::kChar);
  c.scales = at::rand({out_c}) * 0.02 + 0.005;
  c.bias = at::randn({out_c});
  const double sx = 0.037, sy = 0.081;
  const int64_t zx = 5, zy = -128;
  const at::Tensor w = c.wq.to(at::kFloat) * c.scales.view({out_c, 1, 1, 1});
  const at::Tensor y =
      at::relu(at::convolution(dequantize(quantize(c.x, sx, zx), sx, zx), w, c.bias,
                               {stride, stride}, {1, 1}, {1, 1}, false, {0, 0}, groups));
  c.want = dequantize(quantize(y, sy, zy), sy, zy);
  Prog p;
  const std::string xi = p.input("x", c.x);
  const std::string si = p.weight("s", c.scales), bi = p.weight("b", c.bias);
  const std::string wh = hex(c.wq);
  p.body.push_back("%xq: " + i8_type(c.x) + " = " + qdq_call("quantize_per_tensor", xi, sx, zx));
  const std::string xd = p.node("xd", c.x, qdq_call("dequantize_per_tensor", "%xq", sx, zx));
  const std::string wd =
      p.node("wd", w,
             "quantized_decomposed::dequantize_per_channel.default(input=%wq, scales=" + si +
                 ", zero_points=none, axis=0, quant_min=-127, quant_max=127, dtype=dtype(i8), "
                 "out_dtype=none)");
  const std::string yv = p.node(
      "y", y,
      "aten::convolution.default(input=" + xd + ", weight=" + wd + ", bias=" + bi + ", stride=[" +
          std::to_string(stride) + ", " + std::to_string(stride) +
          "], padding=[1, 1], dilation=[1, 1], transposed=false, output_padding=[0, 0], groups=" +
          std::to_string(groups) + ")");
  const std::string r = p.node("r", y, "aten::relu.default(self=" + yv + ")");
  p.body.push_back("%yq: " + i8_type(y) + " = " + qdq_call("quantize_per_tensor", r, sy, zy));
  p.outputs = {p.node("yd", y, qdq_call("dequantize_per_tensor", "%yq", sy, zy))};
  // The int8 weight: its own declaration and graph input (Prog knows float32 weights only).
  std::string text = p.text();
  text = "weight \"wq\": " + i8_type(c.wq) + " = hex\"" + wh + "\"\n" + text;
  const std::string marker = "\n) {\n";
  text.insert(text.find(marker), ",\n    %wq: " + i8_type(c.wq) + " parameter \"wq\"");
  c.text = text;
  return c;
}

TEST(CpuQuant, ConvolutionOfQuantizedValuesAgainstTheReference) {
  at::manual_seed(7);
  struct Shape {
    int64_t in_c, out_c, groups, hw, stride, weight_max;
  };
  // The last two: weights within [-64, 63], which run in integers from AVX2 up (no VNNI needed);
  // full-range ones of one group run in integers without VNNI on Ember's kernel of gathered rows.
  for (const Shape& s :
       {Shape{8, 16, 1, 10, 1, 127}, Shape{16, 16, 16, 9, 2, 127}, Shape{3, 32, 1, 12, 2, 127},
        Shape{32, 16, 1, 8, 1, 63}, Shape{16, 16, 16, 9, 1, 63}}) {
    SCOPED_TRACE("in " + std::to_string(s.in_c) + " out " + std::to_string(s.out_c) + " groups " +
                 std::to_string(s.groups) + " weights to " + std::to_string(s.weight_max));
    const QuantConvCase c =
        quant_conv_case(s.in_c, s.out_c, s.groups, s.hw, s.stride, s.weight_max);
    auto program = parse_text(c.text);
    ASSERT_NE(program, nullptr);
    const Compiled compiled = compile(*program);
    int quant_convs = 0;
    for (const OpDesc& op : compiled.graph.ops) quant_convs += op.kind == OpKind::QuantConv;
    EXPECT_EQ(quant_convs, 1);
    for (bool int8 : {true, false}) {
      SCOPED_TRACE(int8 ? "int8 on" : "int8 off");
      DelegateSummary summary;
      auto out = run(compiled, {c.x}, {c.want}, {switched("int8", int8)}, &summary);
      ASSERT_EQ(out.size(), 1u);
      const bool integers = quant_conv_in_integers(s.weight_max, s.groups);
      EXPECT_EQ(summary.int8_convolutions, int8 && integers ? 1 : 0);
      // The integer sum is exact where the reference rounds in float: a requantized value may
      // land one step (0.081) away at a tie, and only rarely.
      const at::Tensor diff = (out[0] - c.want).abs();
      EXPECT_LE(diff.max().item<float>(), 0.081f * 1.001f);
      EXPECT_LE((diff > 0).sum().item<int64_t>(), c.want.numel() / 100 + 1);
    }
  }
}

TEST(CpuQuant, QuantizeDequantizePairIsPyTorchsBitForBit) {
  at::manual_seed(8);
  // Ties (x * (1 / scale) exactly .5), values past the range, and a NaN.
  at::Tensor x = at::randn({2, 5, 7}) * 4;
  x[0][0][0] = 0.125f;  // 2.5 steps of 0.05: a tie
  x[0][0][1] = -0.175f;
  x[0][0][2] = 1e6f;
  x[0][0][3] = -1e6f;
  const double scale = 0.05;
  const int64_t zp = -3;
  const at::Tensor q = quantize(x, scale, zp);
  const at::Tensor want = at::relu(dequantize(q, scale, zp)) * 2;
  Prog p;
  const std::string xi = p.input("x", x);
  p.body.push_back("%xq: " + i8_type(x) + " = " + qdq_call("quantize_per_tensor", xi, scale, zp));
  const std::string xd = p.node("xd", x, qdq_call("dequantize_per_tensor", "%xq", scale, zp));
  const std::string r = p.node("r", x, "aten::relu.default(self=" + xd + ")");
  p.outputs = {p.node("y", x, "aten::add.Tensor(self=" + r + ", other=" + r + ", alpha=1)")};
  auto program = parse_text(p.text());
  ASSERT_NE(program, nullptr);
  const Compiled c = compile(*program);
  auto out = run(c, {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0], want)) << (out[0] - want).abs().max().item<float>();
}

TEST(CpuQuant, QuantizeReadByAnythingButItsDequantizeStaysPortable) {
  at::Tensor x = at::randn({4, 4});
  Prog p;
  const std::string xi = p.input("x", x);
  p.body.push_back("%xq: " + i8_type(x) + " = " + qdq_call("quantize_per_tensor", xi, 0.1, 0));
  p.body.push_back("%xd: " + type_of(x) + " = " + qdq_call("dequantize_per_tensor", "%xq", 0.2, 0));
  p.outputs = {"%xd"};
  auto program = parse_text(p.text());
  ASSERT_NE(program, nullptr);
  for (const ir::Node* n : program->graph().nodes()) {
    const partition::Support s = compiler_backend()->support().check(*n);
    EXPECT_FALSE(s.supported) << n->describe();
    // Both say why: the dequantize reads its quantize with other parameters.
    EXPECT_NE(s.reason.find("not a dequantize of the same parameters"), std::string::npos)
        << s.reason;
  }
}

// A linear layer of quantized values: addmm(bias, dequantize(x), dequantize(weight)^T) -> relu ->
// requantize, in integers (QuantMatMul).
TEST(CpuQuant, LinearOfQuantizedValuesAgainstTheReference) {
  at::manual_seed(10);
  for (int64_t weight_max : {127, 63}) {
    SCOPED_TRACE("weights to " + std::to_string(weight_max));
    const at::Tensor x = at::randn({3, 40});
    const at::Tensor wq = at::randint(-weight_max, weight_max + 1, {24, 40}).to(at::kChar);
    const at::Tensor scales = at::rand({24}) * 0.01 + 0.002, bias = at::randn({24});
    const double sx = 0.03, sy = 0.05;
    const int64_t zx = -2, zy = -128;
    const at::Tensor w = wq.to(at::kFloat) * scales.view({24, 1});
    const at::Tensor y = at::relu(at::addmm(bias, dequantize(quantize(x, sx, zx), sx, zx), w.t()));
    const at::Tensor want = dequantize(quantize(y, sy, zy), sy, zy);
    Prog p;
    const std::string xi = p.input("x", x);
    const std::string si = p.weight("s", scales), bi = p.weight("b", bias);
    p.body.push_back("%xq: " + i8_type(x) + " = " + qdq_call("quantize_per_tensor", xi, sx, zx));
    const std::string xd = p.node("xd", x, qdq_call("dequantize_per_tensor", "%xq", sx, zx));
    const std::string wd =
        p.node("wd", w,
               "quantized_decomposed::dequantize_per_channel.default(input=%wq, scales=" + si +
                   ", zero_points=none, axis=0, quant_min=-127, quant_max=127, dtype=dtype(i8), "
                   "out_dtype=none)");
    const std::string wt =
        p.node("wt", w.t(), "aten::permute.default(self=" + wd + ", dims=[1, 0])");
    const std::string yv = p.node(
        "y", y,
        "aten::addmm.default(self=" + bi + ", mat1=" + xd + ", mat2=" + wt + ", beta=1, alpha=1)");
    const std::string r = p.node("r", y, "aten::relu.default(self=" + yv + ")");
    p.body.push_back("%yq: " + i8_type(y) + " = " + qdq_call("quantize_per_tensor", r, sy, zy));
    p.outputs = {p.node("yd", y, qdq_call("dequantize_per_tensor", "%yq", sy, zy))};
    const std::string wh = hex(wq);
    std::string text = "weight \"wq\": " + i8_type(wq) + " = hex\"" + wh + "\"\n" + p.text();
    text.insert(text.find("\n) {\n"), ",\n    %wq: " + i8_type(wq) + " parameter \"wq\"");
    auto program = parse_text(text);
    ASSERT_NE(program, nullptr);
    const Compiled compiled = compile(*program);
    int quant_matmuls = 0;
    for (const OpDesc& op : compiled.graph.ops) quant_matmuls += op.kind == OpKind::QuantMatMul;
    EXPECT_EQ(quant_matmuls, 1);
    for (bool int8 : {true, false}) {
      SCOPED_TRACE(int8 ? "int8 on" : "int8 off");
      DelegateSummary summary;
      auto out = run(compiled, {x}, {want}, {switched("int8", int8)}, &summary);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(summary.int8_matmuls, int8 && quant_linear_in_integers(weight_max) ? 1 : 0);
      expect_within_steps(out[0], want, 0.05f, 1, 20);
    }
  }
}

// Attention's matmuls as PT2E quantizes them: two quantized activations, one read through a
// permuted view requantized alike (PT2E's shared parameters: the identity, dropped), and a linear
// layer of a 3-D activation through a reshape; in integers where the CPU has VNNI.
TEST(CpuQuant, MatMulOfTwoQuantizedActivationsAgainstTheReference) {
  at::manual_seed(11);
  const at::Tensor a = at::randn({3, 12, 40}), bt = at::randn({3, 24, 40}) * 2;
  const at::Tensor wq = at::randint(-127, 128, {8, 24}).to(at::kChar);
  const at::Tensor scales = at::rand({8}) * 0.01 + 0.002;
  const double sa = 0.031, sb = 0.057, sy = 0.4, sz = 0.05;
  const int64_t za = -3, zb = 7, zy = 2, zz = -1;
  const at::Tensor ad = dequantize(quantize(a, sa, za), sa, za);
  const at::Tensor bd = dequantize(quantize(bt, sb, zb), sb, zb).permute({0, 2, 1});
  const at::Tensor y = at::bmm(ad, bd);
  const at::Tensor yd = dequantize(quantize(y, sy, zy), sy, zy);
  const at::Tensor w = wq.to(at::kFloat) * scales.view({8, 1});
  const at::Tensor z = at::mm(yd.view({36, 24}), w.t());
  const at::Tensor want = dequantize(quantize(z, sz, zz), sz, zz);
  Prog p;
  const std::string ai = p.input("a", a), bi = p.input("bt", bt), si = p.weight("s", scales);
  p.body.push_back("%aq: " + i8_type(a) + " = " + qdq_call("quantize_per_tensor", ai, sa, za));
  const std::string av = p.node("ad", a, qdq_call("dequantize_per_tensor", "%aq", sa, za));
  p.body.push_back("%bq: " + i8_type(bt) + " = " + qdq_call("quantize_per_tensor", bi, sb, zb));
  const std::string bv = p.node("bd", bt, qdq_call("dequantize_per_tensor", "%bq", sb, zb));
  const std::string bp = p.node("bp", bd, "aten::permute.default(self=" + bv + ", dims=[0, 2, 1])");
  p.body.push_back("%bq2: " + i8_type(bd) + " = " + qdq_call("quantize_per_tensor", bp, sb, zb));
  const std::string bd2 = p.node("bd2", bd, qdq_call("dequantize_per_tensor", "%bq2", sb, zb));
  const std::string yv = p.node("y", y, "aten::bmm.default(self=" + av + ", mat2=" + bd2 + ")");
  p.body.push_back("%yq: " + i8_type(y) + " = " + qdq_call("quantize_per_tensor", yv, sy, zy));
  const std::string ydv = p.node("yd", y, qdq_call("dequantize_per_tensor", "%yq", sy, zy));
  const std::string flat =
      p.node("flat", yd.view({36, 24}), "aten::view.default(self=" + ydv + ", size=[36, 24])");
  const std::string wd =
      p.node("wd", w,
             "quantized_decomposed::dequantize_per_channel.default(input=%wq, scales=" + si +
                 ", zero_points=none, axis=0, quant_min=-127, quant_max=127, dtype=dtype(i8), "
                 "out_dtype=none)");
  const std::string wt = p.node("wt", w.t(), "aten::permute.default(self=" + wd + ", dims=[1, 0])");
  const std::string zv = p.node("z", z, "aten::mm.default(self=" + flat + ", mat2=" + wt + ")");
  p.body.push_back("%zq: " + i8_type(z) + " = " + qdq_call("quantize_per_tensor", zv, sz, zz));
  p.outputs = {p.node("zd", z, qdq_call("dequantize_per_tensor", "%zq", sz, zz))};
  std::string text = "weight \"wq\": " + i8_type(wq) + " = hex\"" + hex(wq) + "\"\n" + p.text();
  text.insert(text.find("\n) {\n"), ",\n    %wq: " + i8_type(wq) + " parameter \"wq\"");
  auto program = parse_text(text);
  ASSERT_NE(program, nullptr);
  const Compiled compiled = compile(*program);
  int int8_operands = 0, quant_matmuls = 0, quantizes = 0;
  for (const OpDesc& op : compiled.graph.ops) {
    int8_operands += op.kind == OpKind::MatMul && op.matmul().quantized;
    quant_matmuls += op.kind == OpKind::QuantMatMul;
    quantizes += op.kind == OpKind::Eltwise && op.eltwise().alg == EltwiseAlg::Quantize;
    for (const PostOp& post : op.post_ops) quantizes += post.alg == EltwiseAlg::Quantize;
  }
  EXPECT_EQ(int8_operands, 1);
  EXPECT_EQ(quant_matmuls, 1);  // the linear reads the bmm's result through the reshape
  EXPECT_EQ(quantizes, 4);      // a, b, y and z: b's view requantized alike is no step
  for (bool int8 : {true, false}) {
    SCOPED_TRACE(int8 ? "int8 on" : "int8 off");
    DelegateSummary summary;
    auto out = run(compiled, {a, bt}, {want}, {switched("int8", int8)}, &summary);
    ASSERT_EQ(out.size(), 1u);
    // The product of two activations in integers with VNNI (oneDNN), the linear also without.
    EXPECT_EQ(summary.int8_matmuls,
              int8 ? int(int8_supported()) + int(quant_linear_in_integers(127)) : 0);
    // The integer sums are exact where ATen's float sums round, so y can land one step (0.4)
    // away at a tie, moving its row of z by weight * 0.4 (at most 127 * 0.012 * 0.4, about 12
    // steps of z; most weights are far smaller). With this seed no y lands at a tie and every z
    // agrees (checked when written): the bound is a margin, not the expected difference.
    expect_within_steps(out[0], want, sz, 8, 20);
  }
}

// A linear layer by a weight quantized by groups along its rows (torchao's 8da4w, 8da8w and
// weight-only int4/int8: dequantize_per_channel_group -> permute -> addmm/mm), on Ember's own
// kernel (GroupQuantMatMul), against ATen's matmul by PyTorch's dequantized weight.
TEST(CpuQuant, GroupedIntegerLinearAgainstTheReference) {
  at::manual_seed(11);
  const int64_t n = 40, k = 64;  // 40 output features: two 16-column panels and a partial one
  for (int64_t bits : {4, 8}) {
    for (int64_t group : {2, 32, 64}) {
      for (bool zeros : {false, true}) {
        for (bool bias : {true, false}) {
          SCOPED_TRACE(std::to_string(bits) + " bits, group " + std::to_string(group) +
                       (zeros ? ", zero points" : "") + (bias ? ", bias" : ""));
          const int64_t hi = bits == 4 ? 7 : 127;
          const at::Tensor wq = at::randint(-hi - 1, hi + 1, {n, k}).to(at::kChar);
          const at::Tensor scales = at::rand({n, k / group}) * 0.02 + 0.001;
          const at::Tensor zp = zeros ? at::randint(-hi - 1, hi + 1, {n, k / group}).to(at::kInt)
                                      : at::zeros({n, k / group}, at::kInt);
          const at::Tensor b = at::randn({n});
          // PyTorch's dequantize_per_channel_group: (q - zero point) * scale, in float32.
          const at::Tensor w = ((wq.to(at::kInt) - zp.repeat_interleave(group, 1)).to(at::kFloat) *
                                scales.repeat_interleave(group, 1));
          const std::string wh = hex(wq);
          for (int64_t m : {1, 5}) {  // a row; a tile of four rows and one more
            SCOPED_TRACE("rows " + std::to_string(m));
            const at::Tensor x = at::randn({m, k});
            const at::Tensor want = bias ? at::addmm(b, x, w.t()) : at::mm(x, w.t());
            Prog p;
            const std::string xi = p.input("x", x);
            const std::string si = p.weight("s", scales), bi = p.weight("b", b);
            const std::string zi = zeros ? p.weight("z", zp) : "none";
            const std::string wd = p.node(
                "wd", w,
                "quantized_decomposed::dequantize_per_channel_group.default(input=%wq, scales=" +
                    si + ", zero_points=" + zi + ", quant_min=" + std::to_string(-hi - 1) +
                    ", quant_max=" + std::to_string(hi) + ", dtype=dtype(i8), group_size=" +
                    std::to_string(group) + ", output_dtype=dtype(f32))");
            const std::string wt =
                p.node("wt", w.t(), "aten::permute.default(self=" + wd + ", dims=[1, 0])");
            p.outputs = {p.node("y", want,
                                bias ? "aten::addmm.default(self=" + bi + ", mat1=" + xi +
                                           ", mat2=" + wt + ", beta=1, alpha=1)"
                                     : "aten::mm.default(self=" + xi + ", mat2=" + wt + ")")};
            std::string text =
                "weight \"wq\": " + i8_type(wq) + " = hex\"" + wh + "\"\n" + p.text();
            text.insert(text.find("\n) {\n"), ",\n    %wq: " + i8_type(wq) + " parameter \"wq\"");
            auto program = parse_text(text);
            ASSERT_NE(program, nullptr);
            const Compiled compiled = compile(*program);
            int grouped = 0;
            for (const OpDesc& op : compiled.graph.ops) {
              if (op.kind != OpKind::GroupQuantMatMul) continue;
              ++grouped;
              EXPECT_EQ(compiled.graph.tensors[op.inputs[1]].storage,
                        bits == 4 ? WeightStorage::Int4 : WeightStorage::Int8);
              EXPECT_EQ(op.inputs[4] >= 0, zeros);
            }
            EXPECT_EQ(grouped, 1);
            DelegateSummary summary;
            auto out = run(compiled, {x}, {want}, {}, &summary);
            ASSERT_EQ(out.size(), 1u);
            EXPECT_EQ(summary.grouped_matmuls, 1);
            // The same products, summed in another order: float32 rounding only.
            EXPECT_TRUE(at::allclose(out[0], want, 1e-5, 1e-5))
                << (out[0] - want).abs().max().item<float>();
          }
        }
      }
    }
  }
}

// The integer linear's instruction-set variants (AVX2 pmaddubsw, AVX-512 pmaddubsw, AVX-512
// VNNI vpdpbusd) on one CPU: integer sums are exact and the float steps the same, so every
// variant the CPU runs gives the same bits; the one in use against ATen.
// The packers put every array in the storage they are given (the cpu delegate's: its method
// allocator), and compute from there what they compute from the heap.
TEST(CpuQuant, PackersTakeTheirStorage) {
  at::manual_seed(15);
  const int64_t n = 40, k = 64, group = 32, m = 3;
  const at::Tensor wq = at::randint(-8, 8, {n, k}).to(at::kChar);
  const at::Tensor scales = at::rand({n, k / group}) * 0.02 + 0.001, zeros = at::randn({n, 2});
  const at::Tensor bias = at::randn({n}), x = at::randn({m, k});
  alignas(64) static uint8_t arena[1 << 16];
  size_t used = 0;
  const Storage storage = [&](size_t bytes) {
    void* p = arena + used;
    used += (bytes + 63) / 64 * 64;
    EXPECT_LE(used, sizeof arena);
    return std::shared_ptr<void>(std::shared_ptr<void>(), p);  // owns nothing
  };
  auto in_arena = [&](const void* p) {
    return p >= static_cast<const void*>(arena) && p < static_cast<const void*>(arena + used);
  };
  for (const float* z :
       {static_cast<const float*>(nullptr), static_cast<const float*>(zeros.data_ptr<float>())}) {
    const QuantPackedMatrix heap = QuantPackedMatrix::pack(
        wq.data_ptr<int8_t>(), scales.data_ptr<float>(), z, bias.data_ptr<float>(), k, n, group, 4);
    const QuantPackedMatrix stored =
        QuantPackedMatrix::pack(wq.data_ptr<int8_t>(), scales.data_ptr<float>(), z,
                                bias.data_ptr<float>(), k, n, group, 4, storage);
    EXPECT_TRUE(in_arena(stored.data.data()) && in_arena(stored.scales.data()) &&
                in_arena(stored.bias.data()));
    EXPECT_EQ(z != nullptr, in_arena(stored.zeros.data()));
    std::vector<float> a(static_cast<size_t>(m * n)), b(a.size());
    quant_gemm(m, heap, x.data_ptr<float>(), k, a.data(), n);
    quant_gemm(m, stored, x.data_ptr<float>(), k, b.data(), n);
    EXPECT_EQ(a, b);
  }
  const size_t before = used;
  const DotPackedMatrix dot =
      DotPackedMatrix::pack(wq.data_ptr<int8_t>(), scales.data_ptr<float>(), bias.data_ptr<float>(),
                            k, n, group, 4, storage);
  EXPECT_GT(used, before);
  EXPECT_TRUE(in_arena(dot.data.data()) && in_arena(dot.scales.data()) &&
              in_arena(dot.bias.data()));
  EXPECT_TRUE(dot.sums.empty());  // 4 bits: the kernel sums the nibbles it loads
  const PackedMatrix f = PackedMatrix::pack(x.data_ptr<float>(), nullptr, k, m, storage);
  EXPECT_TRUE(in_arena(f.data) && in_arena(f.bias));
  // A storage that gives nothing: empty results, nothing written.
  const Storage none = [](size_t) { return std::shared_ptr<void>(); };
  EXPECT_EQ(PackedMatrix::pack(x.data_ptr<float>(), nullptr, k, m, none).data, nullptr);
  EXPECT_TRUE(QuantPackedMatrix::pack(wq.data_ptr<int8_t>(), scales.data_ptr<float>(), nullptr,
                                      nullptr, k, n, group, 4, none)
                  .data.empty());
}

TEST(CpuQuant, IntegerLinearVariantsAgree) {
  at::manual_seed(14);
  const int64_t n = 40, k = 96, group = 32, m = 11;  // a partial panel; tiles of 8, 4 and 1 rows
  const at::Tensor wq = at::randint(-8, 8, {n, k}).to(at::kChar);
  const at::Tensor scales = at::rand({n, k / group}) * 0.02 + 0.001;
  const at::Tensor bias = at::randn({n});
  const at::Tensor x = at::randn({m, k}) * 3;
  const DotPackedMatrix b =
      DotPackedMatrix::pack(wq.data_ptr<int8_t>(), scales.contiguous().data_ptr<float>(),
                            bias.data_ptr<float>(), k, n, group, 4);
  AlignedFloats memory(DotRows::bytes(m, k, group, true) / sizeof(float), NAN);
  DotRows rows(memory.data(), m, k, group, true);
  rows.quantize(x.contiguous().data_ptr<float>(), 1.1754943508222875e-38f);
  const std::vector<const simd::Kernels*> variants = simd_variants();
  if (variants.empty()) GTEST_SKIP() << "no AVX2";
  // Every variant's result, expected the same bits; the first's.
  auto on_every_variant = [&](const DotPackedMatrix& weights) {
    std::vector<std::vector<float>> outs;
    for (const simd::Kernels* v : variants) {
      outs.emplace_back(static_cast<size_t>(m * n));
      v->dot_gemm(m, weights, rows, outs.back().data(), n, 0, weights.panels);
    }
    for (size_t i = 1; i < outs.size(); ++i) {
      EXPECT_EQ(outs[i], outs[0]) << variants[i]->name << " against " << variants[0]->name;
    }
    return outs[0];
  };
  std::vector<float> out = on_every_variant(b);
  // ATen on the dequantized rows and weights.
  std::vector<float> xd(static_cast<size_t>(m * k));
  rows.dequantize(xd.data());
  const at::Tensor w = wq.to(at::kFloat) * scales.repeat_interleave(group, 1);
  const at::Tensor want = at::addmm(bias, at::from_blob(xd.data(), {m, k}), w.t());
  const at::Tensor got = at::from_blob(out.data(), {m, n});
  EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max().item<float>();
  // 8-bit weights (8da8w), full range (-128 included: the nibbles without VNNI) and symmetric
  // ([-127, 127], PT2E's: |xq| by q with xq's sign): the same bits on every variant, against
  // ATen.
  for (const int64_t lowest : {-128, -127}) {
    SCOPED_TRACE("8-bit weights from " + std::to_string(lowest));
    at::Tensor w8 = at::randint(lowest, 128, {n, k}).to(at::kChar);
    w8[0][0] = static_cast<int8_t>(lowest);
    const DotPackedMatrix b8 =
        DotPackedMatrix::pack(w8.data_ptr<int8_t>(), scales.contiguous().data_ptr<float>(),
                              bias.data_ptr<float>(), k, n, group, 8);
    EXPECT_EQ(b8.symmetric, lowest == -127);
    std::vector<float> out8 = on_every_variant(b8);
    const at::Tensor want8 =
        at::addmm(bias, at::from_blob(xd.data(), {m, k}),
                  (w8.to(at::kFloat) * scales.repeat_interleave(group, 1)).t());
    const at::Tensor got8 = at::from_blob(out8.data(), {m, n});
    EXPECT_TRUE(at::allclose(got8, want8, 1e-5, 1e-4)) << (got8 - want8).abs().max().item<float>();
  }
}

// A program's 4-bit weight as stored (two's complement nibbles, the low one first) packs to the
// same panels as its integers do, with no int8 copy; zero points other than 0, or groups not a
// multiple of 8, are refused (empty), for pack's route.
TEST(CpuQuant, NibblesPackAsTheirIntegers) {
  at::manual_seed(16);
  const int64_t n = 37, k = 64, group = 16;
  const at::Tensor wq = at::randint(-8, 8, {n, k}).to(at::kChar);
  const at::Tensor scales = at::rand({n, k / group}) + 0.1;
  const at::Tensor bias = at::randn({n});
  std::vector<uint8_t> stored(static_cast<size_t>(n * k / 2));
  const int8_t* q = wq.data_ptr<int8_t>();
  for (int64_t i = 0; i < n * k; ++i) {
    const auto nibble = static_cast<uint8_t>(q[i] & 0xF);
    stored[static_cast<size_t>(i / 2)] |= static_cast<uint8_t>(i % 2 ? nibble << 4 : nibble);
  }
  const DotPackedMatrix want =
      DotPackedMatrix::pack(q, scales.data_ptr<float>(), bias.data_ptr<float>(), k, n, group, 4);
  const DotPackedMatrix got = DotPackedMatrix::pack_nibbles(
      stored.data(), nullptr, scales.data_ptr<float>(), bias.data_ptr<float>(), k, n, group);
  ASSERT_FALSE(got.data.empty());
  EXPECT_EQ(got.bits, 4);
  EXPECT_EQ(got.panels, want.panels);
  EXPECT_TRUE(std::equal(got.data.data(), got.data.data() + got.data.size(), want.data.data(),
                         want.data.data() + want.data.size()));
  EXPECT_TRUE(std::equal(got.scales.data(), got.scales.data() + got.scales.size(),
                         want.scales.data(), want.scales.data() + want.scales.size()));
  EXPECT_TRUE(std::equal(got.bias.data(), got.bias.data() + got.bias.size(), want.bias.data(),
                         want.bias.data() + want.bias.size()));
  for (int64_t j = 0; j < n; j += 5) {
    for (int64_t i = 0; i < k; i += 3) EXPECT_EQ(got.weight(j, i), q[j * k + i]);
  }
  std::vector<float> zeros(static_cast<size_t>(n * k / group), 0.f);
  EXPECT_FALSE(DotPackedMatrix::pack_nibbles(stored.data(), zeros.data(), scales.data_ptr<float>(),
                                             nullptr, k, n, group)
                   .data.empty());
  zeros[3] = 1.f;
  EXPECT_TRUE(DotPackedMatrix::pack_nibbles(stored.data(), zeros.data(), scales.data_ptr<float>(),
                                            nullptr, k, n, group)
                  .data.empty());
  EXPECT_TRUE(DotPackedMatrix::pack_nibbles(stored.data(), nullptr, scales.data_ptr<float>(),
                                            nullptr, k, n, 4)
                  .data.empty());
}

// 4-bit weights in long groups: the kernel sums each column's nibbles as it loads them, bytes
// added in place for 8 loads before they fold into 32 bits; groups of 32 to 256 (1 to 4 folds),
// columns of the largest nibbles (q = 7: 15 + 15 a load, 240 a byte after 8) and the smallest,
// and a zero point far from 0 (its term is what the sums serve), against ATen on every variant.
TEST(CpuQuant, IntegerLinearSumsNibblesOfLongGroups) {
  const std::vector<const simd::Kernels*> variants = simd_variants();
  if (variants.empty()) GTEST_SKIP() << "no AVX2";
  at::manual_seed(15);
  const int64_t n = 35, k = 512, m = 5;
  for (const int64_t group : {32, 64, 128, 256}) {
    SCOPED_TRACE("group " + std::to_string(group));
    at::Tensor wq = at::randint(-8, 8, {n, k}).to(at::kChar);
    wq[0].fill_(7);
    wq[1].fill_(-8);
    wq[2].slice(0, 0, k / 2).fill_(7);
    const at::Tensor scales = at::rand({n, k / group}) * 0.02 + 0.001;
    const at::Tensor bias = at::randn({n});
    const at::Tensor x = at::rand({m, k}) * 2 + 1;  // all positive: zero point -128
    const DotPackedMatrix b =
        DotPackedMatrix::pack(wq.data_ptr<int8_t>(), scales.contiguous().data_ptr<float>(),
                              bias.data_ptr<float>(), k, n, group, 4);
    ASSERT_FALSE(b.data.empty());
    AlignedFloats memory(DotRows::bytes(m, k, group, true) / sizeof(float), NAN);
    DotRows rows(memory.data(), m, k, group, true);
    rows.quantize(x.contiguous().data_ptr<float>(), 1.1754943508222875e-38f);
    std::vector<float> xd(static_cast<size_t>(m * k));
    rows.dequantize(xd.data());
    const at::Tensor w = wq.to(at::kFloat) * scales.repeat_interleave(group, 1);
    const at::Tensor want = at::addmm(bias, at::from_blob(xd.data(), {m, k}), w.t());
    for (const simd::Kernels* v : variants) {
      std::vector<float> out(static_cast<size_t>(m * n));
      v->dot_gemm(m, b, rows, out.data(), n, 0, b.panels);
      const at::Tensor got = at::from_blob(out.data(), {m, n});
      EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-4))
          << v->name << ": " << (got - want).abs().max().item<float>();
    }
  }
}

}  // namespace
}  // namespace ember::cpu
