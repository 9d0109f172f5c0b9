// The differential fuzzer's findings against ATen: relu, relu6 and hardtanh (standalone and after a
// convolution, a matmul or a residual sum whose result is NaN inside), sigmoid of NaN, max pooling
// of windows holding NaN, softmax of rows holding +inf, NaN or only -inf, gelu's zero signs, and
// average pooling near float32's maximum. Every expectation is ATen's result.
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

// `got` has ATen's NaN where `want` has, and its other values (infinities equal).
void expect_same(const at::Tensor& got, const at::Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::isnan(got).equal(at::isnan(want))) << "got\n" << got << "\nATen\n" << want;
  EXPECT_TRUE(at::allclose(got, want, tol, tol, /*equal_nan=*/true)) << "got\n"
                                                                     << got << "\nATen\n"
                                                                     << want;
}

// Compiles `p` (every node claimed), runs it with Ember's kernels on and off (and the compile specs
// `extra`), and compares its one output with `want`; the steps it ran, the last time.
DelegateSummary check_exact(const Prog& p, const at::Tensor& want, double tol = 1e-5,
                            const std::vector<CompileSpec>& extra = {}) {
  auto program = parse_text(p.text());
  if (!program) return {};
  Compiled c = compile(*program);
  std::vector<at::Tensor> in;
  for (const auto& [n, t] : p.inputs) in.push_back(t);
  DelegateSummary summary;
  for (bool own : {true, false}) {
    SCOPED_TRACE(own ? "ember kernels on" : "ember kernels off");
    std::vector<CompileSpec> specs = extra;
    if (!own) specs.push_back(turned_off("ember_kernels"));
    auto out = run(c, in, {want}, specs, &summary);
    if (!out.empty()) expect_same(out[0], want, tol);
  }
  return summary;
}

at::Tensor edge_values() { return at::tensor({kNan, -1.f, .5f, kInf, -kInf, 2.f}).view({1, 6}); }

TEST(CpuBackendNan, ReluHardtanhRelu6KeepNan) {
  const at::Tensor x = edge_values();
  struct Case {
    std::string call;
    at::Tensor want;
  };
  for (const Case& c : {Case{"aten::relu.default(self=%x)", at::relu(x)},
                        Case{"aten::hardtanh.default(self=%x, min_val=-0.5, max_val=1.0)",
                             at::hardtanh(x, -0.5, 1.0)},
                        Case{"aten::hardtanh.default(self=%x, min_val=0.0, max_val=6.0)",
                             at::hardtanh(x, 0.0, 6.0)}}) {
    SCOPED_TRACE(c.call);
    ASSERT_TRUE(std::isnan(c.want[0][0].item<float>()));
    Prog p;
    p.input("x", x);
    p.outputs = {p.node("y", c.want, c.call)};
    EXPECT_GE(check_exact(p, c.want).exact_steps, 1);
  }
}

// NaN made inside a convolution (inf - inf), then relu fused after it; and a residual sum of two
// convolutions, then relu; and hardtanh with a lower bound above 0 on a blocked layout whose
// channels are padded (the padding stays zero).
TEST(CpuBackendNan, ConvolutionThenClampKeepsNanMadeInside) {
  at::Tensor x = at::randn({1, 2, 5, 5});
  x[0][0][1][1] = kInf;
  x[0][1][1][1] = kInf;
  x[0][0][3][2] = kNan;
  at::Tensor w = at::randn({20, 2, 1, 1});
  w.select(1, 0).fill_(1.f);
  w.select(1, 1).slice(0, 0, 10).fill_(-1.f);  // channels 0-9: inf - inf; 10-19: inf + inf
  w.select(1, 1).slice(0, 10, 20).fill_(2.f);
  const at::Tensor b = at::randn({20});
  const at::Tensor conv = conv2d(x, w, b, 1, 0);
  ASSERT_TRUE(at::isnan(conv).any().item<bool>());
  for (int act = 0; act < 3; ++act) {
    SCOPED_TRACE(act);
    at::Tensor want = act == 0   ? at::relu(conv)
                      : act == 1 ? at::hardtanh(conv, 0.5, 2.0)
                                 : at::relu(conv + conv2d(x, w, b, 1, 0) * 0.5);
    Prog p;
    auto xi = p.input("x", x);
    auto wi = p.weight("w", w), bi = p.weight("b", b);
    auto c1 = p.node("c1", conv, conv_call(xi, wi, bi, 1, 0));
    if (act == 0) {
      p.outputs = {p.node("y", want, "aten::relu.default(self=" + c1 + ")")};
    } else if (act == 1) {
      p.outputs = {
          p.node("y", want, "aten::hardtanh.default(self=" + c1 + ", min_val=0.5, max_val=2.0)")};
    } else {
      auto w2 = p.weight("w2", w * 0.5), b2 = p.weight("b2", b * 0.5);
      auto c2 = p.node("c2", conv, conv_call(xi, w2, b2, 1, 0));
      auto s = p.node("s", conv, "aten::add.Tensor(self=" + c1 + ", other=" + c2 + ")");
      p.outputs = {p.node("y", want, "aten::relu.default(self=" + s + ")")};
    }
    check_exact(p, want, 1e-4);
  }
}

