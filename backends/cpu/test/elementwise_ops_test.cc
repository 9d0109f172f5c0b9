// The cpu backend's element-wise ops of one tensor (abs, exp, log, floor, ceil, sin, cos,
// reciprocal, round, leaky_relu), of two (sub, div, minimum, maximum, the second operand
// broadcast) and its resizing (upsample_bilinear2d with and without align_corners,
// upsample_nearest2d) through both halves against ATen, NaN and infinities included; and what
// stays portable, with the reason.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Zeros of both signs, halves (round's ties), negatives, infinities, NaN, subnormals, large and
// ordinary numbers: 64 values.
at::Tensor special_values() {
  std::vector<float> v = {0.f,   -0.f, 0.5f,  -0.5f, 1.5f,    2.5f,    -2.5f, 1.f,
                          -1.f,  kInf, -kInf, kNan,  1e-40f,  -1e-40f, 1e30f, -1e30f,
                          7.25f, 0.1f, -0.3f, 1e4f,  -123.4f, 88.f,    -90.f, 8388609.f};
  at::Tensor r = at::randn({40}) * 10;
  return at::cat({at::tensor(v), r}).reshape({4, 16});
}

int count_ops(const CpuGraph& g, OpKind kind) {
  int n = 0;
  for (const OpDesc& op : g.ops) n += op.kind == kind;
  return n;
}

// NaN exactly where ATen has NaN, and the same values elsewhere: equal floats, and where
// `zero_signs`, zeros of the same sign.
void expect_same_values(const at::Tensor& got, const at::Tensor& want, bool zero_signs) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::equal(got.isnan(), want.isnan())) << "got " << got << "\nwant " << want;
  const at::Tensor g = at::where(want.isnan(), 0.f, got), w = at::where(want.isnan(), 0.f, want);
  EXPECT_TRUE(at::equal(g, w)) << "got " << got << "\nwant " << want;
  if (zero_signs) {
    EXPECT_TRUE(at::equal(g.signbit(), w.signbit())) << "got " << got;
  }
}

// Within about an ulp of ATen's (its transcendental functions are Sleef's, ours the C
// library's), with NaN and the infinities exactly where ATen has them.
void expect_near_ulp(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::equal(got.isnan(), want.isnan())) << "got " << got << "\nwant " << want;
  EXPECT_TRUE(at::equal(got.isinf(), want.isinf()));
  EXPECT_TRUE(at::allclose(got, want, 1e-6, 1e-7, /*equal_nan=*/true))
      << "max diff " << (got - want).abs().nan_to_num(0, 0, 0).max().item<float>();
}

Compiled compile_one(const Prog& p) {
  auto program = parse_text(p.text());
  if (!program) return {};
  return compile(*program);
}

TEST(CpuElementwiseOps, UnaryOpsMatchAten) {
  at::manual_seed(31);
  const at::Tensor x = special_values();
  struct Case {
    std::string call;
    at::Tensor want;
    bool exact;  // bit for bit; else within an ulp or so
  };
  const std::vector<Case> cases = {
      {"aten::abs.default(self=%x)", at::abs(x), true},
      {"aten::floor.default(self=%x)", at::floor(x), true},
      {"aten::ceil.default(self=%x)", at::ceil(x), true},
      {"aten::round.default(self=%x)", at::round(x), true},
      {"aten::reciprocal.default(self=%x)", at::reciprocal(x), true},
      {"aten::leaky_relu.default(self=%x, negative_slope=0.1)", at::leaky_relu(x, 0.1), true},
      {"aten::leaky_relu.default(self=%x, negative_slope=-0.5)", at::leaky_relu(x, -0.5), true},
      {"aten::exp.default(self=%x)", at::exp(x), false},
      {"aten::log.default(self=%x)", at::log(x), false},
      {"aten::sin.default(self=%x)", at::sin(x), false},
      {"aten::cos.default(self=%x)", at::cos(x), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.call);
    Prog p;
    p.input("x", x);
    p.outputs = {p.node("y", c.want, c.call)};
    const Compiled compiled = compile_one(p);
    EXPECT_EQ(count_ops(compiled.graph, OpKind::Eltwise), 1);
    auto out = run(compiled, {x}, {c.want});
    ASSERT_EQ(out.size(), 1u);
    if (c.exact) {
      // NaN's payload too: each op keeps the input's NaN as ATen's does.
      EXPECT_EQ(hex(out[0]), hex(c.want)) << "got " << out[0] << "\nwant " << c.want;
    } else {
      expect_near_ulp(out[0], c.want);
    }
  }
}

