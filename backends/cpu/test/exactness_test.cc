// The cpu backend's exactness rules against ATen: what it leaves portable, with the reason it
// gives (unsupported dtypes and attributes, empty tensors, K = 1 matmuls, dynamic sizes other than
// the batch, rank-1 layer norms), and its results where float arithmetic is at its limits (layer
// norms near float32's maximum, matmuls and convolutions whose partial sums overflow). The rest of
// the backend through its two halves is backend_test.cc; the shared helpers test_util.h.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_compiler.h"
#include "backends/cpu/test/test_util.h"
#include "compiler/ir/parser.h"

namespace ember::cpu {
namespace {

TEST(CpuBackend, UnsupportedStaysPortable) {  // C14
  const auto* backend = compiler_backend();
  auto program = parse_text(
      "graph(\n    %x: bf16[4, 4],\n    %y: f32[2, 3, 4, 5]\n) {\n"
      "  %a: bf16[4, 4] = aten::mm.default(self=%x, mat2=%x)\n"
      "  %b: f32[2, 3, 4, 5] = aten::avg_pool2d.default(self=%y, kernel_size=[1, 1], stride=[1, "
      "1], "
      "padding=[0, 0], ceil_mode=true, count_include_pad=true)\n"
      "  %c: f32[2, 3, 4, 5] = aten::add.Tensor(self=%y, other=%y, alpha=2)\n"
      "  return (%a, %b, %c)\n}\n");
  ASSERT_TRUE(program);
  for (const ir::Node* n : program->graph().nodes()) {
    partition::Support s = backend->support().check(*n);
    EXPECT_FALSE(s.supported) << n->describe();
    EXPECT_FALSE(s.reason.empty());
  }
}

// An empty tensor stays portable (a zero-size batched matmul crashed inside oneDNN with
// SIGFPE); the portable kernels give ATen's empty result.
TEST(CpuBackend, EmptyTensorsStayPortable) {
  auto program = parse_text(
      "graph(\n    %x: f32[6, 0, 4],\n    %y: f32[6, 4, 0]\n) {\n"
      "  %m: f32[6, 0, 0] = aten::bmm.default(self=%x, mat2=%y)\n"
      "  %r: f32[6, 0, 4] = aten::relu.default(self=%x)\n"
      "  return (%m, %r)\n}\n");
  ASSERT_TRUE(program);
  for (const ir::Node* n : program->graph().nodes()) {
    partition::Support s = compiler_backend()->support().check(*n);
    EXPECT_FALSE(s.supported) << n->describe();
    EXPECT_NE(s.reason.find("empty tensor"), std::string::npos) << s.reason;
  }
}

// A matmul over one element (K = 1) stays portable: oneDNN's sum of 0 * -x is +0.0, ATen's -0.0
// (fuzzer seed 106352: an atan2 after it gave pi for -pi). K = 2 is claimed.
TEST(CpuBackend, MatmulOverOneElementStaysPortable) {
  auto program = parse_text(
      "graph(\n    %x: f32[3, 1],\n    %y: f32[1, 4],\n    %z: f32[3, 2],\n    %w: f32[2, 4]\n"
      ") {\n"
      "  %m: f32[3, 4] = aten::mm.default(self=%x, mat2=%y)\n"
      "  %k: f32[3, 4] = aten::mm.default(self=%z, mat2=%w)\n"
      "  return (%m, %k)\n}\n");
  ASSERT_TRUE(program);
  std::vector<const ir::Node*> nodes;
  for (const ir::Node* n : program->graph().nodes()) nodes.push_back(n);
  ASSERT_EQ(nodes.size(), 2u);
  partition::Support one = compiler_backend()->support().check(*nodes[0]);
  EXPECT_FALSE(one.supported);
  EXPECT_NE(one.reason.find("K = 1"), std::string::npos) << one.reason;
  EXPECT_TRUE(compiler_backend()->support().check(*nodes[1]).supported);
}

// A float subtraction outside torchao's quantization pattern is the engine's Binary Sub (it was
// claimed only inside that pattern before).
TEST(CpuBackend, FloatSubtractionIsABinarySub) {
  auto program = parse_text(
      "graph(\n    %x: f32[3, 4],\n    %y: f32[3, 4]\n) {\n"
      "  %s: f32[3, 4] = aten::sub.Tensor(self=%x, other=%y, alpha=1)\n"
      "  return (%s)\n}\n");
  ASSERT_TRUE(program);
  const ir::Node* sub = *program->graph().nodes().begin();
  partition::Support s = compiler_backend()->support().check(*sub);
  EXPECT_TRUE(s.supported) << s.reason;
  const Compiled compiled = compile(*program);
  ASSERT_EQ(compiled.graph.ops.size(), 1u);
  EXPECT_EQ(compiled.graph.ops[0].kind, OpKind::Binary);
  EXPECT_EQ(compiled.graph.ops[0].binary().alg, BinaryAlg::Sub);
}

// A dynamic size other than the batch stays portable, with the reason.
TEST(CpuBackend, OtherDynamicSizesStayPortable) {
  auto program = parse_text(
      "sym n in [2, 16]\ngraph(\n    %x: f32[2, n<=16]\n) {\n"
      "  %s: f32[2, n<=16] = aten::_softmax.default(self=%x, dim=1, half_to_float=false)\n"
      "  return (%s)\n}\n");
  ASSERT_TRUE(program);
  for (const ir::Node* n : program->graph().nodes()) {
    partition::Support s = compiler_backend()->support().check(*n);
    EXPECT_FALSE(s.supported);
    EXPECT_NE(s.reason.find("the cpu backend takes a dynamic batch (dim 0) only"),
              std::string::npos)
        << s.reason;
  }
}

// oneDNN 2.6 refuses layer normalization of a rank-1 tensor at init (fuzzer seed 1041: the
// program compiled, then failed to load): it stays portable, with the reason. Rank 2 over a dim
// of size 1 is delegated and gives ATen's result (the bias: x - mean is 0).
TEST(CpuBackend, LayerNormOfRankOneStaysPortable) {
  auto program = parse_text(
      "graph(\n    %x: f32[1],\n    %w: f32[1],\n    %b: f32[1]\n) {\n"
      "  (%y: f32[1], %m: f32[1], %r: f32[1]) = aten::native_layer_norm.default(input=%x, "
      "normalized_shape=[1], weight=%w, bias=%b, eps=1e-05)\n"
      "  return (%y)\n}\n");
  ASSERT_TRUE(program);
  for (const ir::Node* n : program->graph().nodes()) {
    partition::Support s = compiler_backend()->support().check(*n);
    EXPECT_FALSE(s.supported) << n->describe();
    EXPECT_NE(s.reason.find("rank 1"), std::string::npos) << s.reason;
  }
  at::manual_seed(3);
  const at::Tensor x = at::randn({3, 1}), w = at::randn({1}), b = at::randn({1});
  const at::Tensor want = std::get<0>(at::native_layer_norm(x, {1}, w, b, 1e-5));
  Prog p;
  auto xi = p.input("x", x);
  p.body.push_back("(%y: " + type_of(want) +
                   ", %y_1: f32[3, 1], %y_2: f32[3, 1]) = "
                   "aten::native_layer_norm.default(input=" +
                   xi + ", normalized_shape=[1], weight=" + p.weight("w", w) +
                   ", bias=" + p.weight("b", b) + ", eps=1e-05)");
  p.outputs = {"%y"};
  check(p, want, 1e-5);
}

// Layer norm's statistics in double, as ATen's float64 kernel: oneDNN's float ones are
// off by 0.3% for the first row and inf for the second, where the exact result is finite.
TEST(CpuBackend, LayerNormExactNearFloatMax) {
  const at::Tensor x = at::stack({at::tensor({65503.48f, 65503.48f, 65500.66f, 0.f, 0.f, 0.f}),
                                  at::tensor({-3e38f, 3.58f, 1.24f, -3.84f, 1e30f, -1.49f})});
  const at::Tensor x3 = at::tensor({65503.48f, 65503.48f, 65500.66f}).reshape({1, 3});
  at::manual_seed(5);
  for (const at::Tensor& in : {x, x3}) {
    const int64_t n = in.size(1);
    const at::Tensor w = at::randn({n}), b = at::randn({n});
    for (bool affine : {true, false}) {
      SCOPED_TRACE(affine ? "with weight and bias" : "without");
      const at::Tensor want =
          std::get<0>(at::native_layer_norm(in.to(at::kDouble), {n},
                                            affine ? w.to(at::kDouble) : at::Tensor(),
                                            affine ? b.to(at::kDouble) : at::Tensor(), 1e-5))
              .to(at::kFloat);
      ASSERT_TRUE(at::isfinite(want).all().item<bool>());
      Prog p;
      auto xi = p.input("x", in);
      const std::string wi = affine ? p.weight("w", w) : "none";
      const std::string bi = affine ? p.weight("b", b) : "none";
      p.body.push_back("(%y: " + type_of(want) + ", %y_1: f32[" + std::to_string(in.size(0)) +
                       ", 1], %y_2: f32[" + std::to_string(in.size(0)) +
                       ", 1]) = aten::native_layer_norm.default(input=" + xi +
                       ", normalized_shape=[" + std::to_string(n) + "], weight=" + wi +
                       ", bias=" + bi + ", eps=1e-05)");
      p.outputs = {"%y"};
      check(p, want, 1e-6);
    }
  }
}

// Near float32's maximum the order of a dot product's float sum decides whether a partial sum
// overflows: the result is the exact sum rounded once, as ATen's in double gives, and
// inf or NaN only where that is. Every partial sum of the first rows is a multiple of 2^126, exact
// in float unless it overflows, so any order gives the exact value or a non-finite one (which is
// what oneDNN's and the packed kernel's orders give for some: left to right, H + H is inf); the
// last row holds an inf, and its sum of two -1.9e38 overflows before it meets +inf (NaN, where
// exact arithmetic gives inf).
TEST(CpuBackend, MatmulExactWhereFloatSumsOverflow) {
  const float inf = std::numeric_limits<float>::infinity(), h = 0x1p127f;
  const at::Tensor x =
      at::stack({at::tensor({h, h, -h, -h, h, -h}), at::tensor({-h, -h, h, h, -h, h}),
                 at::tensor({h, -h, h, -h, h, -h}),
                 at::tensor({0.f, 0.f, -2.183644e38f, -1.69965e38f, 1.f, inf})});
  // Weights of +-1 and 0.5: products exact in float too.
  const at::Tensor w = at::stack({at::tensor({1.f, 1.f, 1.f, 1.f, 1.f, 1.f}),
                                  at::tensor({1.f, 1.f, 0.5f, 0.5f, 1.f, 1.f}),
                                  at::tensor({-1.f, -1.f, -1.f, -1.f, -1.f, -1.f}),
                                  at::tensor({0.5f, 1.f, 1.f, 0.5f, 0.5f, 0.f}),
                                  at::tensor({1.f, 1.f, 0.5f, 0.5f, -1.f, 0.5f})});
  const at::Tensor b = at::tensor({0.f, 0.f, -h / 2, 0.f, h / 2});
  // The exact sums, rounded once (ATen in double, then float).
  const at::Tensor want =
      at::addmm(b.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble).t()).to(at::kFloat);
  ASSERT_TRUE(at::isfinite(want.slice(0, 0, 3)).all().item<bool>()) << want;
  for (bool one_row : {false, true}) {
    SCOPED_TRACE(one_row ? "one row (matrix-vector)" : "rows");
    const at::Tensor xs = one_row ? x.slice(0, 0, 1).contiguous() : x;
    const at::Tensor ws = one_row ? want.slice(0, 0, 1).contiguous() : want;
    Prog p;
    auto xi = p.input("x", xs);
    auto wi = p.weight("w", w);
    auto t = p.node("t", w.t().contiguous(), "aten::t.default(self=" + wi + ")");
    p.outputs = {p.node("mm", ws,
                        "aten::addmm.default(self=" + p.weight("b", b) + ", mat1=" + xi +
                            ", mat2=" + t + ", beta=1, alpha=1)")};
    auto program = parse_text(p.text());
    ASSERT_TRUE(program);
    Compiled c = compile(*program);
    for (bool own : {true, false}) {
      SCOPED_TRACE(own ? "own kernels" : "oneDNN only");
      std::vector<CompileSpec> specs;
      if (!own) specs.push_back(turned_off("ember_kernels"));
      auto out = run(c, {xs}, {ws}, specs);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(at::allclose(out[0], ws, 0, 0, /*equal_nan=*/true)) << out[0] << ws;
    }
  }
  // A batched matmul of activations, the same rows in each batch (reversed in the second).
  const at::Tensor a = at::stack({x, x.flip(1)});
  const at::Tensor m = at::stack({w.t(), w.t().flip(0)}).contiguous();
  const at::Tensor want3 = at::bmm(a.to(at::kDouble), m.to(at::kDouble)).to(at::kFloat);
  Prog q;
  auto ai = q.input("a", a);
  auto mi = q.input("m", m);
  q.outputs = {q.node("bmm", want3, "aten::bmm.default(self=" + ai + ", mat2=" + mi + ")")};
  auto program = parse_text(q.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  auto out = run(c, {a, m}, {want3});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::allclose(out[0], want3, 0, 0, /*equal_nan=*/true)) << out[0] << want3;
}

// The same for convolutions: inputs of +-2^127 and weights of +-1 and 0.5, so every partial sum is
// exact unless it overflows; 3x3 (Winograd's shape: its guard runs the direct convolution for
// such inputs), 2x2 with padding, grouped, and 1-D.
TEST(CpuBackend, ConvolutionExactWhereFloatSumsOverflow) {
  const float h = 0x1p127f;
  at::manual_seed(11);
  struct Case {
    std::vector<int64_t> in, w;
    int64_t pad, groups;
  };
  const std::vector<Case> cases = {{{1, 3, 5, 5}, {2, 3, 3, 3}, 1, 1},
                                   {{2, 4, 4, 3}, {2, 4, 2, 2}, 1, 1},
                                   {{1, 4, 4, 4}, {4, 2, 3, 3}, 1, 2},
                                   {{1, 3, 7}, {2, 3, 3}, 0, 1}};
  for (const Case& k : cases) {
    SCOPED_TRACE(ints(k.w));
    const at::Tensor x = (at::randint(0, 2, k.in) * 2 - 1).to(at::kFloat) * h;
    const at::Tensor w = at::randint(-2, 3, k.w).to(at::kFloat) * 0.5;  // -1 .. 1
    const at::Tensor b = at::tensor({0.f, h / 2, -h / 2, 0.f}).slice(0, 0, k.w[0]).contiguous();
    const int64_t r = static_cast<int64_t>(k.in.size()) - 2;
    const std::vector<int64_t> ones(r, 1), pad(r, k.pad), zeros(r, 0);
    const at::Tensor want = at::convolution(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble),
                                            ones, pad, ones, false, zeros, k.groups)
                                .to(at::kFloat);
    ASSERT_TRUE(at::isfinite(want).any().item<bool>());
    Prog p;
    auto xi = p.input("x", x);
    p.outputs = {p.node("y", want,
                        "aten::convolution.default(input=" + xi + ", weight=" + p.weight("w", w) +
                            ", bias=" + p.weight("b", b) + ", stride=" + ints(ones) +
                            ", padding=" + ints(pad) + ", dilation=" + ints(ones) +
                            ", transposed=false, output_padding=" + ints(zeros) +
                            ", groups=" + std::to_string(k.groups) + ")")};
    auto program = parse_text(p.text());
    ASSERT_TRUE(program);
    Compiled c = compile(*program);
    for (bool winograd : {true, false}) {
      SCOPED_TRACE(winograd ? "winograd on" : "winograd off");
      std::vector<CompileSpec> specs = {switched("fp32_winograd", winograd)};
      auto out = run(c, {x}, {want}, specs);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(at::allclose(out[0], want, 0, 0, /*equal_nan=*/true)) << out[0] << want;
    }
  }
}

}  // namespace
}  // namespace ember::cpu
