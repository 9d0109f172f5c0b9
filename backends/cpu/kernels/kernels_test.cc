// The cpu backend's own kernels (packed GEMM, depthwise, inverted residual, matrix-vector), alone
// and through the backend, against ATen.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels/depthwise.h"
#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/inverted_residual.h"
#include "backends/cpu/kernels/pad.h"
#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/resize.h"
#include "backends/cpu/test/test_util.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu {
namespace {

// --- Ember's own kernels (ember_kernels=on): against ATen, directly and through the backend ----

// Runs `comp` on `x` through the backend with Ember's own kernels on (the default) or off
// (the "ember_kernels" compile spec), checks its one output against ATen's `want`, and says
// what the delegate ran.
DelegateSummary run_checked(const Compiled& comp, const at::Tensor& x, const at::Tensor& want,
                            bool own_kernels) {
  std::vector<CompileSpec> specs;
  if (!own_kernels) specs.push_back(turned_off("ember_kernels"));
  DelegateSummary summary;
  auto out = run(comp, {x}, {want}, specs, &summary);
  EXPECT_EQ(out.size(), 1u);
  if (!out.empty()) expect_close(out[0], want, 1e-4, 1e-4);
  return summary;
}

// c = clamp(a b + bias (+ r)) for tails of every size: rows past a tile, columns past a vector
// and past a panel; and the panel ranges the matrix-vector step splits between threads.
TEST(OwnKernels, PackedGemmMatchesAten) {
  if (!own_kernels_supported())
    GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU (or EMBER_CPU_ISA=generic)";
  at::manual_seed(20);
  for (int64_t m : {1, 5, 13, 37}) {
    for (int64_t k : {1, 7, 16, 33, 96}) {
      for (int64_t n : {1, 15, 16, 24, 63, 64, 100, 200}) {
        SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k) + " n " +
                     std::to_string(n));
        at::Tensor a = at::randn({m, k}), w = at::randn({n, k}), b = at::randn({n});
        at::Tensor r = at::randn({m, n});
        const bool with_bias = (m + n) % 2 == 0, with_r = (k + n) % 2 == 0;
        PackedMatrix packed = PackedMatrix::pack(w.data_ptr<float>(),
                                                 with_bias ? b.data_ptr<float>() : nullptr, k, n);
        at::Tensor want = at::matmul(a, w.t());
        if (with_bias) want = want + b;
        if (with_r) want = want + r;
        want = at::clamp(want, -1.0, 2.0);
        at::Tensor got = at::full({m, n}, NAN);
        gemm(m, packed, a.data_ptr<float>(), k, with_r ? r.data_ptr<float>() : nullptr, n,
             got.data_ptr<float>(), n, Clamp{-1.f, 2.f});
        expect_close(got, want, 1e-5, 1e-4);
        // The units in three ranges (tiles of rows of a panel, as threads split them) give the
        // same result.
        at::Tensor split = at::full({m, n}, NAN);
        const int64_t units = gemm_units(m, packed);
        for (int64_t t = 0; t < 3; ++t) {
          gemm(m, packed, a.data_ptr<float>(), k, with_r ? r.data_ptr<float>() : nullptr, n,
               split.data_ptr<float>(), n, Clamp{-1.f, 2.f}, units * t / 3, units * (t + 1) / 3);
        }
        EXPECT_TRUE(at::equal(split, got));
      }
    }
  }
}

struct BlockCase {
  int64_t batch, h, w, cin, ce, cout, stride;  // h, w, cin: the image's with a stem
  bool expand, residual;
  Clamp act;  // after the expansion (or stem) and the depthwise convolution
  int threads;
  int64_t stem_stride = 0;  // 1 or 2: a 3x3 stem in place of the expansion
};

// A block's random weights (PyTorch layouts), ATen's result for it, and the kernel's parameters.
struct Block {
  BlockCase c;
  at::Tensor ws, bs, we, be, wd, bd, wp, bp;

  explicit Block(const BlockCase& k)
      : c(k),
        ws(at::randn({k.ce, k.cin, 3, 3}) * 0.3),
        bs(at::randn({k.ce}) * 0.1),
        we(at::randn({k.ce, k.cin, 1, 1}) * 0.3),
        be(at::randn({k.ce}) * 0.1),
        wd(at::randn({k.ce, 1, 3, 3}) * 0.3),
        bd(at::randn({k.ce}) * 0.1),
        wp(at::randn({k.cout, k.ce, 1, 1}) * 0.1),
        bp(at::randn({k.cout}) * 0.1) {}