// As post-ops of a convolution, whose result oneDNN leaves channel-blocked (16 channels: no
// padding; 3: the block's padding, which exp and cos do not keep zero).
TEST(CpuElementwiseOps, UnaryOpsAfterAConvolution) {
  at::manual_seed(32);
  for (int64_t channels : {16, 3}) {
    const at::Tensor x = at::randn({1, 4, 6, 6}), w = at::randn({channels, 4, 3, 3});
    const at::Tensor conv = conv2d(x, w, {}, 1, 1);
    for (const auto& [op, want] : {std::pair{std::string("floor"), at::floor(conv)},
                                   std::pair{std::string("exp"), at::exp(conv * 0.1)},
                                   std::pair{std::string("cos"), at::cos(conv)}}) {
      SCOPED_TRACE(op + ", " + std::to_string(channels) + " channels");
      Prog p;
      const std::string xi = p.input("x", x);
      std::string c = p.node("c", conv, conv_call(xi, p.weight("w", w), "none", 1, 1));
      if (op == "exp") {
        c = p.node(
            "s", conv,
            "aten::mul.Tensor(self=" + c + ", other=" + p.weight("k", at::full({}, 0.1f)) + ")");
      }
      p.outputs = {p.node("y", want, "aten::" + op + ".default(self=" + c + ")")};
      const Compiled compiled = compile_one(p);
      auto out = run(compiled, {x}, {want});
      ASSERT_EQ(out.size(), 1u);
      expect_close(out[0], want, 1e-4, 1e-4);
    }
  }
}

TEST(CpuElementwiseOps, BinaryOpsMatchAten) {
  at::manual_seed(33);
  const at::Tensor a = special_values().reshape({2, 2, 4, 4});
  // b of a's shape (its values shuffled against a's, so that NaN, infinities and zeros meet
  // every other value), and broadcast: per channel, over the last dim, one value, lower rank.
  const at::Tensor full = special_values().reshape({-1}).flip(0).reshape({2, 2, 4, 4});
  const std::vector<at::Tensor> others = {
      full,
      at::tensor({kNan, -0.f}).reshape({1, 2, 1, 1}),
      at::tensor({0.f, -kInf, 2.f, kNan}).reshape({1, 1, 1, 4}),
      at::tensor({-0.f}).reshape({1, 1, 1, 1}),
      at::tensor({1.5f, kInf, -3.f, 0.f}),
  };
  struct Op {
    std::string name, call;
    bool zero_signs;
  };
  // minimum and maximum of -0.0 and 0.0: ATen's vectorized loop and its scalar tail disagree on
  // the sign (the portable kernel's, and this backend's, are a's); their values are equal.
  const std::vector<Op> ops = {{"sub", "aten::sub.Tensor(self=%a, other=%b, alpha=1)", true},
                               {"div", "aten::div.Tensor(self=%a, other=%b)", true},
                               {"minimum", "aten::minimum.default(self=%a, other=%b)", false},
                               {"maximum", "aten::maximum.default(self=%a, other=%b)", false}};
  for (const at::Tensor& b : others) {
    for (const Op& op : ops) {
      SCOPED_TRACE(op.name + " by " + type_of(b));
      const at::Tensor want = op.name == "sub"       ? at::sub(a, b)
                              : op.name == "div"     ? at::div(a, b)
                              : op.name == "minimum" ? at::minimum(a, b)
                                                     : at::maximum(a, b);
      Prog p;
      p.input("a", a);
      p.input("b", b);
      p.outputs = {p.node("y", want, op.call)};
      const Compiled compiled = compile_one(p);
      EXPECT_EQ(count_ops(compiled.graph, OpKind::Binary), 1);
      auto out = run(compiled, {a, b}, {want});
      ASSERT_EQ(out.size(), 1u);
      expect_same_values(out[0], want, op.zero_signs);
    }
  }
}

