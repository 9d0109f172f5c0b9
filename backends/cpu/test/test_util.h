// The cpu backend tests' shared helpers: programs written as IR text from ATen tensors, compiled
// by the backend's compile half and run through its runtime half, results compared with ATen.
//
//   Prog p; auto x = p.input("x", t); p.outputs = {p.node("y", want, "aten::relu.default(self=" + x
//   + ")")}; Compiled c = compile(*parse_text(p.text()));  auto out = run(c, {t}, {want});
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_compiler.h"
#include "backends/cpu/cpu_runtime.h"
#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/test/testing.h"
#include "compiler/ir/parser.h"
#include "runtime/core/error.h"
#include "tests/support/heap_count.h"

namespace ember::cpu {

using testing::BlobMap;

// The IR type of t: its dtype (float32, int8, int32, int64 or bool) and sizes.
inline std::string type_of(const at::Tensor& t) {
  std::string s = t.scalar_type() == at::kChar   ? "i8["
                  : t.scalar_type() == at::kInt  ? "i32["
                  : t.scalar_type() == at::kLong ? "i64["
                  : t.scalar_type() == at::kBool ? "bool["
                                                 : "f32[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

inline std::string hex(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  std::string out;
  char buf[3];
  for (int64_t i = 0; i < c.numel() * static_cast<int64_t>(c.element_size()); ++i) {
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

// `p` as a partition: every node supported (unless `check_support` is false: a partition whose
// nodes the support check saw in a larger program), then preprocessed and parsed back.
inline Compiled compile(const ir::Program& p, std::vector<partition::CompileSpecEntry> specs = {},
                        bool check_support = true) {
  const auto* backend = compiler_backend();
  for (const ir::Node* n : p.graph().nodes()) {
    if (!check_support) break;
    partition::Support s = backend->support().check(*n);
    EXPECT_TRUE(s.supported) << n->describe() << ": " << s.reason;
  }
  auto r = backend->preprocess(p, specs);
  EXPECT_TRUE(r.ok()) << r.status().message();
  Compiled c;
  if (!r.ok()) return c;
  c.result = std::move(*r);
  Result<CpuGraph> g = parse(c.result.processed);
  EXPECT_TRUE(g.ok()) << last_error_message();
  if (g.ok()) c.graph = std::move(*g);
  return c;
}

inline std::unique_ptr<ir::Program> parse_text(const std::string& text) {
  auto p = ir::parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().message() << "\n" << text;
  return p.ok() ? std::move(*p) : nullptr;
}

// Runs the blob through init/execute with `inputs`; outputs shaped like `like`. `allocator`:
// the method allocator init is given (none: the delegate uses the heap).
inline std::vector<at::Tensor> run(const Compiled& c, const std::vector<at::Tensor>& inputs,
                                   const std::vector<at::Tensor>& like,
                                   std::vector<CompileSpec> specs = {},
                                   DelegateSummary* summary = nullptr,
                                   MemoryAllocator* allocator = nullptr,
                                   const NamedDataMap* named = nullptr) {
  const Backend* b = runtime_backend();
  BlobMap map(&c.result.named_data);
  BackendInitContext ctx{allocator, "forward", named != nullptr ? named : &map};
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
      const ScalarType type = t.scalar_type() == at::kBool ? ScalarType::Bool : ScalarType::Float;
      tensors.push_back(*Tensor::make(type, s, {}, t.data_ptr()));
    }
  }
  std::vector<EValue> values;
  for (auto& t : tensors) values.push_back(EValue::from_tensor(&t));
  std::vector<EValue*> args;
  for (auto& v : values) args.push_back(&v);
  BackendExecuteContext ectx{nullptr};
  // Twice: the second call must give the same answer (no state left from the first). Neither
  // call allocates (runtime rule 3) but for what oneDNN's own execute does (heap_count.h):
  // EMBER_HEAP_REPORT=1 prints those.
  std::vector<at::Tensor> first;
  for (int call = 0; call < 2; ++call) {
    ember::testing::HeapCount heap;
    EXPECT_EQ(b->execute(ectx, *h, args), Error::Ok) << last_error_message();
    EXPECT_EQ(heap.count(), 0) << "heap allocations in call " << call;
    if (std::getenv("EMBER_HEAP_REPORT") != nullptr) {
      std::printf("call %d: %lld heap allocations in oneDNN's execute, %d oneDNN steps\n", call,
                  static_cast<long long>(heap.onednn()), summarize(*h).onednn_steps);
    }
    if (call == 0) {
      for (auto& t : out) first.push_back(t.clone());
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_TRUE(at::allclose(first[i], out[i], 0, 0, /*equal_nan=*/true));
  }
  b->destroy(*h);
  return out;
}

inline void expect_close(const at::Tensor& got, const at::Tensor& want, double rtol = 1e-4,
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

// The compile spec KEY=off, and KEY=on or off.
inline CompileSpec switched(const char* key, bool on) {
  static const std::string on_text = "on", off_text = "off";
  const std::string& v = on ? on_text : off_text;
  return {key, {reinterpret_cast<const uint8_t*>(v.data()), v.size()}};
}
inline CompileSpec turned_off(const char* key) { return switched(key, false); }

// Compiles and runs `p`, comparing its single output with `want`; with Winograd on (the
// fp32_winograd=on compile spec) and off (the default).
inline Compiled check(const Prog& p, const at::Tensor& want, double atol = 1e-4) {
  auto program = parse_text(p.text());
  if (!program) return {};
  Compiled c = compile(*program);
  std::vector<at::Tensor> in;
  for (const auto& [n, t] : p.inputs) in.push_back(t);
  for (bool winograd : {true, false}) {
    SCOPED_TRACE(winograd ? "winograd on" : "winograd off");
    std::vector<CompileSpec> specs = {switched("fp32_winograd", winograd)};
    auto out = run(c, in, {want}, specs);
    if (!out.empty()) expect_close(out[0], want, 1e-4, atol);
  }
  return c;
}

inline std::string ints(at::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

inline at::Tensor conv2d(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                         int64_t stride, int64_t pad) {
  return at::convolution(x, w, b, {stride, stride}, {pad, pad}, {1, 1}, false, {0, 0}, 1);
}

inline std::string conv_call(const std::string& x, const std::string& w, const std::string& b,
                             int stride, int pad) {
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

inline std::vector<float> read_floats(const std::string& path) {
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

}  // namespace ember::cpu