  // The block as ATen computes it, NCHW.
  at::Tensor reference(const at::Tensor& x) const {
    at::Tensor e = x;
    if (c.expand) e = at::clamp(at::conv2d(x, we, be), c.act.lo, c.act.hi);
    if (c.stem_stride > 0) {
      e = at::clamp(at::conv2d(x, ws, bs, {c.stem_stride, c.stem_stride}, {1, 1}), c.act.lo,
                    c.act.hi);
    }
    at::Tensor d = at::clamp(at::conv2d(e, wd, bd, {c.stride, c.stride}, {1, 1}, {1, 1}, c.ce),
                             c.act.lo, c.act.hi);
    at::Tensor y = at::conv2d(d, wp, bp);
    return c.residual ? y + x : y;
  }

  InvertedResidual::Params params() const {
    InvertedResidual::Params p;
    p.batch = c.batch;
    p.h = c.h;
    p.w = c.w;
    p.cin = c.cin;
    p.ce = c.ce;
    p.cout = c.cout;
    p.stride = c.stride;
    if (c.stem_stride > 0) {
      p.stem_w = ws.data_ptr<float>();
      p.stem_b = bs.data_ptr<float>();
      p.stem_stride = c.stem_stride;
      p.image_h = c.h;
      p.image_w = c.w;
      p.h = (c.h - 1) / c.stem_stride + 1;
      p.w = (c.w - 1) / c.stem_stride + 1;
      p.expand_act = c.act;
    }
    if (c.expand) {
      p.expand_w = we.data_ptr<float>();
      p.expand_b = be.data_ptr<float>();
      p.expand_act = c.act;
    }
    p.dw_w = wd.data_ptr<float>();
    p.dw_b = bd.data_ptr<float>();
    p.dw_act = c.act;
    p.project_w = wp.data_ptr<float>();
    p.project_b = bp.data_ptr<float>();
    return p;
  }
};

// The kernel's result for NCHW `x`, NCHW (it runs NHWC; a stem reads the NCHW image).
at::Tensor run_block(InvertedResidual& kernel, const BlockCase& c, const at::Tensor& x) {
  at::Tensor src = c.stem_stride > 0 ? x.contiguous() : x.permute({0, 2, 3, 1}).contiguous();
  at::Tensor got = at::full({c.batch, kernel.out_h(), kernel.out_w(), c.cout}, NAN);
  // Working memory as another step may leave it: NaN everywhere.
  AlignedFloats scratch(kernel.scratch_bytes() / sizeof(float), NAN);
  kernel.run(src.data_ptr<float>(), c.residual ? src.data_ptr<float>() : nullptr,
             got.data_ptr<float>(), scratch.data());
  return got.permute({0, 3, 1, 2});
}