// maximum(conv, b) then relu (the relu a post-op of the Binary, after Ember's kernel), and a
// subtraction of a weight from a convolution's blocked result, then a division by it.
TEST(CpuElementwiseOps, BinaryOpsAfterAConvolution) {
  at::manual_seed(34);
  const at::Tensor x = at::randn({1, 4, 6, 6}), w = at::randn({16, 4, 3, 3});
  at::Tensor other = at::randn({1, 16, 1, 1});
  other.view(-1)[3] = kNan;
  const at::Tensor conv = conv2d(x, w, {}, 1, 1);
  {
    const at::Tensor want = at::relu(at::maximum(conv, other));
    Prog p;
    const std::string c =
        p.node("c", conv, conv_call(p.input("x", x), p.weight("w", w), "none", 1, 1));
    const std::string m = p.node(
        "m", want, "aten::maximum.default(self=" + c + ", other=" + p.input("o", other) + ")");
    p.outputs = {p.node("y", want, "aten::relu.default(self=" + m + ")")};
    const Compiled compiled = compile_one(p);
    ASSERT_EQ(count_ops(compiled.graph, OpKind::Binary), 1);
    auto out = run(compiled, {x, other}, {want});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(at::equal(out[0].isnan(), want.isnan()));
    expect_close(out[0].nan_to_num(0), want.nan_to_num(0), 1e-4, 1e-4);
  }
  {
    const at::Tensor want = at::div(at::sub(conv, other), other);
    Prog p;
    const std::string c =
        p.node("c", conv, conv_call(p.input("x", x), p.weight("w", w), "none", 1, 1));
    const std::string o = p.weight("o", other);
    const std::string s =
        p.node("s", want, "aten::sub.Tensor(self=" + c + ", other=" + o + ", alpha=1)");
    p.outputs = {p.node("y", want, "aten::div.Tensor(self=" + s + ", other=" + o + ")")};
    const Compiled compiled = compile_one(p);
    EXPECT_EQ(count_ops(compiled.graph, OpKind::Binary), 2);
    auto out = run(compiled, {x}, {want});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(at::equal(out[0].isnan(), want.isnan()));
    expect_close(out[0].nan_to_num(0), want.nan_to_num(0), 1e-4, 1e-4);
  }
}