// Sigmoid of NaN is NaN: after a grouped convolution (oneDNN runs it by GEMM, whose reference
// logistic post-op maps NaN to 0; found by the fuzzer), after a convolution whose output has 6
// channels in a layout blocked by 16 (a standalone sigmoid of it is oneDNN's reference form), after
// a matmul, and alone on edge values; and the kernel's accuracy over the whole float range.
TEST(CpuBackendNan, SigmoidKeepsNan) {
  {
    SCOPED_TRACE("grouped convolution");
    at::Tensor x = at::randn({1, 3, 9});
    x[0][1][4] = kNan;
    x[0][2][0] = kInf;
    x[0][0][3] = -kInf;
    const at::Tensor w = at::randn({6, 1, 1}), b = at::randn({6});
    const at::Tensor conv = at::convolution(x, w, b, {1}, {0}, {1}, false, {0}, 3);
    const at::Tensor want = at::sigmoid(conv);
    Prog p;
    auto xi = p.input("x", x);
    auto c = p.node("c", conv,
                    "aten::convolution.default(input=" + xi + ", weight=" + p.weight("w", w) +
                        ", bias=" + p.weight("b", b) +
                        ", stride=[1], padding=[0], dilation=[1], transposed=false, "
                        "output_padding=[0], groups=3)");
    p.outputs = {p.node("y", want, "aten::sigmoid.default(self=" + c + ")")};
    EXPECT_GE(check_exact(p, want).exact_steps, 1);
  }
  {
    SCOPED_TRACE("6 channels of a blocked layout, after average pooling");
    at::Tensor x = at::randn({1, 4, 8, 8});
    x[0][2][3][3] = kNan;
    const at::Tensor w = at::randn({6, 4, 3, 3}), b = at::randn({6});
    const at::Tensor conv = conv2d(x, w, b, 1, 1);
    const at::Tensor pool = at::avg_pool2d(conv, {2, 2}, {2, 2});
    const at::Tensor want = at::sigmoid(pool);
    ASSERT_TRUE(at::isnan(want).any().item<bool>());
    Prog p;
    auto xi = p.input("x", x);
    auto c = p.node("c", conv, conv_call(xi, p.weight("w", w), p.weight("b", b), 1, 1));
    auto pl = p.node("pl", pool,
                     "aten::avg_pool2d.default(self=" + c +
                         ", kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], ceil_mode=false, "
                         "count_include_pad=true)");
    p.outputs = {p.node("y", want, "aten::sigmoid.default(self=" + pl + ")")};
    EXPECT_GE(check_exact(p, want, 1e-4).exact_steps, 1);
  }
  {
    SCOPED_TRACE("matmul");
    at::Tensor a = at::randn({4, 8});
    a[1][0] = kNan;
    a[2][3] = kInf;
    const at::Tensor w = at::randn({8, 24});
    const at::Tensor want = at::sigmoid(at::mm(a, w));
    Prog p;
    auto ai = p.input("a", a);
    auto mm =
        p.node("mm", want, "aten::mm.default(self=" + ai + ", mat2=" + p.weight("w", w) + ")");
    p.outputs = {p.node("y", want, "aten::sigmoid.default(self=" + mm + ")")};
    check_exact(p, want, 1e-4);
  }
  {
    SCOPED_TRACE("edge values and the float range");
    // -120 to 120 in small steps (both tails: 0 and 1, and the denormal results below -87),
    // then the edge values.
    const at::Tensor x = at::cat({at::arange(-120.f, 120.f, 0.01f),
                                  at::tensor({kNan, kInf, -kInf, -0.f, 0.f, 88.72f, -88.72f})})
                             .view({1, -1});
    const at::Tensor want = at::sigmoid(x.to(at::kDouble)).to(at::kFloat);
    Prog p;
    p.input("x", x);
    p.outputs = {p.node("y", want, "aten::sigmoid.default(self=%x)")};
    // Within 1e-6, relative and absolute (the kernel is within a few units in the last place).
    EXPECT_GE(check_exact(p, want, 1e-6).exact_steps, 1);
  }
}