// The kernel itself (any size: the backend's L2 rule does not apply here), NHWC, against ATen:
// strides 1 and 2, with and without expansion (channels a multiple of 16 read in place, or
// not), with a stem, residual, relu / relu6 / none, odd and tiny sizes, batches, 1-3 threads.
TEST(OwnKernels, InvertedResidualMatchesAten) {
  if (!own_kernels_supported())
    GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU (or EMBER_CPU_ISA=generic)";
  at::manual_seed(21);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<BlockCase> cases = {
      {1, 56, 56, 24, 144, 24, 1, true, true, {0, 6}, 1},
      {1, 56, 56, 24, 144, 24, 1, true, true, {0, 6}, 2},
      {1, 112, 112, 16, 96, 24, 2, true, false, {0, 6}, 2},
      {2, 13, 11, 5, 30, 5, 1, true, true, {0, inf}, 2},
      {3, 9, 10, 32, 32, 7, 2, false, false, {0, 6}, 2},       // in place
      {1, 9, 10, 20, 20, 7, 2, false, false, {-inf, inf}, 1},  // copied
      {2, 7, 7, 160, 960, 320, 1, true, false, {0, 6}, 3},
      {1, 1, 1, 16, 40, 16, 1, true, true, {0, 6}, 2},
      {3, 2, 3, 16, 40, 8, 2, true, false, {0, 6}, 2},
      {1, 30, 31, 24, 144, 24, 1, true, true, {-1, 1}, 2},
      {1, 17, 18, 32, 32, 16, 2, false, false, {0, 6}, 2},
      // A stem (3x3 of the image, stride 2 or 1) in place of the expansion: even and odd image
      // sizes (the right padding column read or not), 1-3 image channels, 1-3 threads.
      {1, 224, 224, 3, 32, 16, 1, false, false, {0, 6}, 2, 2},
      {2, 15, 17, 3, 32, 16, 2, false, false, {0, 6}, 3, 2},
      {1, 9, 8, 1, 20, 7, 1, false, false, {-inf, inf}, 1, 1},
      {3, 6, 5, 2, 48, 24, 2, false, false, {0, inf}, 2, 2},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const BlockCase& c = cases[i];
    const Block block(c);
    at::Tensor x = at::randn({c.batch, c.cin, c.h, c.w});
    at::Tensor want = block.reference(x);
    InvertedResidual kernel(block.params(), c.threads);
    ASSERT_EQ(kernel.out_h(), want.size(2));
    ASSERT_EQ(kernel.out_w(), want.size(3));
    at::Tensor got = run_block(kernel, c, x);
    expect_close(got, want, 1e-4, 1e-4);
    // A second run gives the same bits (nothing left over from the first).
    EXPECT_TRUE(at::equal(run_block(kernel, c, x), got));
  }
}

// NaN in the input comes out as NaN where PyTorch's does (oneDNN's clip would make it a number).
TEST(OwnKernels, InvertedResidualPropagatesNan) {
  if (!own_kernels_supported())
    GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU (or EMBER_CPU_ISA=generic)";
  at::manual_seed(22);
  // 16 output channels: one whole vector; 24: a vector and a half (its 256-bit path).
  for (int64_t ch : {16, 24}) {
    SCOPED_TRACE(std::to_string(ch) + " channels");
    const BlockCase c{1, 12, 12, ch, 32, ch, 1, true, true, {0, 6}, 2};
    const Block block(c);
    at::Tensor x = at::randn({1, ch, 12, 12});
    x.index_put_({0, 3, 5, 7}, NAN);
    at::Tensor want = block.reference(x);
    ASSERT_GT(at::isnan(want).sum().item<int64_t>(), 1);
    InvertedResidual kernel(block.params(), c.threads);
    at::Tensor got = run_block(kernel, c, x);
    EXPECT_TRUE(at::isnan(got).equal(at::isnan(want)));
    at::Tensor keep = at::logical_not(at::isnan(want));
    expect_close(got.masked_select(keep), want.masked_select(keep), 1e-4, 1e-4);
  }
}

