// The cpu backend's ops for transformer blocks against ATen: RMSNorm (pow, mean over the last dim,
// rsqrt), the rotary embedding's rotate-half (slice, neg, cat), select, clone and reductions, so
// that a Llama block runs in one partition rather than between portable nodes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Values that tell exact element-wise results from near ones: zeros of both signs, negatives,
// infinities, NaN, subnormals, and ordinary numbers.
at::Tensor special_values() {
  std::vector<float> v = {0.f,    -0.f,    1.f,  -1.f,  2.f,      0.5f,     3.f,
                          1e-40f, -1e-40f, kInf, -kInf, kNan,     1e30f,    -1e30f,
                          7.25f,  1e-20f,  0.1f, -0.3f, 123.456f, 1.17e-38f};
  at::Tensor r = at::randn({44}) * 10;
  return at::cat({at::tensor(v), r}).reshape({4, 16});
}

// How many ops of `kind` the blob holds (of element-wise algorithm `alg`, when given).
int count_ops(const CpuGraph& g, OpKind kind, std::optional<EltwiseAlg> alg = std::nullopt) {
  int n = 0;
  for (const OpDesc& op : g.ops) {
    n += op.kind == kind && (!alg || op.eltwise().alg == *alg);
  }
  return n;
}

// The results are the same floats, NaN where ATen has NaN and zeros of the same sign.
void expect_bits(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(hex(got), hex(want.contiguous())) << "got " << got << "\nwant " << want;
}

TEST(CpuTransformerOps, ElementWiseOpsAreAtensBitForBit) {
  at::manual_seed(1);
  const at::Tensor x = special_values();
  struct Case {
    std::string call;
    at::Tensor want;
  };
  const std::vector<Case> cases = {
      {"aten::pow.Tensor_Scalar(self=%x, exponent=2)", at::pow(x, 2)},
      {"aten::pow.Tensor_Scalar(self=%x, exponent=0.5)", at::pow(x, 0.5)},
      {"aten::pow.Tensor_Scalar(self=%x, exponent=-0.5)", at::pow(x, -0.5)},
      {"aten::sqrt.default(self=%x)", at::sqrt(x)},
      {"aten::rsqrt.default(self=%x)", at::rsqrt(x)},
      {"aten::neg.default(self=%x)", at::neg(x)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.call);
    Prog p;
    p.input("x", x);
    p.outputs = {p.node("y", c.want, c.call)};
    auto program = parse_text(p.text());
    ASSERT_TRUE(program);
    Compiled compiled = compile(*program);
    auto out = run(compiled, {x}, {c.want});
    ASSERT_EQ(out.size(), 1u);
    expect_bits(out[0], c.want);
  }
}

// Other exponents, steps, dtypes and memory formats, and a reduction over dims of size 1 (oneDNN
// refuses it), stay portable with a reason.
TEST(CpuTransformerOps, WhatTheBackendCannotDoStaysPortable) {
  const auto* backend = compiler_backend();
  auto program = parse_text(
      "graph(\n    %x: f32[4, 8],\n    %z: f32[1, 8]\n) {\n"
      "  %a: f32[4, 8] = aten::pow.Tensor_Scalar(self=%x, exponent=3)\n"
      "  %b: f32[2, 8] = aten::slice.Tensor(self=%x, dim=0, start=0, end=4, step=2)\n"
      "  %c: f32[4, 8] = aten::mean.dim(self=%x, dim=[-1], keepdim=true, dtype=dtype(f64))\n"
      "  %d: f32[4, 8] = aten::clone.default(self=%x, "
      "memory_format=memory_format(\"channels_last\"))\n"
      "  %e: f32[8] = aten::sum.dim_IntList(self=%z, dim=[0], keepdim=false)\n"
      "  return (%a, %b, %c, %d, %e)\n}\n");
  ASSERT_TRUE(program);
  for (const ir::Node* n : program->graph().nodes()) {
    partition::Support s = backend->support().check(*n);
    EXPECT_FALSE(s.supported) << n->describe();
    EXPECT_FALSE(s.reason.empty());
  }
}