// ATen's gelu without oneDNN (its own formula, x / 2 * (1 + erf(x / sqrt 2))). ATen has two CPU
// paths for it: a contiguous float tensor of more than one element goes to oneDNN's gelu_erf
// (use_mkldnn), anything else (one element, a strided view, torch.backends.mkldnn off) to its own
// formula. They agree up to rounding but for the sign of zero: oneDNN's gives +0.0 for -0.0 and
// below about -5.5, where the formula gives -0.0 (x times a product that rounded to +0).
at::Tensor aten_gelu_formula(const at::Tensor& x) {
  const bool was = at::globalContext().userEnabledMkldnn();
  at::globalContext().setUserEnabledMkldnn(false);
  at::Tensor y = at::gelu(x);
  at::globalContext().setUserEnabledMkldnn(was);
  return y;
}

// gelu gives the zero signs of ATen's formula: -0.0 for -0.0 and below about -5.5 (Ember's
// kernel; the fuzzer found oneDNN's +0.0 against eager's -0.0 for a one-element tensor, and a
// later x / gelu(x) turned it into the other infinity). After a matmul (fused into oneDNN's
// before), after a convolution (a blocked layout), and alone over -12..12 against ATen's float64
// gelu.
TEST(CpuBackendNan, GeluKeepsZeroSigns) {
  const at::Tensor edges = at::tensor(
      {-0.f, 0.f, -5.6f, -6.f, -7.f, -30.f, -1e30f, kNan, kInf, -kInf, 1e-40f, -1e-40f, 3.f, -3.f});
  // Where ATen's formula gives zero, the sign of the zero must be the formula's too.
  auto check_signs = [](const at::Tensor& got, const at::Tensor& want) {
    const at::Tensor zero = want == 0;
    ASSERT_TRUE(zero.any().item<bool>());
    EXPECT_TRUE(at::signbit(got).masked_select(zero).equal(at::signbit(want).masked_select(zero)))
        << "got\n"
        << got << "\nATen\n"
        << want;
  };
  {
    SCOPED_TRACE("matmul");
    // Results of about N(0, 30): many below -5.5, where ATen's gelu is -0.0.
    at::Tensor a = at::randn({4, 8});
    a[1][0] = kNan;
    const at::Tensor w = at::randn({8, 14}) * 10;
    const at::Tensor mm = at::mm(a, w);
    const at::Tensor want = at::gelu(mm);
    Prog p;
    auto ai = p.input("a", a);
    auto m = p.node("mm", mm, "aten::mm.default(self=" + ai + ", mat2=" + p.weight("w", w) + ")");
    p.outputs = {p.node("y", want, "aten::gelu.default(self=" + m + ")")};
    auto program = parse_text(p.text());
    ASSERT_TRUE(program);
    DelegateSummary summary;
    auto out = run(compile(*program), {a}, {want}, {}, &summary);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_GE(summary.exact_steps, 1);
    expect_same(out[0], want, 1e-5);
    check_signs(out[0], aten_gelu_formula(mm));
  }
  {
    SCOPED_TRACE("convolution, 6 channels blocked by 16");
    at::Tensor x = at::randn({1, 4, 6, 6}) * 4;
    x[0][1][2][2] = -0.f;
    const at::Tensor w = at::randn({6, 4, 1, 1}), b = at::randn({6});
    const at::Tensor conv = conv2d(x, w, b, 1, 0);
    const at::Tensor want = at::gelu(conv);
    Prog p;
    auto xi = p.input("x", x);
    auto c = p.node("c", conv, conv_call(xi, p.weight("w", w), p.weight("b", b), 1, 0));
    p.outputs = {p.node("y", want, "aten::gelu.default(self=" + c + ")")};
    check_exact(p, want, 1e-4);
  }
  {
    SCOPED_TRACE("alone, edge values and -12..12");
    const at::Tensor x = at::cat({at::arange(-12.f, 12.f, 0.001f), edges}).view({1, -1});
    const at::Tensor want = at::gelu(x.to(at::kDouble)).to(at::kFloat);
    Prog p;
    p.input("x", x);
    p.outputs = {p.node("y", want, "aten::gelu.default(self=%x)")};
    auto program = parse_text(p.text());
    ASSERT_TRUE(program);
    DelegateSummary summary;
    auto out = run(compile(*program), {x}, {want}, {}, &summary);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_GE(summary.exact_steps, 1);
    // Within 1e-6, relative and absolute (the kernel is within a few units in the last place).
    expect_same(out[0], want, 1e-6);
    check_signs(out[0], aten_gelu_formula(x));
  }
}