// The depthwise kernel itself, NHWC, against ATen: strides 1 and 2, odd and tiny sizes (rows
// fewer than threads, a row split between threads), batches, relu6 / relu / none, 1-4 threads; a
// NaN stays NaN through the clamp, as in PyTorch.
TEST(OwnKernels, DepthwiseMatchesAten) {
  if (!own_kernels_supported())
    GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU (or EMBER_CPU_ISA=generic)";
  at::manual_seed(25);
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    int64_t batch, h, w, c, stride;
    Clamp act;
    int threads;
  };
  const std::vector<Case> cases = {
      {1, 14, 14, 384, 1, {0, 6}, 2}, {1, 7, 7, 960, 1, {0, 6}, 2},
      {1, 14, 14, 576, 2, {0, 6}, 2}, {2, 13, 11, 32, 2, {0, inf}, 3},
      {1, 1, 1, 16, 1, {0, 6}, 2},    {3, 5, 6, 48, 2, {-inf, inf}, 2},
      {1, 28, 28, 192, 1, {0, 6}, 1}, {1, 2, 3, 16, 1, {-1, 1}, 4},
      {2, 9, 17, 80, 1, {0, 6}, 3},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const Case& c = cases[i];
    at::Tensor x = at::randn({c.batch, c.c, c.h, c.w});
    if (i == 0) x.index_put_({0, 5, 3, 4}, NAN);
    at::Tensor w = at::randn({c.c, 1, 3, 3}) * 0.3, b = at::randn({c.c}) * 0.1;
    at::Tensor want = at::clamp(at::conv2d(x, w, b, {c.stride, c.stride}, {1, 1}, {1, 1}, c.c),
                                c.act.lo, c.act.hi);
    ASSERT_TRUE(Depthwise3x3::supports(c.c, c.stride));
    Depthwise3x3 kernel(c.batch, c.h, c.w, c.c, c.stride, w.data_ptr<float>(),
                        i % 2 == 0 ? b.data_ptr<float>() : nullptr, c.act, c.threads);
    if (i % 2 != 0) {
      want = at::clamp(at::conv2d(x, w, {}, {c.stride, c.stride}, {1, 1}, {1, 1}, c.c), c.act.lo,
                       c.act.hi);
    }
    ASSERT_EQ(kernel.out_h(), want.size(2));
    ASSERT_EQ(kernel.out_w(), want.size(3));
    at::Tensor src = x.permute({0, 2, 3, 1}).contiguous();
    auto run_once = [&] {
      at::Tensor got = at::full({c.batch, kernel.out_h(), kernel.out_w(), c.c}, NAN);
      kernel.run(src.data_ptr<float>(), got.data_ptr<float>());
      return got.permute({0, 3, 1, 2});
    };
    at::Tensor got = run_once();
    EXPECT_TRUE(at::isnan(got).equal(at::isnan(want)));
    at::Tensor keep = at::logical_not(at::isnan(want));
    expect_close(got.masked_select(keep), want.masked_select(keep), 1e-4, 1e-4);
    EXPECT_TRUE(at::equal(run_once().nan_to_num(), got.nan_to_num()));
  }
  EXPECT_FALSE(Depthwise3x3::supports(24, 1));  // not whole vectors: oneDNN's
  EXPECT_FALSE(Depthwise3x3::supports(32, 3));
}

std::string conv_groups_call(const std::string& x, const std::string& w, const std::string& b,
                             int stride, int pad, int64_t groups) {
  return "aten::convolution.default(input=" + x + ", weight=" + w + ", bias=" + b + ", stride=[" +
         std::to_string(stride) + ", " + std::to_string(stride) + "], padding=[" +
         std::to_string(pad) + ", " + std::to_string(pad) +
         "], dilation=[1, 1], transposed=false, output_padding=[0, 0], groups=" +
         std::to_string(groups) + ")";
}

