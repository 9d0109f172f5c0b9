// The cpu backend against ATen: partition programs written as IR text (weights as hex), run through
// preprocess (compiler half) and init/execute (runtime half), compared with libtorch. Each op
// alone, at every dtype and with NaN and infinities, is the backend conformance suite's
// (tests/conformance); here is what is specific to this backend: fusions and folding across ops,
// weights, its support rules, dynamic batches, blobs and bf16; its own kernels are
// kernels/kernels_test.cc; the shared helpers cpu_test_util.h.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_compiler.h"
#include "backends/cpu/cpu_runtime.h"
#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/test/test_util.h"
#include "backends/cpu/test/testing.h"
#include "compiler/import/exported_program.h"
#include "compiler/ir/parser.h"
#include "compiler/passes/passes.h"
#include "runtime/core/error.h"

namespace ember::cpu {
namespace {

struct ConvCase {
  std::vector<int64_t> in, w;
  std::vector<int64_t> stride, pad, dil, out_pad;
  int64_t groups;
  bool transposed;
  bool bias;
};

TEST(CpuBackend, Convolutions) {
  at::manual_seed(0);
  const std::vector<ConvCase> cases = {
      {{1, 3, 17, 19}, {8, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, {0, 0}, 1, false, true},
      {{2, 16, 9, 9}, {16, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 16, false, true},  // depthwise
      {{1, 8, 10, 10}, {12, 2, 3, 3}, {2, 1}, {1, 0}, {1, 1}, {0, 0}, 4, false, false},  // grouped
      {{1, 4, 12, 12}, {6, 4, 3, 3}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 1, false, true},    // dilated
      {{1, 32, 7, 7}, {64, 32, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, false, false},  // 1x1
      {{2, 4, 20}, {6, 4, 5}, {2}, {2}, {1}, {0}, 1, false, true},                       // 1-D
      {{1, 4, 6, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, true, true},  // transposed
      {{1, 4, 5, 5}, {4, 2, 3, 3}, {2, 2}, {0, 0}, {1, 1}, {0, 0}, 2, true, false},
      {{1, 3, 10}, {3, 5, 4}, {3}, {1}, {1}, {2}, 1, true, true},  // transposed 1-D
      {{1, 2, 5, 6, 7},
       {4, 2, 3, 3, 3},
       {1, 2, 1},
       {1, 1, 0},
       {1, 1, 2},
       {0, 0, 0},
       1,
       false,
       true},                                                                       // 3-D
      {{1, 4, 5, 5}, {4, 2, 3, 3}, {2, 2}, {1, 1}, {2, 2}, {1, 1}, 2, true, true},  // dilated
                                                                                    // transposed
      // Winograd-eligible (3x3, stride 1): ResNet's layers.
      {{1, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, true},
      {{1, 256, 14, 14}, {256, 256, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, false, false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const ConvCase& k = cases[i];
    at::Tensor x = at::randn(k.in), w = at::randn(k.w);
    const int64_t oc = k.transposed ? k.w[1] * k.groups : k.w[0];
    at::Tensor b = at::randn({oc});
    at::Tensor want = at::convolution(x, w, k.bias ? b : at::Tensor(), k.stride, k.pad, k.dil,
                                      k.transposed, k.out_pad, k.groups);
    Prog p;
    auto xi = p.input("x", x);
    auto wi = p.weight("w", w);
    std::string bias = k.bias ? p.weight("b", b) : "none";
    p.outputs = {p.node(
        "y", want,
        "aten::convolution.default(input=" + xi + ", weight=" + wi + ", bias=" + bias +
            ", stride=" + ints(k.stride) + ", padding=" + ints(k.pad) +
            ", dilation=" + ints(k.dil) + ", transposed=" + (k.transposed ? "true" : "false") +
            ", output_padding=" + ints(k.out_pad) + ", groups=" + std::to_string(k.groups) + ")")};
    check(p, want, 1e-3);
  }
}

TEST(CpuBackend, ConvBatchNormFoldAndPostOps) {
  at::manual_seed(1);
  const std::vector<std::pair<std::string, std::function<at::Tensor(const at::Tensor&)>>> posts = {
      {"aten::relu.default(self=%bn)", [](const at::Tensor& t) { return at::relu(t); }},
      {"aten::hardtanh.default(self=%bn, min_val=0.0, max_val=6.0)",
       [](const at::Tensor& t) { return at::hardtanh(t, 0, 6); }},
      {"aten::gelu.default(self=%bn)", [](const at::Tensor& t) { return at::gelu(t); }},
      {"aten::gelu.default(self=%bn, approximate=\"tanh\")",
       [](const at::Tensor& t) { return at::gelu(t, "tanh"); }},
      {"aten::silu.default(self=%bn)", [](const at::Tensor& t) { return at::silu(t); }},
      {"aten::sigmoid.default(self=%bn)", [](const at::Tensor& t) { return at::sigmoid(t); }},
      {"aten::hardswish.default(self=%bn)", [](const at::Tensor& t) { return at::hardswish(t); }},
      {"aten::elu.default(self=%bn, alpha=0.5)",
       [](const at::Tensor& t) { return at::elu(t, 0.5); }},
      {"aten::tanh.default(self=%bn)", [](const at::Tensor& t) { return at::tanh(t); }},
  };
  for (const auto& [call, f] : posts) {
    SCOPED_TRACE(call);
    at::Tensor x = at::randn({1, 8, 12, 12}), w = at::randn({16, 8, 3, 3}) * 0.2;
    at::Tensor cb = at::randn({16});
    Bn bn(16);
    at::Tensor conv = conv2d(x, w, cb, 1, 1);
    at::Tensor want = f(bn.apply(conv));
    Prog p;
    auto xi = p.input("x", x);
    auto c = p.node("c", conv, conv_call(xi, p.weight("w", w), p.weight("cb", cb), 1, 1));
    bn.call(p, "bn", c, conv);
    p.outputs = {p.node("y", want, call)};
    Compiled comp = check(p, want, 1e-4);
    // Folded and fused: one convolution, its batch norm gone, the element-wise op a post-op.
    ASSERT_EQ(comp.graph.ops.size(), 1u);
    EXPECT_EQ(comp.graph.ops[0].kind, OpKind::Conv);
    EXPECT_EQ(comp.graph.ops[0].post_ops.size(), 1u);
    // Only the folded weight and bias are stored (the originals are not read any more).
    EXPECT_EQ(comp.result.named_data.size(), 2u);
  }
}

// ResNet's basic block with a downsample: both residual-add orders, fused as sum post-ops.
TEST(CpuBackend, ResNetBlock) {
  at::manual_seed(2);
  at::Tensor x = at::randn({1, 16, 14, 14});
  at::Tensor w1 = at::randn({32, 16, 3, 3}) * 0.1, w2 = at::randn({32, 32, 3, 3}) * 0.1;
  at::Tensor wd = at::randn({32, 16, 1, 1}) * 0.2;
  Bn bn1(32), bn2(32), bnd(32);
  at::Tensor c1 = conv2d(x, w1, at::Tensor(), 2, 1);
  at::Tensor r1 = at::relu(bn1.apply(c1));
  at::Tensor c2 = conv2d(r1, w2, at::Tensor(), 1, 1);
  at::Tensor b2 = bn2.apply(c2);
  at::Tensor cd = conv2d(x, wd, at::Tensor(), 2, 0);
  at::Tensor bd = bnd.apply(cd);
  at::Tensor want = at::relu(b2 + bd);
  Prog p;
  auto xi = p.input("x", x);
  auto c1i = p.node("c1", c1, conv_call(xi, p.weight("w1", w1), "none", 2, 1));
  auto bn1i = bn1.call(p, "bn1", c1i, c1);
  auto r1i = p.node("r1", r1, "aten::relu.default(self=" + bn1i + ")");
  auto c2i = p.node("c2", c2, conv_call(r1i, p.weight("w2", w2), "none", 1, 1));
  auto b2i = bn2.call(p, "bn2", c2i, c2);
  auto cdi = p.node("cd", cd, conv_call(xi, p.weight("wd", wd), "none", 2, 0));
  auto bdi = bnd.call(p, "bnd", cdi, cd);
  auto add = p.node("add", want, "aten::add.Tensor(self=" + b2i + ", other=" + bdi + ")");
  p.outputs = {p.node("out", want, "aten::relu.default(self=" + add + ")")};
  Compiled comp = check(p, want, 1e-4);
  // Three convolutions; the add and the final relu ride on the last one (the downsample).
  ASSERT_EQ(comp.graph.ops.size(), 3u);
  ASSERT_EQ(comp.graph.ops[2].post_ops.size(), 2u);
  EXPECT_TRUE(comp.graph.ops[2].post_ops[0].is_sum);
}

// Residual sums whose summand stays live (a delegate input, an op's own input, a value read
// again later): copied into the destination first, never accumulated in place.
TEST(CpuBackend, ResidualSumCopies) {
  at::manual_seed(8);
  at::Tensor x = at::randn({1, 8, 9, 9}), w = at::randn({8, 8, 3, 3}) * 0.1;
  at::Tensor w3 = at::randn({8, 8, 3, 3}) * 0.1;
  at::Tensor c = conv2d(x, w, at::Tensor(), 1, 1);
  at::Tensor s1 = c + x;  // summand: the delegate input (also the conv's own input)
  at::Tensor r2 = at::relu(conv2d(x, w3, at::Tensor(), 1, 1));
  at::Tensor c2 = conv2d(s1, w, at::Tensor(), 1, 1);
  at::Tensor s2 = c2 + r2;         // summand r2, same layout, read again below
  at::Tensor want = s2 * r2 + s1;  // s1: a delegate output too
  Prog p;
  auto xi = p.input("x", x);
  auto wi = p.weight("w", w);
  auto ci = p.node("c", c, conv_call(xi, wi, "none", 1, 1));
  auto s1i = p.node("s1", s1, "aten::add.Tensor(self=" + ci + ", other=" + xi + ")");
  auto c3i = p.node("c3", r2, conv_call(xi, p.weight("w3", w3), "none", 1, 1));
  auto r2i = p.node("r2", r2, "aten::relu.default(self=" + c3i + ")");
  auto c2i = p.node("c2", c2, conv_call(s1i, wi, "none", 1, 1));
  auto s2i = p.node("s2", s2, "aten::add.Tensor(self=" + c2i + ", other=" + r2i + ")");
  auto m = p.node("m", want, "aten::mul.Tensor(self=" + s2i + ", other=" + r2i + ")");
  p.outputs = {p.node("out", want, "aten::add.Tensor(self=" + m + ", other=" + s1i + ")"), s1i};
  auto prog = parse_text(p.text());
  Compiled comp = compile(*prog);
  ASSERT_EQ(comp.graph.ops.size(), 5u);  // c(+x), c3(+relu), c2(+r2), mul, add
  auto out = run(comp, {x}, {want, s1});
  ASSERT_EQ(out.size(), 2u);
  expect_close(out[0], want);
  expect_close(out[1], s1);
}

TEST(CpuBackend, LinearAndMatmul) {
  at::manual_seed(3);
  at::Tensor x = at::randn({4, 32}), w = at::randn({24, 32}), b = at::randn({24});
  at::Tensor lin = at::addmm(b, x, w.t());
  at::Tensor want = at::relu(lin);
  Prog p;
  auto xi = p.input("x", x);
  auto wi = p.weight("w", w);
  auto t = p.node("t", w.t().contiguous(), "aten::t.default(self=" + wi + ")");
  auto mm = p.node("mm", lin,
                   "aten::addmm.default(self=" + p.weight("b", b) + ", mat1=" + xi + ", mat2=" + t +
                       ", beta=1, alpha=1)");
  p.outputs = {p.node("y", want, "aten::relu.default(self=" + mm + ")")};
  Compiled comp = check(p, want, 1e-4);
  EXPECT_EQ(comp.graph.ops.size(), 1u);  // t folded into the weight, relu a post-op

  // A 3-D linear as make_fx writes it: view, mm with t(weight), _unsafe_view, add bias; gelu.
  at::Tensor x3 = at::randn({2, 5, 32});
  at::Tensor flat = x3.view({10, 32});
  at::Tensor mm3 = at::mm(flat, w.t());
  at::Tensor lin3 = mm3.view({2, 5, 24}) + b;
  at::Tensor want3 = at::gelu(lin3);
  Prog p3;
  auto x3i = p3.input("x", x3);
  auto w3i = p3.weight("w", w);
  auto v = p3.node("v", flat, "aten::view.default(self=" + x3i + ", size=[10, 32])");
  auto t3 = p3.node("t", w.t().contiguous(), "aten::t.default(self=" + w3i + ")");
  auto m3 = p3.node("mm", mm3, "aten::mm.default(self=" + v + ", mat2=" + t3 + ")");
  auto u = p3.node("u", lin3, "aten::_unsafe_view.default(self=" + m3 + ", size=[2, 5, 24])");
  auto a3 = p3.node("a", lin3, "aten::add.Tensor(self=" + u + ", other=" + p3.weight("b", b) + ")");
  p3.outputs = {p3.node("g", want3, "aten::gelu.default(self=" + a3 + ")")};
  check(p3, want3, 1e-4);

  // Activation x activation: mm and bmm (attention's shapes), then softmax.
  at::Tensor a = at::randn({2, 5, 8}), c = at::randn({2, 8, 6});
  at::Tensor bmm = at::bmm(a, c);
  at::Tensor sm = at::_softmax(bmm, -1, false);
  Prog q;
  auto ai = q.input("a", a);
  auto ci = q.input("c", c);
  auto bi = q.node("bmm", bmm, "aten::bmm.default(self=" + ai + ", mat2=" + ci + ")");
  q.outputs = {
      q.node("sm", sm, "aten::_softmax.default(self=" + bi + ", dim=-1, half_to_float=false)")};
  check(q, sm, 1e-5);
}

// Max pooling without NaN (the conformance suite's case holds NaN, issue 20), and mean then a
// view in one partition.
TEST(CpuBackend, PoolingAndShapes) {
  at::manual_seed(4);
  at::Tensor x = at::randn({1, 8, 15, 15});
  // Max pooling (ceil mode too), average pooling, mean over H and W, then flatten.
  for (bool ceil : {false, true}) {
    SCOPED_TRACE(ceil);
    auto [mp, idx] = at::max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, ceil);
    Prog p;
    auto xi = p.input("x", x);
    p.body.push_back("(%mp: " + type_of(mp) + ", %idx: i64" + type_of(idx).substr(3) +
                     ") = aten::max_pool2d_with_indices.default(self=" + xi +
                     ", kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], dilation=[1, 1], "
                     "ceil_mode=" +
                     (ceil ? "true" : "false") + ")");
    p.outputs = {"%mp"};
    check(p, mp, 0);
  }
  {
    at::Tensor m = at::mean(x, {-1, -2}, true);
    at::Tensor flat = m.view({1, 8});
    Prog p;
    auto xi = p.input("x", x);
    auto mi = p.node("m", m, "aten::mean.dim(self=" + xi + ", dim=[-1, -2], keepdim=true)");
    p.outputs = {p.node("v", flat, "aten::view.default(self=" + mi + ", size=[1, 8])")};
    check(p, flat, 1e-5);
  }
}

// Chains of standalone ops in one partition: cat, permute and elu; mul, add, relu and batch norm.
TEST(CpuBackend, StandaloneOps) {
  at::manual_seed(5);
  at::Tensor x = at::randn({2, 6, 10});
  {
    at::Tensor y = at::randn({2, 3, 10});
    at::Tensor cat = at::cat({x, y}, 1);
    at::Tensor perm = cat.permute({0, 2, 1});
    at::Tensor e = at::elu(perm, 0.5);
    Prog p;
    auto xi = p.input("x", x);
    auto yi = p.input("y", y);
    auto c = p.node("cat", cat, "aten::cat.default(tensors=[" + xi + ", " + yi + "], dim=1)");
    auto pe =
        p.node("pe", perm.contiguous(), "aten::permute.default(self=" + c + ", dims=[0, 2, 1])");
    p.outputs = {p.node("e", e, "aten::elu.default(self=" + pe + ", alpha=0.5)")};
    check(p, e, 1e-5);
  }
  {
    // Broadcast add and mul on activations (a bias-like operand), standalone batch norm.
    at::Tensor z = at::randn({1, 4, 5, 5}), s = at::randn({4, 1, 1});
    Bn bn(4);
    at::Tensor want = bn.apply(at::relu(z * s + z));
    Prog p;
    auto zi = p.input("z", z);
    auto mul =
        p.node("mul", z, "aten::mul.Tensor(self=" + zi + ", other=" + p.weight("s", s) + ")");
    auto add = p.node("add", z, "aten::add.Tensor(self=" + mul + ", other=" + zi + ")");
    auto r = p.node("r", z, "aten::relu.default(self=" + add + ")");
    p.outputs = {bn.call(p, "bn", r, z)};
    check(p, want, 1e-4);
  }
}

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

// Truncations and byte flips of a real blob: init refuses or builds; it never crashes (the test
// runs under ASan in the asan build).
TEST(CpuBackend, CorruptedBlobRefused) {
  at::manual_seed(6);
  at::Tensor x = at::randn({1, 4, 8, 8}), w = at::randn({8, 4, 3, 3});
  Bn bn(8);
  at::Tensor conv = conv2d(x, w, at::Tensor(), 1, 1);
  at::Tensor want = at::relu(bn.apply(conv));
  Prog p;
  auto xi = p.input("x", x);
  auto c = p.node("c", conv, conv_call(xi, p.weight("w", w), "none", 1, 1));
  bn.call(p, "bn", c, conv);
  auto r = p.node("r", want, "aten::relu.default(self=%bn)");
  p.outputs = {
      p.node("v", want.view({1, 512}), "aten::view.default(self=" + r + ", size=[1, 512])")};
  auto prog = parse_text(p.text());
  Compiled comp = compile(*prog);
  const std::vector<uint8_t>& blob = comp.result.processed;
  const Backend* b = runtime_backend();
  BlobMap map(&comp.result.named_data);
  BackendInitContext ctx{nullptr, "forward", &map};
  for (size_t n = 0; n < blob.size(); ++n) {
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + static_cast<ptrdiff_t>(n));
    FreeableBuffer buf(cut.data(), cut.size(), nullptr, nullptr);
    Result<DelegateHandle*> h = b->init(ctx, &buf, {});
    EXPECT_FALSE(h.ok()) << "truncated at " << n;
    if (h.ok()) {
      b->destroy(*h);
      continue;
    }
    if (n == 3) {  // what the user reads: init's context, then parse's reason
      EXPECT_EQ(h.error(), Error::InvalidProgram);
      EXPECT_STREQ(last_error_message(),
                   "cpu delegate: invalid blob: not a cpu backend blob (3 bytes)");
    }
  }
  size_t refused = 0;
  for (size_t i = 0; i < blob.size(); ++i) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = blob;
      bad[i] ^= flip;
      if (std::getenv("EMBER_CPU_FLIP_TRACE")) std::fprintf(stderr, "flip %zu %02x\n", i, flip);
      FreeableBuffer buf(bad.data(), bad.size(), nullptr, nullptr);
      Result<DelegateHandle*> h = b->init(ctx, &buf, {});
      if (h.ok()) {
        b->destroy(*h);
      } else {
        ++refused;
        EXPECT_NE(std::string(last_error_message()), "");
      }
    }
  }
  EXPECT_GT(refused, blob.size());
  // A missing weight is refused by name.
  std::vector<partition::NamedBlob> none;
  BlobMap empty(&none);
  BackendInitContext ctx2{nullptr, "forward", &empty};
  std::vector<uint8_t> copy = blob;
  FreeableBuffer buf(copy.data(), copy.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = b->init(ctx2, &buf, {});
  ASSERT_FALSE(h.ok());
  EXPECT_NE(std::string(last_error_message()).find("sha256"), std::string::npos)
      << last_error_message();
}

// A dynamic batch: delegated, built at init for the bound and again for each batch size a call
// brings; each call matches ATen at its own size, outputs take that size, and a batch above the
// bound is refused, and an empty batch gives empty outputs.
TEST(CpuBackend, DynamicBatchBuiltPerCall) {
  at::manual_seed(11);
  at::Tensor w = at::randn({5, 4, 3, 3}), fc = at::randn({3, 5});
  const std::string text = "sym b in [1, 8]\nweight \"w\": f32[5, 4, 3, 3] = hex\"" + hex(w) +
                           "\"\nweight \"fc\": f32[3, 5] = hex\"" + hex(fc) +
                           "\"\ngraph(\n    %x: f32[b<=8, 4, 6, 6],\n"
                           "    %w: f32[5, 4, 3, 3] parameter \"w\",\n"
                           "    %fc: f32[3, 5] parameter \"fc\"\n) {\n  %c: f32[b<=8, 5, 6, 6] = " +
                           conv_call("%x", "%w", "none", 1, 1) +
                           "\n  %r: f32[b<=8, 5, 6, 6] = aten::relu.default(self=%c)\n"
                           "  %m: f32[b<=8, 5] = aten::mean.dim(self=%r, dim=[2, 3], "
                           "keepdim=false, dtype=none)\n"
                           "  %t: f32[5, 3] = aten::t.default(self=%fc)\n"
                           "  %y: f32[b<=8, 3] = aten::mm.default(self=%m, mat2=%t)\n"
                           "  return (%r, %y)\n}\n";
  auto program = parse_text(text);
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  ASSERT_EQ(c.graph.num_symbols, 1u);
  const Backend* b = runtime_backend();
  BlobMap map(&c.result.named_data);
  // The build at the bound takes its buffers from the method allocator; those made during calls
  // take none (a call does not grow the caller's memory).
  alignas(64) static uint8_t pool[1 << 20];
  MemoryAllocator allocator(pool, sizeof(pool));
  BackendInitContext ctx{&allocator, "forward", &map};
  std::vector<uint8_t> blob = c.result.processed;
  FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = b->init(ctx, &buf, {});
  ASSERT_TRUE(h.ok()) << last_error_message();
  const size_t taken_at_init = allocator.handed_out();
  EXPECT_GT(taken_at_init, 0u);
  // Output buffers at the bound, as the program plans them.
  std::vector<float> r_buf(8 * 5 * 6 * 6), y_buf(8 * 3);
  BackendExecuteContext ectx{nullptr};
  for (int64_t n : {3, 8, 1, 3, 5, 2, 7, 3}) {  // more sizes than builds kept
    SCOPED_TRACE("batch " + std::to_string(n));
    at::Tensor x = at::randn({n, 4, 6, 6});
    at::Tensor want_r = at::relu(conv2d(x, w, at::Tensor(), 1, 1));
    at::Tensor want_y = at::mm(want_r.mean({2, 3}), fc.t());
    const int32_t bound[4] = {8, 5, 6, 6}, ybound[2] = {8, 3};
    const int32_t xs[4] = {static_cast<int32_t>(n), 4, 6, 6};
    Tensor tx = *Tensor::make(ScalarType::Float, xs, {}, x.data_ptr());
    Tensor tr =
        *Tensor::make(ScalarType::Float, bound, {}, r_buf.data(), ShapeDynamism::DynamicBound);
    Tensor ty =
        *Tensor::make(ScalarType::Float, ybound, {}, y_buf.data(), ShapeDynamism::DynamicBound);
    EValue vx = EValue::from_tensor(&tx), vr = EValue::from_tensor(&tr),
           vy = EValue::from_tensor(&ty);
    std::vector<EValue*> args = {&vx, &vr, &vy};
    ASSERT_EQ(b->execute(ectx, *h, args), Error::Ok) << last_error_message();
    ASSERT_EQ(tr.size(0), n);
    ASSERT_EQ(ty.size(0), n);
    expect_close(at::from_blob(r_buf.data(), {n, 5, 6, 6}), want_r);
    expect_close(at::from_blob(y_buf.data(), {n, 3}), want_y);
    EXPECT_EQ(allocator.handed_out(), taken_at_init);
  }
  for (int32_t n : {9, 0}) {
    std::vector<float> data(9 * 4 * 6 * 6);
    const int32_t xs[4] = {n, 4, 6, 6}, bound[4] = {8, 5, 6, 6}, ybound[2] = {8, 3};
    Tensor tx = *Tensor::make(ScalarType::Float, xs, {}, data.data());
    Tensor tr =
        *Tensor::make(ScalarType::Float, bound, {}, r_buf.data(), ShapeDynamism::DynamicBound);
    Tensor ty =
        *Tensor::make(ScalarType::Float, ybound, {}, y_buf.data(), ShapeDynamism::DynamicBound);
    EValue vx = EValue::from_tensor(&tx), vr = EValue::from_tensor(&tr),
           vy = EValue::from_tensor(&ty);
    std::vector<EValue*> args = {&vx, &vr, &vy};
    if (n == 0) {
      EXPECT_EQ(b->execute(ectx, *h, args), Error::Ok) << last_error_message();
      EXPECT_EQ(tr.numel(), 0);
      EXPECT_EQ(ty.numel(), 0);
      continue;
    }
    EXPECT_EQ(b->execute(ectx, *h, args), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message()).find("the program takes 0 to 8"), std::string::npos)
        << last_error_message();
  }
  b->destroy(*h);
}

// An empty tensor stays portable (issue 20: a zero-size batched matmul crashed inside oneDNN with
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

// A float subtraction stays portable, and the reason says so (it named torchao's pattern only).
TEST(CpuBackend, FloatSubtractionStaysPortableSayingWhy) {
  auto program = parse_text(
      "graph(\n    %x: f32[3, 4],\n    %y: f32[3, 4]\n) {\n"
      "  %s: f32[3, 4] = aten::sub.Tensor(self=%x, other=%y, alpha=1)\n"
      "  return (%s)\n}\n");
  ASSERT_TRUE(program);
  const ir::Node* sub = *program->graph().nodes().begin();
  partition::Support s = compiler_backend()->support().check(*sub);
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("a subtraction; the cpu backend runs aten::sub only as part of"),
            std::string::npos)
      << s.reason;
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

// Layer norm's statistics in double, as ATen's float64 kernel (issue 20): oneDNN's float ones are
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
// overflows (issue 20): the result is the exact sum rounded once, as ATen's in double gives, and
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

TEST(CpuBackend, Bf16Precision) {
  at::manual_seed(7);
  at::Tensor x = at::randn({1, 16, 10, 10}), w = at::randn({32, 16, 3, 3}) * 0.1;
  at::Tensor want = at::relu(conv2d(x, w, at::Tensor(), 1, 1));
  Prog p;
  auto xi = p.input("x", x);
  auto c = p.node("c", want, conv_call(xi, p.weight("w", w), "none", 1, 1));
  p.outputs = {p.node("r", want, "aten::relu.default(self=" + c + ")")};
  auto prog = parse_text(p.text());
  const std::string bf16 = "bf16";
  Compiled comp = compile(*prog, {{"precision", std::vector<uint8_t>(bf16.begin(), bf16.end())}});
  EXPECT_EQ(comp.graph.precision, Precision::Bf16);
  if (!bf16_supported()) {
    // A CPU without AVX-512 (or EMBER_CPU_ISA / ONEDNN_MAX_CPU_ISA below it): refused at init,
    // with what the CPU lacks and what to do, not oneDNN's "could not create a primitive".
    BlobMap map(&comp.result.named_data);
    BackendInitContext ctx{nullptr, "forward", &map};
    std::vector<uint8_t> blob = comp.result.processed;
    FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
    Result<DelegateHandle*> h = runtime_backend()->init(ctx, &buf, {});
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.error(), Error::NotSupported);
    const std::string why = last_error_message();
    EXPECT_NE(why.find("bf16"), std::string::npos) << why;
    EXPECT_NE(why.find("AVX-512"), std::string::npos) << why;
    EXPECT_NE(why.find("--precision fp32"), std::string::npos) << why;
    return;  // the behaviour of such a CPU, asserted above
  }
  auto out = run(comp, {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  // bf16 keeps 8 mantissa bits: products and inputs rounded to ~2^-9 relative.
  expect_close(out[0], want, 2e-2, 5e-2);
  EXPECT_FALSE(at::allclose(out[0], want, 1e-6, 1e-6));  // really ran in bf16
}

// Whole exported models (one partition each) against eager PyTorch, when the directory
// bench/cpu_backend_models.py writes is given: EMBER_CPU_TEST_MODELS=/path/to/dir.
TEST(CpuBackend, ExportedModelsMatchEager) {
  const char* dir = std::getenv("EMBER_CPU_TEST_MODELS");
  if (dir == nullptr || !std::filesystem::exists(dir)) GTEST_SKIP() << "no EMBER_CPU_TEST_MODELS";
  for (const char* name : {"resnet18", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    const std::string base = std::string(dir) + "/" + name;
    if (!std::filesystem::exists(base + ".ep")) continue;
    std::vector<float> x = read_floats(base + ".input.bin");
    std::vector<float> want = read_floats(base + ".output.bin");
    ASSERT_EQ(x.size(), 3u * 224 * 224);
    ASSERT_EQ(want.size(), 1000u);
    for (const char* precision : {"fp32", "bf16"}) {
      SCOPED_TRACE(precision);
      const std::string p(precision);
      auto r = testing::preprocess_exported_file(
          base + ".ep", {{"precision", std::vector<uint8_t>(p.begin(), p.end())}});
      ASSERT_TRUE(r.ok()) << r.status().message();
      testing::Delegate d;
      ASSERT_EQ(d.init(*r, {}), Error::Ok) << last_error_message();
      std::vector<float> y(1000, NAN);
      ASSERT_EQ(d.run({{x.data(), {1, 3, 224, 224}}}, {{y.data(), {1, 1000}}}), Error::Ok)
          << last_error_message();
      at::Tensor got = at::from_blob(y.data(), {1000}).clone();
      at::Tensor ref = at::from_blob(want.data(), {1000}).clone();
      if (p == "fp32") {
        // rtol 1e-4, atol relative to the logits' scale (a random MobileNetV2's are ~1e-9).
        expect_close(got, ref, 1e-4, 1e-4 * ref.abs().max().item<double>());
      } else {
        // bf16 convolutions and matmuls: same top-1 class, logits within a few percent.
        EXPECT_EQ(got.argmax().item<int64_t>(), ref.argmax().item<int64_t>());
        std::printf("%s bf16: max |diff| %.4g, max |logit| %.4g\n", name,
                    (got - ref).abs().max().item<float>(), ref.abs().max().item<float>());
      }
    }
  }
}

}  // namespace
}  // namespace ember::cpu