// Average pooling near float32's maximum: oneDNN's float sum of a window holding -3e38, -3e38 and
// 3e38 overflows to -inf, where ATen's mean (adaptive_avg_pool2d to 1x1; found by the fuzzer) is
// -1.25e37; the redo step sums such elements again in double. With and without padding counted;
// windows holding inf or NaN stay inf and NaN. Expectations: ATen in float64.
TEST(CpuBackendNan, AvgPoolSumsExactNearFloatMax) {
  at::Tensor x = at::randn({1, 2, 3, 8});
  x[0][0][0][7] = -3e38f;
  x[0][0][1][5] = -3e38f;
  x[0][0][2][4] = 3e38f;
  x[0][1][0][0] = kInf;
  x[0][1][2][7] = kNan;
  for (bool include_pad : {true, false}) {
    SCOPED_TRACE(include_pad ? "count_include_pad" : "padding not counted");
    // The whole 3x8 map (as adaptive_avg_pool2d to 1x1), and 3x3 windows with padding 1.
    for (int64_t kw : {8, 3}) {
      SCOPED_TRACE(kw);
      const int64_t pad = kw == 3 ? 1 : 0;
      const at::Tensor want =
          at::avg_pool2d(x.to(at::kDouble), {3, kw}, {1, 1}, {pad, pad}, false, include_pad)
              .to(at::kFloat);
      ASSERT_TRUE(at::isnan(want).any().item<bool>());
      Prog p;
      auto xi = p.input("x", x);
      const std::string ks = std::to_string(kw), ps = std::to_string(pad);
      p.outputs = {p.node(
          "y", want,
          "aten::avg_pool2d.default(self=" + xi + ", kernel_size=[3, " + ks +
              "], stride=[1, 1], padding=[" + ps + ", " + ps +
              "], ceil_mode=false, count_include_pad=" + (include_pad ? "true" : "false") + ")")};
      EXPECT_GE(check_exact(p, want, 1e-5).exact_steps, 1);
    }
  }
}