// Through the backend: MobileNetV2 blocks (batch norm folded, relu6, residual) whose expanded
// tensor is 4.8 MB (past any core's L2) run as one fused step, and match ATen; with
// ember_kernels=off they run on oneDNN, and match ATen too. So does MobileNetV2's first block with
// its stem (the image's 3x3 stride-2 convolution) in place of the expansion.
TEST(OwnKernels, MobileNetBlocksFusedByTheBackend) {
  at::manual_seed(23);
  for (const char* variant : {"stride 1", "stride 2", "stem"}) {
    SCOPED_TRACE(variant);
    const bool stem = std::string(variant) == "stem";
    const int stride = std::string(variant) == "stride 2" ? 2 : 1;
    const int k1 = stem ? 3 : 1, s1 = stem ? 2 : 1;  // the first convolution
    const int64_t cin = stem ? 3 : 24, ce = stem ? 32 : 96,
                  cout = stem          ? 16
                         : stride == 1 ? 24
                                       : 32;
    // The stem's expanded tensor at 448x448 (6.4 MB) outgrows every L2 we know, as the other
    // blocks' (4.8 MB) do; at MobileNet's 224x224 it is 1.6 MB, fused only below a 2 MB L2.
    const int64_t hw = stem ? 448 : 112;
    at::Tensor x = at::randn({1, cin, hw, hw});
    at::Tensor w1 = at::randn({ce, cin, k1, k1}) * 0.2, w2 = at::randn({ce, 1, 3, 3}) * 0.3;
    at::Tensor w3 = at::randn({cout, ce, 1, 1}) * 0.1;
    Bn bn1(ce), bn2(ce), bn3(cout);
    at::Tensor c1 = conv2d(x, w1, at::Tensor(), s1, k1 / 2);
    at::Tensor r1 = at::hardtanh(bn1.apply(c1), 0, 6);
    at::Tensor c2 =
        at::convolution(r1, w2, at::Tensor(), {stride, stride}, {1, 1}, {1, 1}, false, {0, 0}, ce);
    at::Tensor r2 = at::hardtanh(bn2.apply(c2), 0, 6);
    at::Tensor c3 = conv2d(r2, w3, at::Tensor(), 1, 0);
    at::Tensor b3 = bn3.apply(c3);
    const bool residual = !stem && stride == 1;
    at::Tensor want = residual ? b3 + x : b3;
    Prog p;
    auto xi = p.input("x", x);
    auto c1i = p.node("c1", c1, conv_call(xi, p.weight("w1", w1), "none", s1, k1 / 2));
    auto bn1i = bn1.call(p, "bn1", c1i, c1);
    auto r1i =
        p.node("r1", r1, "aten::hardtanh.default(self=" + bn1i + ", min_val=0.0, max_val=6.0)");
    auto c2i = p.node("c2", c2, conv_groups_call(r1i, p.weight("w2", w2), "none", stride, 1, ce));
    auto bn2i = bn2.call(p, "bn2", c2i, c2);
    auto r2i =
        p.node("r2", r2, "aten::hardtanh.default(self=" + bn2i + ", min_val=0.0, max_val=6.0)");
    auto c3i = p.node("c3", c3, conv_call(r2i, p.weight("w3", w3), "none", 1, 0));
    auto b3i = bn3.call(p, "bn3", c3i, c3);
    p.outputs = {
        residual ? p.node("y", want, "aten::add.Tensor(self=" + b3i + ", other=" + xi + ")") : b3i};
    auto prog = parse_text(p.text());
    ASSERT_NE(prog, nullptr);
    Compiled comp = compile(*prog);
    ASSERT_EQ(comp.graph.ops.size(), 3u);
    for (bool own : {true, false}) {
      SCOPED_TRACE(own ? "ember_kernels on" : "ember_kernels off");
      const DelegateSummary summary = run_checked(comp, x, want, own);
      const int64_t expanded_bytes = ce * (hw / s1) * (hw / s1) * 4;
      EXPECT_EQ(summary.inverted_residual_blocks,
                own && own_conv_kernels_chosen() && expanded_bytes >= l2_cache_bytes() ? 1 : 0);
    }
  }
}