// x * rsqrt(mean(x^2, -1, keepdim) + eps) * w: Llama's RMSNorm as export writes it.
TEST(CpuTransformerOps, RmsNormInOnePartition) {
  at::manual_seed(2);
  const at::Tensor x = at::randn({1, 6, 64}), w = at::rand({64}) + 0.5;
  const at::Tensor sq = at::pow(x, 2), m = at::mean(sq, {-1}, true), e = m + 1e-6;
  const at::Tensor r = at::rsqrt(e), n = x * r, want = n * w;
  Prog p;
  auto xi = p.input("x", x);
  auto s = p.node("sq", sq, "aten::pow.Tensor_Scalar(self=" + xi + ", exponent=2)");
  auto me = p.node("m", m, "aten::mean.dim(self=" + s + ", dim=[-1], keepdim=true)");
  auto ad =
      p.node("e", e,
             "aten::add.Tensor(self=" + me + ", other=" + p.weight("eps", at::tensor(1e-6f)) + ")");
  auto rs = p.node("r", r, "aten::rsqrt.default(self=" + ad + ")");
  auto nn = p.node("n", n, "aten::mul.Tensor(self=" + xi + ", other=" + rs + ")");
  p.outputs = {
      p.node("y", want, "aten::mul.Tensor(self=" + nn + ", other=" + p.weight("w", w) + ")")};
  Compiled c = check(p, want, 1e-6);
  EXPECT_EQ(count_ops(c.graph, OpKind::Reduce), 1);
}

TEST(CpuTransformerOps, ReductionsOverAnyDims) {
  at::manual_seed(3);
  const at::Tensor x = at::randn({2, 3, 5, 7});
  struct Case {
    const char* op;
    std::vector<int64_t> dims;
    bool keepdim;
  };
  for (const Case& k : std::vector<Case>{{"mean", {-1}, true},
                                         {"mean", {-1}, false},
                                         {"mean", {1}, true},
                                         {"sum", {0, 2}, false},
                                         {"sum", {-1, 1}, true},
                                         {"mean", {}, false},
                                         {"mean", {2, 3}, true}}) {  // the last: a global pool
    SCOPED_TRACE(std::string(k.op) + " " + ints(k.dims) + (k.keepdim ? " keepdim" : ""));
    at::Tensor want = std::string(k.op) == "mean" ? at::mean(x, k.dims, k.keepdim)
                                                  : at::sum(x, k.dims, k.keepdim);
    Prog p;
    auto xi = p.input("x", x);
    const std::string overload = std::string(k.op) == "mean" ? ".dim" : ".dim_IntList";
    p.outputs = {p.node("y", want,
                        "aten::" + std::string(k.op) + overload + "(self=" + xi + ", dim=" +
                            ints(k.dims) + ", keepdim=" + (k.keepdim ? "true" : "false") + ")")};
    check(p, want, 1e-5);
  }
}

