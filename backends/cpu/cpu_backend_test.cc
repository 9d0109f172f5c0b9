// The cpu backend against ATen: partition programs written as IR text (weights as hex), run through
// preprocess (compiler half) and init/execute (runtime half), compared with libtorch. Each op
// alone, at every dtype and with NaN and infinities, is the backend conformance suite's
// (tests/conformance); here is what is specific to this backend: fusions and folding across ops,
// weights, its support rules, dynamic batches, blobs, bf16, and its own kernels.
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
#include "backends/cpu/cpu_testing.h"
#include "backends/cpu/depthwise.h"
#include "backends/cpu/graph_format.h"
#include "backends/cpu/inverted_residual.h"
#include "backends/cpu/packed_gemm.h"
#include "compiler/import/exported_program.h"
#include "compiler/ir/parser.h"
#include "compiler/passes/passes.h"
#include "runtime/core/error.h"

namespace ember::cpu {
namespace {

using testing::BlobMap;

std::string type_of(const at::Tensor& t) {
  std::string s = "f32[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

std::string hex(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  std::string out;
  char buf[3];
  for (int64_t i = 0; i < c.numel() * 4; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    out += buf;
  }
  return out;
}

// Builds the IR text of a partition program: runtime inputs first, then weights.
struct Prog {
  std::vector<std::pair<std::string, at::Tensor>> inputs, weights;
  std::vector<std::string> body;
  std::vector<std::string> outputs;

  std::string input(const std::string& name, const at::Tensor& t) {
    inputs.emplace_back(name, t);
    return "%" + name;
  }
  std::string weight(const std::string& name, const at::Tensor& t) {
    weights.emplace_back(name, t);
    return "%" + name;
  }
  // `%name: <type of like> = <rhs>`
  std::string node(const std::string& name, const at::Tensor& like, const std::string& rhs) {
    body.push_back("%" + name + ": " + type_of(like) + " = " + rhs);
    return "%" + name;
  }
  std::string text() const {
    std::ostringstream o;
    for (const auto& [n, t] : weights)
      o << "weight \"" << n << "\": " << type_of(t) << " = hex\"" << hex(t) << "\"\n";
    o << "graph(\n";
    bool first = true;
    for (const auto& [n, t] : inputs) {
      o << (first ? "" : ",\n") << "    %" << n << ": " << type_of(t);
      first = false;
    }
    for (const auto& [n, t] : weights) {
      o << (first ? "" : ",\n") << "    %" << n << ": " << type_of(t) << " parameter \"" << n
        << "\"";
      first = false;
    }
    o << "\n) {\n";
    for (const auto& b : body) o << "  " << b << "\n";
    o << "  return (";
    for (size_t i = 0; i < outputs.size(); ++i) o << (i ? ", " : "") << outputs[i];
    o << ")\n}\n";
    return o.str();
  }
};

struct Compiled {
  partition::PreprocessResult result;
  CpuGraph graph;
};

Compiled compile(const ir::Program& p, std::vector<partition::CompileSpecEntry> specs = {}) {
  const auto* backend = compiler_backend();
  for (const ir::Node* n : p.graph().nodes()) {
    partition::Support s = backend->support().check(*n);
    EXPECT_TRUE(s.supported) << n->describe() << ": " << s.reason;
  }
  auto r = backend->preprocess(p, specs);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Compiled c;
  if (!r.ok()) return c;
  c.result = std::move(*r);
  std::string why;
  auto g = parse(c.result.processed, &why);
  EXPECT_TRUE(g.has_value()) << why;
  if (g) c.graph = std::move(*g);
  return c;
}

std::unique_ptr<ir::Program> parse_text(const std::string& text) {
  auto p = ir::parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().message() << "\n" << text;
  return p.ok() ? std::move(*p) : nullptr;
}

// Runs the blob through init/execute with `inputs`; outputs shaped like `like`.
std::vector<at::Tensor> run(const Compiled& c, const std::vector<at::Tensor>& inputs,
                            const std::vector<at::Tensor>& like,
                            std::vector<CompileSpec> specs = {},
                            DelegateSummary* summary = nullptr) {
  const Backend* b = runtime_backend();
  BlobMap map(&c.result.named_data);
  BackendInitContext ctx{nullptr, "forward", &map};
  std::vector<uint8_t> blob = c.result.processed;
  FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = b->init(ctx, &buf, specs);
  EXPECT_TRUE(h.ok()) << last_error_message();
  if (!h.ok()) return {};
  if (summary != nullptr) *summary = summarize(*h);
  std::vector<at::Tensor> in, out;
  std::vector<Tensor> tensors;
  std::vector<std::vector<int32_t>> sizes;
  for (const auto& t : inputs) in.push_back(t.contiguous());
  for (const auto& t : like) out.push_back(at::full_like(t, NAN).contiguous());
  tensors.reserve(in.size() + out.size());
  for (auto* list : {&in, &out}) {
    for (auto& t : *list) {
      std::vector<int32_t> s(t.sizes().begin(), t.sizes().end());
      tensors.push_back(*Tensor::make(ScalarType::Float, s, {}, t.data_ptr()));
    }
  }
  std::vector<EValue> values;
  for (auto& t : tensors) values.push_back(EValue::from_tensor(&t));
  std::vector<EValue*> args;
  for (auto& v : values) args.push_back(&v);
  BackendExecuteContext ectx{nullptr};
  // Twice: the second call must give the same answer (no state left from the first).
  EXPECT_EQ(b->execute(ectx, *h, args), Error::Ok) << last_error_message();
  std::vector<at::Tensor> first;
  for (auto& t : out) first.push_back(t.clone());
  EXPECT_EQ(b->execute(ectx, *h, args), Error::Ok) << last_error_message();
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_TRUE(at::allclose(first[i], out[i], 0, 0, /*equal_nan=*/true));
  }
  b->destroy(*h);
  return out;
}

void expect_close(const at::Tensor& got, const at::Tensor& want, double rtol = 1e-4,
                  double atol = 1e-4) {
  ASSERT_EQ(got.sizes(), want.sizes());
  if (std::getenv("EMBER_CPU_TEST_VERBOSE") != nullptr) {
    std::printf("max |diff| %.3g, max |ref| %.3g, max |diff|/|ref| %.3g\n",
                (got - want).abs().max().item<double>(), want.abs().max().item<double>(),
                ((got - want).abs() / (want.abs() + 1e-30)).max().item<double>());
  }
  EXPECT_TRUE(at::allclose(got, want, rtol, atol))
      << "max abs diff " << (got - want).abs().max().item<float>();
}

// The compile spec KEY=off.
CompileSpec turned_off(const char* key) {
  static const std::string off = "off";
  return {key, {reinterpret_cast<const uint8_t*>(off.data()), off.size()}};
}

// Compiles and runs `p`, comparing its single output with `want`; with Winograd on (the
// default) and off.
Compiled check(const Prog& p, const at::Tensor& want, double atol = 1e-4) {
  auto program = parse_text(p.text());
  if (!program) return {};
  Compiled c = compile(*program);
  std::vector<at::Tensor> in;
  for (const auto& [n, t] : p.inputs) in.push_back(t);
  for (bool winograd : {true, false}) {
    SCOPED_TRACE(winograd ? "winograd on" : "winograd off");
    std::vector<CompileSpec> specs;
    if (!winograd) specs.push_back(turned_off("fp32_winograd"));
    auto out = run(c, in, {want}, specs);
    if (!out.empty()) expect_close(out[0], want, 1e-4, atol);
  }
  return c;
}

std::string ints(at::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

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

at::Tensor conv2d(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t stride,
                  int64_t pad) {
  return at::convolution(x, w, b, {stride, stride}, {pad, pad}, {1, 1}, false, {0, 0}, 1);
}

std::string conv_call(const std::string& x, const std::string& w, const std::string& b, int stride,
                      int pad) {
  return "aten::convolution.default(input=" + x + ", weight=" + w + ", bias=" + b + ", stride=[" +
         std::to_string(stride) + ", " + std::to_string(stride) + "], padding=[" +
         std::to_string(pad) + ", " + std::to_string(pad) +
         "], dilation=[1, 1], transposed=false, output_padding=[0, 0], groups=1)";
}

// conv -> batch norm (folded) -> post-op, one oneDNN primitive.
struct Bn {
  at::Tensor g, b, m, v;
  explicit Bn(int64_t c)
      : g(at::rand({c}) + 0.5), b(at::randn({c})), m(at::randn({c})), v(at::rand({c}) + 0.5) {}
  at::Tensor apply(const at::Tensor& x) const {
    return at::batch_norm(x, g, b, m, v, false, 0.1, 1e-5, false);
  }
  std::string call(Prog& p, const std::string& name, const std::string& x,
                   const at::Tensor& like) const {
    auto gi = p.weight(name + "_g", g), bi = p.weight(name + "_b", b);
    auto mi = p.weight(name + "_m", m), vi = p.weight(name + "_v", v);
    p.body.push_back("(%" + name + ": " + type_of(like) + ", %" + name + "_1: f32[0], %" + name +
                     "_2: f32[0]) = aten::_native_batch_norm_legit_no_training.default(input=" + x +
                     ", weight=" + gi + ", bias=" + bi + ", running_mean=" + mi +
                     ", running_var=" + vi + ", momentum=0.1, eps=1e-05)");
    return "%" + name;
  }
};

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

  // Delegated ELU (alpha 0.5) matches eager, subnormal results flushed to zero allowed.
  at::Tensor x = at::tensor({-3.f, -1e-40f, -0.5f, 0.f, 2.f, -1e-3f});
  at::Tensor want = at::elu(x, 0.5);
  Prog p;
  auto xi = p.input("x", x);
  p.outputs = {p.node("y", want, "aten::elu.default(self=" + xi + ", alpha=0.5)")};
  auto prog = parse_text(p.text());
  Compiled c = compile(*prog);
  auto out = run(c, {x}, {want});
  ASSERT_EQ(out.size(), 1u);
  at::Tensor flushed = at::where(want.abs() < 1.1754944e-38f, at::zeros_like(want), want);
  expect_close(out[0], flushed, 1e-6, 1e-6);
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
    if (h.ok()) b->destroy(*h);
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
  BackendInitContext ctx{nullptr, "forward", &map};
  std::vector<uint8_t> blob = c.result.processed;
  FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = b->init(ctx, &buf, {});
  ASSERT_TRUE(h.ok()) << last_error_message();
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

std::vector<float> read_floats(const std::string& path) {
  std::vector<float> v;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return v;
  std::fseek(f, 0, SEEK_END);
  v.resize(static_cast<size_t>(std::ftell(f)) / 4);
  std::fseek(f, 0, SEEK_SET);
  if (std::fread(v.data(), 4, v.size(), f) != v.size()) v.clear();
  std::fclose(f);
  return v;
}

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
  if (!avx512_supported()) GTEST_SKIP() << "no AVX-512 on this CPU";
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
  kernel.run(src.data_ptr<float>(), c.residual ? src.data_ptr<float>() : nullptr,
             got.data_ptr<float>());
  return got.permute({0, 3, 1, 2});
}

// The kernel itself (any size: the backend's L2 rule does not apply here), NHWC, against ATen:
// strides 1 and 2, with and without expansion (channels a multiple of 16 read in place, or
// not), with a stem, residual, relu / relu6 / none, odd and tiny sizes, batches, 1-3 threads.
TEST(OwnKernels, InvertedResidualMatchesAten) {
  if (!avx512_supported()) GTEST_SKIP() << "no AVX-512 on this CPU";
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
  if (!avx512_supported()) GTEST_SKIP() << "no AVX-512 on this CPU";
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
  if (!avx512_supported()) GTEST_SKIP() << "no AVX-512 on this CPU";
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
                own && avx512_supported() && expanded_bytes >= l2_cache_bytes() ? 1 : 0);
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
    const bool kernels = v != "off" && avx512_supported();
    const bool own_dw = kernels && (v == "stride 1" || v == "stride 2" || v == "residual");
    EXPECT_EQ(summary.depthwise_steps, own_dw ? 1 : 0);
    EXPECT_EQ(summary.pointwise_steps, kernels ? 1 : 0);
    if (v != "residual") {  // (the summand's reorder to channels-last is one more)
      EXPECT_EQ(summary.onednn_steps, 3 + (own_dw ? 0 : 1) + (kernels ? 0 : 1));
    }
  }
}

// Through the backend: a one-row linear layer (a classifier, a decode step) runs as Ember's
// matrix-vector step, with its bias, a residual sum, a clamp, or an element-wise op after it
// (silu: a oneDNN step on its output); a 4-row one stays on oneDNN's matmul.
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
        EXPECT_EQ(summary.matvec_steps, rows == 1 && avx512_supported() ? 1 : 0);
      }
    }
  }
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