// Through the backend: MobileNetV2's later depthwise convolutions (batch norm folded, relu6;
// 14x14 at stride 1 and 2) run as Ember's depthwise step and the 1x1 after them as Ember's
// pointwise step, and match ATen, with no reorder added; with 24 channels (not whole vectors)
// or with a gelu after it, the depthwise convolution stays on oneDNN; with ember_kernels=off,
// everything does.
TEST(OwnKernels, DepthwiseAndPointwiseThroughTheBackend) {
  at::manual_seed(26);
  for (const char* variant : {"stride 1", "stride 2", "residual", "24 channels", "gelu", "off"}) {
    SCOPED_TRACE(variant);
    const std::string v = variant;
    const int stride = v == "stride 2" ? 2 : 1;
    const int64_t c = v == "24 channels" ? 24 : 96;
    at::Tensor x = at::randn({1, 16, 14, 14});
    at::Tensor w1 = at::randn({c, 16, 1, 1}) * 0.3, w2 = at::randn({c, 1, 3, 3}) * 0.3;
    at::Tensor w3 = at::randn({16, c, 1, 1}) * 0.1;
    Bn bn(c);
    at::Tensor c1 = conv2d(x, w1, at::Tensor(), 1, 0);
    at::Tensor c2 =
        at::convolution(c1, w2, at::Tensor(), {stride, stride}, {1, 1}, {1, 1}, false, {0, 0}, c);
    at::Tensor b2 = bn.apply(c2);
    at::Tensor r2 = v == "gelu" ? at::gelu(b2) : at::hardtanh(b2, 0, 6);
    at::Tensor c3 = conv2d(r2, w3, at::Tensor(), 1, 0);
    at::Tensor want = v == "residual" ? c3 + x : c3;
    Prog p;
    auto xi = p.input("x", x);
    auto c1i = p.node("c1", c1, conv_call(xi, p.weight("w1", w1), "none", 1, 0));
    auto c2i = p.node("c2", c2, conv_groups_call(c1i, p.weight("w2", w2), "none", stride, 1, c));
    auto bni = bn.call(p, "bn", c2i, c2);
    auto r2i =
        p.node("r2", r2,
               v == "gelu" ? "aten::gelu.default(self=" + bni + ")"
                           : "aten::hardtanh.default(self=" + bni + ", min_val=0.0, max_val=6.0)");
    auto c3i = p.node("c3", c3, conv_call(r2i, p.weight("w3", w3), "none", 1, 0));
    p.outputs = {v == "residual"
                     ? p.node("y", want, "aten::add.Tensor(self=" + c3i + ", other=" + xi + ")")
                     : c3i};
    auto prog = parse_text(p.text());
    ASSERT_NE(prog, nullptr);
    Compiled comp = compile(*prog);
    ASSERT_EQ(comp.graph.ops.size(), 3u);
    const DelegateSummary summary = run_checked(comp, x, want, v != "off");
    // Ember's depthwise step where it applies; the last 1x1 (of a channels-last tensor) as
    // Ember's pointwise step whenever own kernels are on; oneDNN's steps: the first 1x1 (of the
    // caller's NCHW image), the image's reorder to channels-last and the result's back, and the
    // depthwise convolution where it is oneDNN's. No reorder between the steps.
    const bool kernels = v != "off" && own_conv_kernels_chosen();
    const bool own_dw = kernels && (v == "stride 1" || v == "stride 2" || v == "residual");
    // With the gelu, the depthwise convolution is oneDNN's and the gelu Ember's own step on its
    // channels-last result, which the pointwise step reads: that 1x1 is Ember's too.
    const bool own_pw = kernels;
    EXPECT_EQ(summary.depthwise_steps, own_dw ? 1 : 0);
    EXPECT_EQ(summary.pointwise_steps, own_pw ? 1 : 0);
    if (v != "residual") {  // (the summand's reorder to channels-last is one more)
      EXPECT_EQ(summary.onednn_steps, 3 + (own_dw ? 0 : 1) + (own_pw ? 0 : 1));
    }
  }
}

// Through the backend: a one-row linear layer (a classifier, a decode step) runs as Ember's
// matrix-vector step, with its bias, a residual sum, a clamp, or an element-wise op after it
// (silu: a oneDNN step on its output); a 4-row one too where own_linear_kernels_chosen() (AVX2),
// else on oneDNN's matmul.
TEST(OwnKernels, MatrixVectorProducts) {
  at::manual_seed(24);
  const int64_t k = 300, n = 1000;
  at::Tensor w = at::randn({n, k}) * 0.1, b = at::randn({n});
  for (const char* post : {"none", "relu", "silu", "sum"}) {
    SCOPED_TRACE(post);
    for (int64_t rows : {1, 4}) {
      at::Tensor x = at::randn({rows, k}), res = at::randn({rows, n});
      at::Tensor lin = at::addmm(b, x, w.t());
      at::Tensor want = std::string(post) == "relu"   ? at::relu(lin)
                        : std::string(post) == "silu" ? at::silu(lin)
                        : std::string(post) == "sum"  ? lin + res
                                                      : lin;
      Prog p;
      auto xi = p.input("x", x);
      auto t = p.node("t", w.t().contiguous(), "aten::t.default(self=" + p.weight("w", w) + ")");
      auto mm = p.node("mm", lin,
                       "aten::addmm.default(self=" + p.weight("b", b) + ", mat1=" + xi +
                           ", mat2=" + t + ", beta=1, alpha=1)");
      if (std::string(post) == "sum") {
        auto ri = p.input("r", res);
        p.outputs = {p.node("y", want, "aten::add.Tensor(self=" + mm + ", other=" + ri + ")")};
      } else if (std::string(post) != "none") {
        p.outputs = {p.node("y", want, std::string("aten::") + post + ".default(self=" + mm + ")")};
      } else {
        p.outputs = {mm};
      }
      auto prog = parse_text(p.text());
      ASSERT_NE(prog, nullptr);
      Compiled comp = compile(*prog);
      ASSERT_EQ(comp.graph.ops.size(), 1u);
      const std::vector<at::Tensor> in =
          std::string(post) == "sum" ? std::vector<at::Tensor>{x, res} : std::vector<at::Tensor>{x};
      static const std::string one = "1", two = "2";
      for (const std::string* threads : {&one, &two}) {
        SCOPED_TRACE("threads " + *threads);
        std::vector<CompileSpec> specs = {
            {"num_threads", {reinterpret_cast<const uint8_t*>(threads->data()), threads->size()}}};
        DelegateSummary summary;
        auto out = run(comp, in, {want}, specs, &summary);
        ASSERT_EQ(out.size(), 1u);
        expect_close(out[0], want, 1e-4, 1e-4);
        // One row: Ember's packed GEMM wherever own kernels run; four: where it is chosen over
        // oneDNN's sgemm (AVX2).
        EXPECT_EQ(summary.matvec_steps,
                  (rows == 1 ? own_kernels_supported() : own_linear_kernels_chosen()) ? 1 : 0);
      }
    }
  }
}