// upsample_bilinear2d (align_corners false and true) and upsample_nearest2d, up and down by
// whole and other ratios; NaN and infinities where both the positions of PyTorch 2 (float, the
// portable kernel's and this backend's) and of the libtorch these tests link (1.13: double) are
// exact, the other sizes of finite values (there a source position within rounding of an integer
// gets a weight of 0 in one and of about 1e-7 in the other: a neighbouring NaN shows it).
TEST(CpuElementwiseOps, ResizeMatchesAten) {
  at::manual_seed(35);
  const at::Tensor finite = at::randn({2, 3, 5, 6});
  at::Tensor special = finite.clone();
  special.view(-1)[7] = kNan;
  special.view(-1)[40] = kInf;
  special.view(-1)[75] = -kInf;
  struct Case {
    std::vector<int64_t> size;
    bool special;
  };
  const std::vector<Case> cases = {{{10, 12}, true}, {{9, 11}, true}, {{5, 6}, true},
                                   {{7, 9}, false},  {{3, 4}, false}, {{1, 1}, false},
                                   {{11, 2}, false}};
  for (const Case& c : cases) {
    const std::string size = ints(c.size);
    const at::Tensor x = c.special ? special : finite;
    for (int mode = 0; mode < 3; ++mode) {
      const bool nearest = mode == 2, align = mode == 1;
      // 9 x 11 of 5 x 6: exact positions with align_corners only; 10 x 12: without only.
      if (!nearest && c.special && c.size[0] == 9 && !align) continue;
      if (!nearest && c.special && c.size[0] == 10 && align) continue;
      SCOPED_TRACE(std::string(nearest ? "nearest"
                               : align ? "bilinear, align_corners"
                                       : "bilinear") +
                   " to " + size);
      const at::Tensor want =
          nearest ? at::upsample_nearest2d(x, c.size) : at::upsample_bilinear2d(x, c.size, align);
      const std::string call =
          nearest ? "aten::upsample_nearest2d.default(self=%x, output_size=" + size +
                        ", scales_h=none, scales_w=none)"
                  : "aten::upsample_bilinear2d.default(self=%x, output_size=" + size +
                        ", align_corners=" + (align ? "true" : "false") +
                        ", scales_h=none, scales_w=none)";
      Prog p;
      p.input("x", x);
      p.outputs = {p.node("y", want, call)};
      const Compiled compiled = compile_one(p);
      EXPECT_EQ(count_ops(compiled.graph, OpKind::Resize), 1);
      auto out = run(compiled, {x}, {want});
      ASSERT_EQ(out.size(), 1u);
      if (nearest) {
        EXPECT_EQ(hex(out[0]), hex(want));
      } else {
        EXPECT_TRUE(at::equal(out[0].isnan(), want.isnan()));
        EXPECT_TRUE(at::allclose(out[0], want, 1e-6, 1e-6, /*equal_nan=*/true))
            << "max diff " << (out[0] - want).abs().nan_to_num(0, 0, 0).max().item<float>();
      }
    }
  }
  const at::Tensor x = finite;
  // The .vec forms by a scale factor of 2 (1 / 2 is in / out), of a convolution's result.
  const at::Tensor w = at::randn({16, 3, 3, 3});
  const at::Tensor conv = conv2d(x, w, {}, 1, 1);
  for (bool nearest : {false, true}) {
    SCOPED_TRACE(nearest ? "nearest.vec" : "bilinear.vec");
    const at::Tensor want =
        nearest ? at::upsample_nearest2d(conv, c10::nullopt, std::vector<double>{2.0, 2.0})
                : at::upsample_bilinear2d(conv, c10::nullopt, false, std::vector<double>{2.0, 2.0});
    Prog p;
    const std::string c =
        p.node("c", conv, conv_call(p.input("x", x), p.weight("w", w), "none", 1, 1));
    p.outputs = {
        p.node("y", want,
               nearest ? "aten::upsample_nearest2d.vec(input=" + c +
                             ", output_size=none, scale_factors=[2.0, 2.0])"
                       : "aten::upsample_bilinear2d.vec(input=" + c +
                             ", output_size=none, align_corners=false, scale_factors=[2.0, 2.0])")};
    const Compiled compiled = compile_one(p);
    EXPECT_EQ(count_ops(compiled.graph, OpKind::Resize), 1);
    auto out = run(compiled, {x}, {want});
    ASSERT_EQ(out.size(), 1u);
    expect_close(out[0], want, 1e-4, 1e-4);
  }
}