TEST(CpuBackend, EluOnlyWhereExact) {  // C30
  const auto* backend = compiler_backend();
  auto program = parse_text(
      "graph(\n    %x: f32[4]\n) {\n"
      "  %a: f32[4] = aten::elu.default(self=%x)\n"
      "  %b: f32[4] = aten::elu.default(self=%x, alpha=0.5)\n"
      "  %c: f32[4] = aten::elu.default(self=%x, alpha=1.0, scale=1.0507, input_scale=1)\n"
      "  %d: f32[4] = aten::elu.default(self=%x, alpha=1, scale=1, input_scale=0.5)\n"
      "  %e: f32[4] = aten::selu.default(self=%x)\n"
      "  %f: f32[4] = aten::celu.default(self=%x, alpha=2.0)\n"
      "  return (%a, %b, %c, %d, %e, %f)\n}\n");
  ASSERT_TRUE(program);
  std::vector<partition::Support> s;
  for (const ir::Node* n : program->graph().nodes()) s.push_back(backend->support().check(*n));
  ASSERT_EQ(s.size(), 6u);
  EXPECT_TRUE(s[0].supported) << s[0].reason;
  EXPECT_TRUE(s[1].supported) << s[1].reason;
  EXPECT_FALSE(s[2].supported);
  EXPECT_NE(s[2].reason.find("scale"), std::string::npos) << s[2].reason;
  EXPECT_FALSE(s[3].supported);
  EXPECT_NE(s[3].reason.find("input_scale"), std::string::npos) << s[3].reason;
  EXPECT_FALSE(s[4].supported);
  EXPECT_FALSE(s[5].supported);

  // Delegated ELU (alpha 0.5) matches eager, subnormal results included (Ember's own step:
  // oneDNN's flushes them), and keeps -0.0: ATen's elu is x * expm1-based and gives -0.0 for
  // -0.0 (torch 2.15, every size; a later rsqrt tells -inf from +inf: fuzz seed 410289).
  at::Tensor x = at::tensor({-3.f, -1e-40f, -0.5f, 0.f, 2.f, -1e-3f, -0.f, -200.f, -1e-6f});
  at::Tensor want = at::elu(x, 0.5);
  Prog p;
  auto xi = p.input("x", x);
  p.outputs = {p.node("y", want, "aten::elu.default(self=" + xi + ", alpha=0.5)")};
  auto prog = parse_text(p.text());
  Compiled c = compile(*prog);
  DelegateSummary summary;
  auto out = run(c, {x}, {want}, {}, &summary);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(summary.exact_steps, 1);
  // Against ATen in float64 (libtorch 1.13's float elu of a short tensor is exp(x) - 1, off by
  // up to half a unit of 1 near 0).
  expect_close(out[0], at::elu(x.to(at::kDouble), 0.5).to(at::kFloat), 1e-6, 1e-12);
  EXPECT_TRUE(std::signbit(out[0][6].item<float>()));
  EXPECT_FALSE(std::signbit(out[0][3].item<float>()));
  // And over -110..5 (both of the kernel's ranges, and exp's underflow).
  at::Tensor r = at::arange(-110.f, 5.f, 0.003f);
  Prog q;
  auto ri = q.input("r", r);
  q.outputs = {q.node("y", at::elu(r, 0.5), "aten::elu.default(self=" + ri + ", alpha=0.5)")};
  auto out2 = run(compile(*parse_text(q.text())), {r}, {r});
  ASSERT_EQ(out2.size(), 1u);
  expect_close(out2[0], at::elu(r.to(at::kDouble), 0.5).to(at::kFloat), 1e-6, 1e-12);
}

// A matmul whose result is NaN (inf - inf), then relu: one row (Ember's matrix-vector kernel on
// AVX-512) and four (oneDNN's matmul).
TEST(CpuBackendNan, MatmulThenReluKeepsNanMadeInside) {
  for (int64_t rows : {1, 4}) {
    SCOPED_TRACE(rows);
    at::Tensor a = at::randn({rows, 8});
    a.select(1, 0).fill_(kInf);
    a.select(1, 1).fill_(kInf);
    at::Tensor w = at::randn({8, 24});
    w[0].fill_(1.f);
    w[1].slice(0, 0, 12).fill_(-1.f);
    w[1].slice(0, 12, 24).fill_(-3.f);
    const at::Tensor want = at::relu(at::mm(a, w));
    ASSERT_TRUE(at::isnan(want).any().item<bool>());
    Prog p;
    auto ai = p.input("a", a);
    auto mm =
        p.node("mm", want, "aten::mm.default(self=" + ai + ", mat2=" + p.weight("w", w) + ")");
    p.outputs = {p.node("y", want, "aten::relu.default(self=" + mm + ")")};
    check_exact(p, want, 1e-4);
  }
}

std::string max_pool_node(Prog& p, const std::string& x, const at::Tensor& like,
                          const at::Tensor& idx, at::IntArrayRef k, at::IntArrayRef s,
                          at::IntArrayRef pad) {
  p.body.push_back("(%mp: " + type_of(like) + ", %idx: i64" + type_of(idx).substr(3) +
                   ") = aten::max_pool2d_with_indices.default(self=" + x +
                   ", kernel_size=" + ints(k) + ", stride=" + ints(s) + ", padding=" + ints(pad) +
                   ", dilation=[1, 1], ceil_mode=false)");
  return "%mp";
}