// constant_pad against ATen's constant_pad_nd, bit for bit: ranks 1 to 6, pads on every dim,
// zero pads, NaN and -0.0 in the input and as the value, one and two threads.
TEST(OwnKernels, ConstantPadMatchesAten) {
  struct Case {
    std::vector<int64_t> dims, before, after;
    float value;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Case> cases = {
      {{5}, {2}, {3}, 1.5f},
      {{3, 4}, {0, 1}, {2, 0}, 0.f},
      {{2, 3, 4, 5}, {0, 0, 1, 1}, {0, 0, 1, 1}, -0.f},
      {{1, 2, 3, 3}, {1, 2, 0, 3}, {2, 0, 4, 1}, nan},
      {{2, 1, 2, 1, 3}, {1, 0, 1, 0, 1}, {0, 1, 0, 1, 0}, -7.f},
      {{1, 2, 1, 2, 1, 2}, {0, 1, 0, 1, 0, 1}, {1, 0, 1, 0, 1, 0}, 2.f},
      {{4, 4}, {0, 0}, {0, 0}, 3.f},
  };
  for (const Case& c : cases) {
    at::Tensor x = at::randn(c.dims);
    x.view(-1)[0] = nan;
    x.view(-1)[x.numel() - 1] = -0.f;
    // ATen's pad list runs from the last dim to the first: (before, after) of each.
    std::vector<int64_t> pad;
    for (size_t d = c.dims.size(); d-- > 0;) {
      pad.push_back(c.before[d]);
      pad.push_back(c.after[d]);
    }
    const at::Tensor want = at::constant_pad_nd(x, pad, c.value);
    for (int threads : {1, 2}) {
      at::Tensor got = at::empty(want.sizes());
      constant_pad(x.data_ptr<float>(), c.dims, c.before, c.after, c.value, got.data_ptr<float>(),
                   threads);
      EXPECT_EQ(std::memcmp(got.data_ptr<float>(), want.data_ptr<float>(),
                            sizeof(float) * static_cast<size_t>(want.numel())),
                0)
          << "dims " << c.dims.size() << "-d, threads " << threads;
    }
  }
}

// The element-wise kernels alone, large enough to split between two threads (at an odd count:
// each thread's part, and the last one's tail), against ATen: the exact ones bit for bit, the
// C library's within an ulp or so.
TEST(OwnKernels, UnaryKernelsMatchAten) {
  at::manual_seed(41);
  const int64_t n = 100003;
  at::Tensor x = at::randn({n}) * 20;
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[n - 1] = -std::numeric_limits<float>::infinity();
  x[n - 2] = -0.f;
  x[n - 3] = 2.5f;
  struct Case {
    UnaryOp op;
    at::Tensor want;
    bool exact;
  };
  const std::vector<Case> cases = {
      {UnaryOp::Abs, at::abs(x), true},
      {UnaryOp::Floor, at::floor(x), true},
      {UnaryOp::Ceil, at::ceil(x), true},
      {UnaryOp::Round, at::round(x), true},
      {UnaryOp::Reciprocal, at::reciprocal(x), true},
      {UnaryOp::LeakyRelu, at::leaky_relu(x, 0.2), true},
      {UnaryOp::Exp, at::exp(x), false},
      {UnaryOp::Log, at::log(x), false},
      {UnaryOp::Sin, at::sin(x), false},
      {UnaryOp::Cos, at::cos(x), false},
  };
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(c.op)) + ", threads " + std::to_string(threads));
      at::Tensor got = x.clone();
      unary_in_place(c.op, got.data_ptr<float>(), n, 0.2f, threads);
      EXPECT_TRUE(at::equal(got.isnan(), c.want.isnan()));
      if (c.exact) {
        EXPECT_EQ(std::memcmp(got.data_ptr<float>(), c.want.data_ptr<float>(), n * sizeof(float)),
                  0);
      } else {
        EXPECT_TRUE(at::allclose(got, c.want, 1e-6, 1e-7, /*equal_nan=*/true));
      }
    }
  }
}

