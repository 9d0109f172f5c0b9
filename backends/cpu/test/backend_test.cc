// The cpu backend against ATen: partition programs written as IR text (weights as hex), run through
// preprocess (compiler half) and init/execute (runtime half), compared with libtorch. Each op
// alone, at every dtype and with NaN and infinities, is the backend conformance suite's
// (tests/conformance); here is what is specific to this backend: fusions and folding across ops,
// weights, dynamic batches, blobs and bf16; what it leaves portable and its results at float's
// limits are exactness_test.cc; its own kernels kernels/kernels_test.cc; the shared helpers
// test_util.h.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
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

// Max pooling without NaN (the conformance suite's case holds NaN), and mean then a
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