TEST(CpuBackendNan, MaxPoolingWindowsHoldingNan) {
  {
    // F.max_pool2d(x, 2): ATen gives [nan, nan, 2, 4].
    const at::Tensor x = at::tensor({kNan, 1.f, 2.f, 3.f, .5f, -1.f, 4.f, kNan, 1.f, 2.f, 3.f, 4.f,
                                     -5.f, -6.f, -7.f, -8.f})
                             .view({1, 1, 4, 4});
    auto [mp, idx] = at::max_pool2d_with_indices(x, {2, 2}, {2, 2});
    ASSERT_EQ(at::isnan(mp).sum().item<int64_t>(), 2);
    Prog p;
    p.outputs = {max_pool_node(p, p.input("x", x), mp, idx, {2, 2}, {2, 2}, {0, 0})};
    EXPECT_EQ(check_exact(p, mp).exact_steps, 1);
  }
  {
    // F.max_pool1d(x, 1) as the exported program has it: a 1x1 window over [N, C, 1, L].
    const at::Tensor x = at::tensor({kNan, -kInf, 3.f, kInf, -1.f, kNan}).view({1, 2, 1, 3});
    auto [mp, idx] = at::max_pool2d_with_indices(x, {1, 1}, {1, 1});
    Prog p;
    p.outputs = {max_pool_node(p, p.input("x", x), mp, idx, {1, 1}, {1, 1}, {0, 0})};
    check_exact(p, mp);
  }
  {
    // After a convolution (a channel-blocked layout, 20 channels: a full block and a padded
    // one), 3x3 windows with padding over NaN, +inf and -inf.
    at::Tensor x = at::randn({1, 3, 9, 9});
    x[0][0][2][2] = kNan;
    x[0][1][5][6] = kInf;
    x[0][2][7][0] = -kInf;
    const at::Tensor w = at::randn({20, 3, 1, 1}), b = at::randn({20});
    const at::Tensor conv = conv2d(x, w, b, 1, 0);
    auto [mp, idx] = at::max_pool2d_with_indices(conv, {3, 3}, {2, 2}, {1, 1});
    ASSERT_TRUE(at::isnan(mp).any().item<bool>());
    Prog p;
    auto c =
        p.node("c", conv, conv_call(p.input("x", x), p.weight("w", w), p.weight("b", b), 1, 0));
    p.outputs = {max_pool_node(p, c, mp, idx, {3, 3}, {2, 2}, {1, 1})};
    check_exact(p, mp, 1e-4);
  }
}

TEST(CpuBackendNan, SoftmaxRowsWithInfOrNan) {
  // Rows: +inf (ATen: all NaN), NaN, only -inf, -inf and finite values, finite values.
  const at::Tensor x = at::tensor({kInf,  1.f,   2.f,   .5f, kNan, 1.f,   2.f, 3.f, -kInf, -kInf,
                                   -kInf, -kInf, -kInf, 1.f, 2.f,  -kInf, 1.f, 2.f, 3.f,   4.f})
                           .view({5, 4});
  for (int64_t dim : {1, 0}) {
    SCOPED_TRACE(dim);
    const at::Tensor in = dim == 1 ? x : x.t().contiguous();
    const at::Tensor want = at::_softmax(in, dim, false);
    Prog p;
    auto xi = p.input("x", in);
    p.outputs = {p.node("y", want,
                        "aten::_softmax.default(self=" + xi + ", dim=" + std::to_string(dim) +
                            ", half_to_float=false)")};
    check_exact(p, want);
  }
  {
    // softmax([[inf, 1, 2, .5]], -1)
    const at::Tensor row = at::tensor({kInf, 1.f, 2.f, .5f}).view({1, 4});
    const at::Tensor want = at::_softmax(row, -1, false);
    ASSERT_TRUE(at::isnan(want).all().item<bool>());
    Prog p;
    auto xi = p.input("x", row);
    p.outputs = {
        p.node("y", want, "aten::_softmax.default(self=" + xi + ", dim=-1, half_to_float=false)")};
    check_exact(p, want);
  }
}