// A mean over H and W of a 1x1 map is a global pooling (oneDNN's pooling takes it), not a
// reduction over size-1 dims, which stays portable.
TEST(CpuTransformerOps, GlobalPoolingOfOnePixelIsClaimed) {
  const at::Tensor x = at::randn({1, 8, 1, 1});
  const at::Tensor want = at::mean(x, {2, 3}, true);
  Prog p;
  auto xi = p.input("x", x);
  p.outputs = {p.node("y", want, "aten::mean.dim(self=" + xi + ", dim=[-1, -2], keepdim=true)")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);  // expects every node supported
  EXPECT_EQ(count_ops(c.graph, OpKind::Pool), 1);
  auto out = run(c, {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  expect_bits(out[0], want);
}

TEST(CpuTransformerOps, ReductionsPropagateInfAndNan) {
  at::Tensor x = at::randn({3, 4});
  x[0][1] = kNan;
  x[1][0] = kInf;
  x[2][0] = kInf;
  x[2][3] = -kInf;
  const at::Tensor want = at::mean(x, {-1}, true);
  Prog p;
  auto xi = p.input("x", x);
  p.outputs = {p.node("y", want, "aten::mean.dim(self=" + xi + ", dim=[-1], keepdim=true)")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  auto out = run(compile(*program), {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0][0][0].item<float>()));
  EXPECT_EQ(out[0][1][0].item<float>(), kInf);
  EXPECT_TRUE(std::isnan(out[0][2][0].item<float>()));
}

// cat(-x[..., half:], x[..., :half]) of a permuted (strided) tensor, as Llama's rotary embedding.
TEST(CpuTransformerOps, RotateHalfOfAPermutedTensor) {
  at::manual_seed(4);
  const at::Tensor x = at::randn({1, 5, 4, 8});
  x[0][1][2][6] = -0.f;
  const at::Tensor t = x.permute({0, 2, 1, 3});  // [1, 4, 5, 8]
  const at::Tensor hi = t.slice(3, 4), lo = t.slice(3, 0, 4), n = -hi;
  const at::Tensor want = at::cat({n, lo}, -1);
  Prog p;
  auto xi = p.input("x", x);
  auto pe =
      p.node("t", t.contiguous(), "aten::permute.default(self=" + xi + ", dims=[0, 2, 1, 3])");
  auto h = p.node("hi", hi.contiguous(),
                  "aten::slice.Tensor(self=" + pe + ", dim=3, start=4, end=9223372036854775807)");
  auto l =
      p.node("lo", lo.contiguous(), "aten::slice.Tensor(self=" + pe + ", dim=-1, start=0, end=-4)");
  auto ng = p.node("n", n.contiguous(), "aten::neg.default(self=" + h + ")");
  p.outputs = {p.node("y", want, "aten::cat.default(tensors=[" + ng + ", " + l + "], dim=-1)")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  auto out = run(c, {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  expect_bits(out[0], want);
}

TEST(CpuTransformerOps, SelectAndClone) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({2, 6, 8});
  const at::Tensor last = x.select(1, -1), t = x.transpose(1, 2), c = t.contiguous();
  Prog p;
  auto xi = p.input("x", x);
  auto s = p.node("s", last, "aten::select.int(self=" + xi + ", dim=1, index=-1)");
  auto tr = p.node("t", c, "aten::transpose.int(self=" + xi + ", dim0=1, dim1=2)");
  auto cl = p.node(
      "c", c,
      "aten::clone.default(self=" + tr + ", memory_format=memory_format(\"contiguous_format\"))");
  p.outputs = {s, cl};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled compiled = compile(*program);
  auto out = run(compiled, {x}, {last, c});
  ASSERT_EQ(out.size(), 2u);
  expect_bits(out[0], last);
  expect_bits(out[1], c);
}

// Attention's masked_fill: where(mask, -inf, scores) with the mask [S, L] a bool input (or a
// constant) broadcast over the heads, then softmax, in one partition.
TEST(CpuTransformerOps, WhereWithABoolMaskThenSoftmax) {
  at::manual_seed(6);
  const at::Tensor scores = at::randn({1, 3, 5, 8});
  const at::Tensor mask = at::arange(8).view({1, -1}) > at::arange(5).view({-1, 1}) + 2;
  const at::Tensor fill = at::tensor(-kInf);
  const at::Tensor w = at::where(mask, fill, scores), want = at::softmax(w, -1);
  for (bool constant_mask : {false, true}) {
    SCOPED_TRACE(constant_mask ? "constant mask" : "mask input");
    Prog p;
    auto si = p.input("s", scores);
    auto mi = constant_mask ? p.weight("m", mask) : p.input("m", mask);
    auto wh = p.node("w", w,
                     "aten::where.self(condition=" + mi + ", self=" + p.weight("fill", fill) +
                         ", other=" + si + ")");
    p.outputs = {
        p.node("y", want, "aten::_softmax.default(self=" + wh + ", dim=-1, half_to_float=false)")};
    auto program = parse_text(p.text());
    ASSERT_TRUE(program);
    Compiled c = compile(*program);
    auto out = constant_mask ? run(c, {scores}, {want}) : run(c, {scores, mask}, {want});
    ASSERT_EQ(out.size(), 1u);
    expect_close(out[0], want, 1e-6, 1e-7);
  }
}

TEST(CpuTransformerOps, WhereBroadcastsEveryOperand) {
  at::manual_seed(7);
  const at::Tensor c = at::rand({4, 1, 6}) > 0.5, a = at::randn({3, 1}), b = at::randn({4, 3, 6});
  const at::Tensor want = at::where(c, a, b);
  Prog p;
  auto ci = p.input("c", c);
  auto ai = p.input("a", a);
  auto bi = p.input("b", b);
  p.outputs = {p.node("y", want,
                      "aten::where.self(condition=" + ci + ", self=" + ai + ", other=" + bi + ")")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  auto out = run(compile(*program), {c, a, b}, {want});
  ASSERT_EQ(out.size(), 1u);
  expect_bits(out[0], want);
}

// Rows holding NaN or +inf, or only -inf, are NaN rows, as in ATen; the others match it closely.
TEST(CpuTransformerOps, SoftmaxAlongTheLastDim) {
  at::Tensor x = at::randn({6, 40}) * 20;
  x[1][3] = kNan;
  x[2][5] = kInf;
  x[3].fill_(-kInf);
  x[4][0] = -kInf;
  const at::Tensor want = at::softmax(x, -1);
  Prog p;
  auto xi = p.input("x", x);
  p.outputs = {
      p.node("y", want, "aten::_softmax.default(self=" + xi + ", dim=-1, half_to_float=false)")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  auto out = run(compile(*program), {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::allclose(out[0], want, 1e-5, 1e-7, /*equal_nan=*/true)) << out[0] << "\n" << want;
}

// x * sigmoid(x) * up, as export writes a SwiGLU gate: one swish, no sigmoid step; NaN and the
// infinities where ATen has them (-inf * sigmoid(-inf) = -inf * 0 is NaN).
TEST(CpuTransformerOps, SiluAsExportWritesItIsOneSwish) {
  at::manual_seed(8);
  const at::Tensor x = at::cat({special_values().flatten(), at::randn({64}) * 30}).view({2, 64});
  const at::Tensor up = at::randn({2, 64});
  const at::Tensor s = at::sigmoid(x), g = x * s, want = g * up;
  Prog p;
  auto xi = p.input("x", x);
  auto ui = p.input("up", up);
  auto si = p.node("s", s, "aten::sigmoid.default(self=" + xi + ")");
  auto gi = p.node("g", g, "aten::mul.Tensor(self=" + xi + ", other=" + si + ")");
  p.outputs = {p.node("y", want, "aten::mul.Tensor(self=" + gi + ", other=" + ui + ")")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  EXPECT_EQ(count_ops(c.graph, OpKind::Eltwise, EltwiseAlg::Swish), 1);
  EXPECT_EQ(count_ops(c.graph, OpKind::Eltwise, EltwiseAlg::Logistic), 0);
  auto out = run(c, {x, up}, {want});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(at::isnan(out[0]), at::isnan(want)));
  const at::Tensor finite = at::isfinite(want);
  EXPECT_TRUE(at::equal(at::isfinite(out[0]), finite));
  const at::Tensor rel = ((out[0] - want).abs() / (want.abs() + 1e-30)).masked_fill(~finite, 0);
  // oneDNN's swish rounds its exp differently from ATen's: 1.8e-6 relative at most on its SSE4.1
  // kernel, under 1e-6 on AVX2 and AVX-512.
  EXPECT_LE(rel.max().item<double>(), 1e-5) << out[0] << "\n" << want;
}

// A sigmoid read by anything else stays a sigmoid (Ember's NaN-exact step).
TEST(CpuTransformerOps, SigmoidReadElsewhereStaysASigmoid) {
  const at::Tensor x = at::randn({4, 16});
  const at::Tensor s = at::sigmoid(x), want = x * s + s;
  Prog p;
  auto xi = p.input("x", x);
  auto si = p.node("s", s, "aten::sigmoid.default(self=" + xi + ")");
  auto gi = p.node("g", s, "aten::mul.Tensor(self=" + xi + ", other=" + si + ")");
  p.outputs = {p.node("y", want, "aten::add.Tensor(self=" + gi + ", other=" + si + ")")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  EXPECT_EQ(count_ops(c.graph, OpKind::Eltwise, EltwiseAlg::Logistic), 1);
  auto out = run(c, {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  expect_close(out[0], want, 1e-6, 1e-6);
}

// constant_pad_nd through both halves, bit for bit with ATen: pads on the last dims only (ATen's
// list names the last dim first), on every dim, of a convolution's result (a blocked layout read
// as a row-major one), with NaN and -0.0 in the input and as the value.
TEST(CpuTransformerOps, ConstantPadMatchesAten) {
  at::manual_seed(6);
  struct Case {
    std::vector<int64_t> dims, pad;
    std::string value;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5}, {1, 2}, "0.0"},
      {{2, 3, 5}, {0, 1, 2, 0, 1, 1}, "1.5"},
      {{1, 2, 4, 4}, {1, 1, 1, 1}, "-0.0"},
      {{3, 7}, {0, 0, 4, 0}, "-2.0"},
      {{2, 1, 2, 3, 2}, {1, 0, 0, 1, 2, 2}, "0.25"},
  };
  for (const Case& c : cases) {
    std::string pad = "[";
    for (size_t i = 0; i < c.pad.size(); ++i) pad += (i ? ", " : "") + std::to_string(c.pad[i]);
    pad += "]";
    SCOPED_TRACE("pad " + pad + ", value " + c.value);
    at::Tensor x = at::randn(c.dims);
    x.view(-1)[1] = NAN;
    x.view(-1)[2] = -0.f;
    const at::Tensor want = at::constant_pad_nd(x, c.pad, std::stod(c.value));
    Prog p;
    auto xi = p.input("x", x);
    p.outputs = {p.node(
        "y", want,
        "aten::constant_pad_nd.default(self=" + xi + ", pad=" + pad + ", value=" + c.value + ")")};
    auto program = parse_text(p.text());
    ASSERT_TRUE(program);
    Compiled compiled = compile(*program);
    EXPECT_EQ(count_ops(compiled.graph, OpKind::Pad), 1);
    DelegateSummary summary;
    auto out = run(compiled, {x}, {want}, {}, &summary);
    ASSERT_EQ(out.size(), 1u);
    expect_bits(out[0], want);
    EXPECT_EQ(summary.pad_steps, 1);
  }
  // Of a convolution's result, which oneDNN leaves in a channel-blocked layout.
  const at::Tensor x = at::randn({1, 3, 6, 6}), w = at::randn({16, 3, 3, 3});
  const at::Tensor conv = at::conv2d(x, w, {}, 1, 1);
  const at::Tensor want = at::constant_pad_nd(conv, {2, 1, 0, 3}, 0.5);
  Prog p;
  auto xi = p.input("x", x);
  auto ci = p.node("c", conv,
                   "aten::convolution.default(input=" + xi + ", weight=" + p.weight("w", w) +
                       ", bias=none, stride=[1, 1], padding=[1, 1], dilation=[1, 1], "
                       "transposed=false, output_padding=[0, 0], groups=1)");
  p.outputs = {p.node(
      "y", want, "aten::constant_pad_nd.default(self=" + ci + ", pad=[2, 1, 0, 3], value=0.5)")};
  check(p, want, 1e-4);
}

// A negative pad crops: the portable kernel's, with the reason.
TEST(CpuTransformerOps, CroppingPadStaysPortable) {
  auto program = parse_text(
      "graph(\n    %x: f32[4, 8]\n) {\n"
      "  %a: f32[4, 6] = aten::constant_pad_nd.default(self=%x, pad=[-1, -1], value=0.0)\n"
      "  %b: f32[4, 9] = aten::constant_pad_nd.default(self=%x, pad=[2, -1], value=0.0)\n"
      "  return (%a, %b)\n}\n");
  ASSERT_TRUE(program);
  for (const ir::Node* n : program->graph().nodes()) {
    partition::Support s = compiler_backend()->support().check(*n);
    EXPECT_FALSE(s.supported) << n->describe();
    EXPECT_NE(s.reason.find("negative pad"), std::string::npos) << s.reason;
  }
}

}  // namespace
}  // namespace ember::cpu