TEST(OwnKernels, BroadcastBinaryMatchesAten) {
  at::manual_seed(42);
  at::Tensor a = at::randn({4, 32, 33, 17});
  a.view(-1)[100] = std::numeric_limits<float>::quiet_NaN();
  for (const std::vector<int64_t>& bd :
       {std::vector<int64_t>{4, 32, 33, 17}, std::vector<int64_t>{1, 32, 1, 1},
        std::vector<int64_t>{1, 1, 1, 17}, std::vector<int64_t>{4, 1, 33, 1}}) {
    at::Tensor b = at::randn(bd);
    b.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
    BroadcastShape shape;
    shape.rank = 4;
    int64_t stride = 1;
    for (int64_t d = 3; d >= 0; --d) {
      shape.dims[d] = a.size(d);
      shape.b[d] = bd[static_cast<size_t>(d)] == 1 ? 0 : stride;
      stride *= bd[static_cast<size_t>(d)];
    }
    for (BroadcastOp op :
         {BroadcastOp::Minimum, BroadcastOp::Maximum, BroadcastOp::Prelu, BroadcastOp::Add,
          BroadcastOp::Sub, BroadcastOp::Mul, BroadcastOp::Div}) {
      const at::Tensor want = op == BroadcastOp::Minimum   ? at::minimum(a, b)
                              : op == BroadcastOp::Maximum ? at::maximum(a, b)
                              : op == BroadcastOp::Prelu   ? at::where(a > 0, a, b * a)
                              : op == BroadcastOp::Add     ? a + b
                              : op == BroadcastOp::Sub     ? a - b
                              : op == BroadcastOp::Mul     ? a * b
                                                           : a / b;
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(static_cast<int>(op)) + " by " + ints(bd) + ", threads " +
                     std::to_string(threads));
        at::Tensor got = at::empty_like(a);
        broadcast_binary(op, a.data_ptr<float>(), b.data_ptr<float>(), got.data_ptr<float>(), shape,
                         threads);
        EXPECT_TRUE(at::equal(got.isnan(), want.isnan()));
        EXPECT_TRUE(at::equal(got.nan_to_num(0), want.nan_to_num(0)));
      }
    }
  }
}

// The resize kernels with their planes split between threads, against ATen.
TEST(OwnKernels, ResizeKernelsOnThreads) {
  at::manual_seed(43);
  const at::Tensor x = at::randn({2, 8, 20, 30});
  for (int threads : {1, 2}) {
    const ResizeShape s{16, 20, 30, 40, 60};
    at::Tensor got = at::empty({2, 8, 40, 60});
    const std::vector<int64_t> h = nearest_taps(20, 40), w = nearest_taps(30, 60);
    resize_nearest(x.data_ptr<float>(), got.data_ptr<float>(), s, h.data(), w.data(), threads);
    EXPECT_TRUE(at::equal(got, at::upsample_nearest2d(x, {40, 60})));
    for (bool align : {false, true}) {
      const std::vector<LinearTap> lh = linear_taps(20, 40, align), lw = linear_taps(30, 60, align);
      resize_bilinear(x.data_ptr<float>(), got.data_ptr<float>(), s, lh.data(), lw.data(), threads);
      // The libtorch linked here (1.13) computes source positions in double, PyTorch 2 (and the
      // kernel) in float: weights a few float ulps apart where align_corners' ratio is inexact.
      const at::Tensor want = at::upsample_bilinear2d(x, {40, 60}, align);
      EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5))
          << "align " << align << " max diff " << (got - want).abs().max().item<float>();
    }
  }
}

}  // namespace
}  // namespace ember::cpu