// oneDNN's Winograd convolution (3x3, stride 1; opt-in, fp32_winograd=on) turned one -inf among
// zeros into NaN and spread a NaN over a tile (fuzzer seeds 1107 and 3000435); the delegate runs it
// only on inputs and
// weights within the bounds where it is exact (kWinogradMaxInput), the direct convolution
// otherwise. Also a finite input above the bound, and a weight above kWinogradMaxWeight.
TEST(CpuBackendNan, WinogradConvolutionKeepsInfAndNanInTheirWindows) {
  at::manual_seed(11);
  const CompileSpec winograd = switched("fp32_winograd", true);  // off by default
  const at::Tensor w = at::randn({8, 8, 3, 3});
  const at::Tensor b = at::randn({8});
  at::Tensor x = at::randn({2, 8, 12, 12});
  x[0][1][2][3] = -kInf;
  x[0][5][9][8] = kNan;
  x[1][0][6][6] = kInf;
  at::Tensor big = at::randn({2, 8, 12, 12});
  big[1][2][4][4] = 1e16f;  // finite, above the bound: direct
  at::Tensor big_w = w.clone();
  big_w[0][0][1][1] = 1e10f;  // above the weight bound: direct at every call
  struct Case {
    const char* what;
    at::Tensor x, w;
  };
  for (const Case& c : {Case{"inf and nan", x, w}, Case{"large input", big, w},
                        Case{"large weight", x, big_w}, Case{"finite", big.clamp(-4, 4), w}}) {
    SCOPED_TRACE(c.what);
    const at::Tensor want = conv2d(c.x, c.w, b, 1, 1);
    Prog p;
    auto xi = p.input("x", c.x);
    p.outputs = {p.node("y", want, conv_call(xi, p.weight("w", c.w), p.weight("b", b), 1, 1))};
    check_exact(p, want, 1e-4, {winograd});
  }
  // The fuzzer's repros as they were: a 5x4x3x3 window over one -inf, and padding 1 around a
  // NaN in a 3x5x1x4 input.
  at::Tensor x1 = at::zeros({1, 4, 3, 3});
  x1.view({-1})[5] = 1.5177238f;
  x1.view({-1})[6] = 0.6832442f;
  x1.view({-1})[7] = -kInf;
  x1.view({-1})[8] = -1.3810809f;
  const at::Tensor w1 = at::randn({5, 4, 3, 3}) * 0.5, b1 = at::randn({5}) * 0.5;
  const at::Tensor want1 = conv2d(x1, w1, b1, 1, 0);
  ASSERT_TRUE(at::isinf(want1).all().item<bool>());
  Prog p1;
  auto x1i = p1.input("x", x1);
  p1.outputs = {p1.node("y", want1, conv_call(x1i, p1.weight("w", w1), p1.weight("b", b1), 1, 0))};
  check_exact(p1, want1, 1e-5, {winograd});
  at::Tensor x2 = at::zeros({3, 5, 1, 4});
  x2.view({-1})[15] = kNan;
  const at::Tensor w2 = at::randn({2, 5, 3, 3}) * 0.5;
  const at::Tensor want2 = conv2d(x2, w2, at::Tensor(), 1, 1);
  ASSERT_FALSE(at::isnan(want2).all().item<bool>());
  Prog p2;
  auto x2i = p2.input("x", x2);
  p2.outputs = {p2.node("y", want2, conv_call(x2i, p2.weight("w", w2), "none", 1, 1))};
  check_exact(p2, want2, 1e-5, {winograd});
}

// A 3x3 convolution of an input holding one large value (272549.25 among values near 1) matches
// ATen at every output: by default the direct convolution. oneDNN's Winograd F(4x4, 3x3), whose
// rounding error is relative to the largest input of each tile rather than of each window, was
// 2% off at outputs whose windows do not hold the large value (fuzzer seed 422759,
// tests/fuzz_models/regressions/cpu_wrong_conv2d.py): that is why it is opt-in.
TEST(CpuBackend, ConvolutionByDefaultIsExactBesideALargeInput) {
  at::manual_seed(12);
  at::Tensor x = at::rand({3, 4, 3, 6}) * 2;
  x[1][1][0][1] = 272549.25f;
  const at::Tensor w = at::randn({5, 4, 3, 3}) * 0.5, b = at::randn({5}) * 0.5;
  const at::Tensor want = conv2d(x, w, b, 1, 0);
  Prog p;
  auto xi = p.input("x", x);
  p.outputs = {p.node("y", want, conv_call(xi, p.weight("w", w), p.weight("b", b), 1, 0))};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  auto out = run(c, {x}, {want}, {});
  ASSERT_EQ(out.size(), 1u);
  // Each output within ATen's own rounding of its window: the sum of |x| |w| over it.
  const at::Tensor scale =
      at::convolution(x.abs(), w.abs(), b.abs(), {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1);
  EXPECT_TRUE(((out[0] - want).abs() <= scale * 1e-6 + 1e-6).all().item<bool>())
      << (out[0] - want).abs().max();
}

}  // namespace
}  // namespace ember::cpu