// Prelu, an engine op without a compile-side claim yet (Ember's compiler has no prelu kernel): a
// step graph written by hand, as another front door (ExecuTorch's XNNPACK payload) writes it,
// per channel (the slope [C, 1, 1]) and one slope for all ([1]), against ATen's prelu bit for bit.
TEST(CpuElementwiseOps, PreluMatchesAten) {
  at::manual_seed(36);
  const at::Tensor x = special_values().reshape({2, 2, 4, 4});
  for (const at::Tensor& slope :
       {at::tensor({0.25f, -2.f}), at::tensor({kNan, 0.5f}), at::tensor({0.1f})}) {
    SCOPED_TRACE(type_of(slope));
    const at::Tensor want = at::prelu(x, slope);
    CpuGraph g;
    g.num_inputs = 2;
    g.tensors.push_back({TensorKind::Input, 0, {2, 2, 4, 4}, {}});
    std::vector<int64_t> sd = {slope.size(0), 1, 1};
    if (slope.size(0) == 1) sd = {1};
    g.tensors.push_back({TensorKind::Input, 1, sd, {}});
    g.tensors.push_back({TensorKind::Intermediate, 0, {2, 2, 4, 4}, {}});
    OpDesc op;
    op.kind = OpKind::Binary;
    op.inputs = {0, 1};
    op.output = 2;
    op.params = BinaryParams{BinaryAlg::Prelu};
    g.ops.push_back(op);
    g.outputs = {2};
    g.output_dim_orders = {{}};
    Compiled c;
    c.result.processed = serialize(g);
    c.graph = g;
    auto out = run(c, {x, slope.reshape(sd)}, {want});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(hex(out[0]), hex(want)) << "got " << out[0] << "\nwant " << want;
  }
}

// What the engine does not compute as ATen does stays portable, with the reason.
TEST(CpuElementwiseOps, WhatTheBackendCannotDoStaysPortable) {
  auto program = parse_text(
      "graph(\n    %x: f32[4, 8],\n    %r: f32[8],\n    %i: f32[1, 2, 5, 5]\n) {\n"
      "  %a: f32[4, 8] = aten::sub.Tensor(self=%x, other=%x, alpha=2)\n"
      "  %b: f32[4, 8] = aten::sub.Tensor(self=%r, other=%x, alpha=1)\n"
      "  %c: f32[4, 8] = aten::div.Tensor(self=%r, other=%x)\n"
      "  %d: f32[4, 8] = aten::div.Tensor_mode(self=%x, other=%x, rounding_mode=\"floor\")\n"
      "  %e: f32[1, 2, 7, 7] = aten::upsample_bilinear2d.vec(input=%i, output_size=none, "
      "align_corners=false, scale_factors=[1.5, 1.5])\n"
      "  %f: f32[1, 2, 7, 7] = aten::upsample_nearest2d.default(self=%i, output_size=[7, 7], "
      "scales_h=1.5, scales_w=1.5)\n"
      "  return (%a, %b, %c, %d, %e, %f)\n}\n");
  ASSERT_TRUE(program);
  const std::vector<std::string> reasons = {
      "alpha other than 1",
      "first operand broadcasts",
      "first operand broadcasts",
      "not part of a dynamically quantized activation",
      "scale factor whose inverse is not in / out",
      "scale factor whose inverse is not in / out",
  };
  size_t i = 0;
  for (const ir::Node* n : program->graph().nodes()) {
    ASSERT_LT(i, reasons.size());
    partition::Support s = compiler_backend()->support().check(*n);
    EXPECT_FALSE(s.supported) << n->describe();
    EXPECT_NE(s.reason.find(reasons[i]), std::string::npos) << n->describe() << ": " << s.reason;
    ++i;
  }
  // align_corners ignores the scale factor (ATen's positions are corner to corner): claimed.
  auto aligned = parse_text(
      "graph(\n    %i: f32[1, 2, 5, 5]\n) {\n"
      "  %e: f32[1, 2, 7, 7] = aten::upsample_bilinear2d.vec(input=%i, output_size=none, "
      "align_corners=true, scale_factors=[1.5, 1.5])\n"
      "  return (%e)\n}\n");
  ASSERT_TRUE(aligned);
  EXPECT_TRUE(compiler_backend()->support().check(**aligned->graph().nodes().begin()).supported);
}

}  // namespace
}  // namespace ember::cpu
