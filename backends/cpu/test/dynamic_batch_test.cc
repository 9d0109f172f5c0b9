// The cpu backend on a dynamic batch (docs/backends/cpu.md, "Dynamic batch"): a build for each
// batch size a call brings, sharing what the first build made of the weights, each bit for bit
// the static program of its size; torchao's per-token quantized linear (8da4w) of a dynamic batch
// claimed whole, as an LLM's sequence length brings it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/test/quant_test_util.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

// Named data that counts how often each key is read (get_data and load_data_into): a build
// that reorders or packs no weight reads none of them.
class CountingMap final : public NamedDataMap {
 public:
  explicit CountingMap(const std::vector<partition::NamedBlob>* blobs) : map_(blobs) {}
  Result<TensorLayout> get_tensor_layout(std::string_view key) const override {
    return map_.get_tensor_layout(key);
  }
  Result<FreeableBuffer> get_data(std::string_view key) const override {
    ++reads_[std::string(key)];
    return map_.get_data(key);
  }
  Error load_data_into(std::string_view key, void* buffer, size_t size) const override {
    ++reads_[std::string(key)];
    return map_.load_data_into(key, buffer, size);
  }
  size_t num_keys() const override { return map_.num_keys(); }
  Result<std::string_view> key(size_t index) const override { return map_.key(index); }
  int reads(const std::string& key) const {
    auto it = reads_.find(key);
    return it == reads_.end() ? 0 : it->second;
  }

 private:
  BlobMap map_;
  mutable std::map<std::string, int> reads_;
};

// torchao's per-token quantization of x's rows (its decomposition's ops: 8da4w, 8da8w), read by a
// linear by int4 weights in groups of 32 (bias b), then a float linear (w2, b2) of its result.
// `rows`: a static count ("5"), or the dynamic batch "b<=8", whose views read its size from the
// partition input %s0 (torch.export's view(q, [sym_size(x, 0), k]), the symbolic size staying
// portable).
std::string chain_program(const std::string& rows, const at::Tensor& wq, const at::Tensor& scales,
                          const at::Tensor& b, const at::Tensor& w2, const at::Tensor& b2) {
  const int64_t k = wq.size(1), n = wq.size(0), n2 = w2.size(0);
  const bool dynamic = rows.find('<') != std::string::npos;
  const std::string size = dynamic ? "%s0" : rows;
  const std::string r = "[" + rows + "]", col = "[" + rows + ", 1]",
                    mk = "[" + rows + ", " + std::to_string(k) + "]",
                    mn = "[" + rows + ", " + std::to_string(n) + "]",
                    mn2 = "[" + rows + ", " + std::to_string(n2) + "]";
  std::string t = dynamic ? "sym b in [1, 8]\n" : "";
  t += "weight \"wq\": " + i8_type(wq) + " = hex\"" + hex(wq) + "\"\n";
  const at::Tensor c255 = at::tensor(255.f), cm128 = at::tensor(int64_t{-128}),
                   c1 = at::tensor(1.f);
  for (const auto& [name, c] : {std::pair{"s", scales},
                                {"b", b},
                                {"w2", w2},
                                {"b2", b2},
                                {"c255", c255},
                                {"cm128", cm128},
                                {"c1", c1}}) {
    t += std::string("weight \"") + name + "\": " + type_of(c) + " = hex\"" + hex(c) + "\"\n";
  }
  t += "graph(\n    %x: f32" + mk + ",\n" + (dynamic ? "    %s0: int,\n" : "") +
       "    %wq: " + i8_type(wq) + " parameter \"wq\",\n    %s: " + type_of(scales) +
       " parameter \"s\",\n    %b: " + type_of(b) + " parameter \"b\",\n    %w2: " + type_of(w2) +
       " parameter \"w2\",\n    %b2: " + type_of(b2) + " parameter \"b2\",\n" +
       "    %c255: f32[] constant \"c255\",\n    %cm128: i64[] constant \"cm128\",\n" +
       "    %c1: f32[] constant \"c1\"\n) {\n";
  auto node = [&](const std::string& name, const std::string& type, const std::string& rhs) {
    t += "  %" + name + ": " + type + " = " + rhs + "\n";
  };
  node("xv", "f32" + mk, "aten::view.default(self=%x, size=[" + size + ", 64])");
  node("amin", "f32" + r, "aten::amin.default(self=%xv, dim=[1], keepdim=false)");
  node("amax", "f32" + r, "aten::amax.default(self=%xv, dim=[1], keepdim=false)");
  node("z0", "f32" + r, "aten::full_like.default(self=%amin, fill_value=0)");
  node("lo", "f32" + r, "aten::minimum.default(self=%amin, other=%z0)");
  node("z1", "f32" + r, "aten::full_like.default(self=%amax, fill_value=0)");
  node("hi", "f32" + r, "aten::maximum.default(self=%amax, other=%z1)");
  node("range", "f32" + r, "aten::sub.Tensor(self=%hi, other=%lo, alpha=1)");
  node("div", "f32" + r, "aten::div.Tensor(self=%range, other=%c255)");
  node("scale", "f32" + r, "aten::clamp.default(self=%div, min=1.1754943508222875e-38)");
  node("d1", "f32" + r, "aten::div.Tensor(self=%lo, other=%scale)");
  node("r1", "f32" + r, "aten::round.default(self=%d1)");
  node("zs", "f32" + r, "aten::sub.Tensor(self=%cm128, other=%r1, alpha=1)");
  node("zc", "f32" + r, "aten::clamp.default(self=%zs, min=-128, max=127)");
  node("zp", "i8" + r, "aten::_to_copy.default(self=%zc, dtype=dtype(i8))");
  node("xv2", "f32" + mk, "aten::view.default(self=%x, size=[" + size + ", 64])");
  node("sv", "f32" + col, "aten::view.default(self=%scale, size=[" + size + ", 1])");
  node("zv", "i8" + col, "aten::view.default(self=%zp, size=[" + size + ", 1])");
  node("rec", "f32" + col, "aten::reciprocal.default(self=%sv)");
  node("inv", "f32" + col, "aten::mul.Tensor(self=%rec, other=%c1)");
  node("xs", "f32" + mk, "aten::mul.Tensor(self=%xv2, other=%inv)");
  node("r2", "f32" + mk, "aten::round.default(self=%xs)");
  node("add", "f32" + mk, "aten::add.Tensor(self=%r2, other=%zv, alpha=1)");
  node("qc", "f32" + mk, "aten::clamp.default(self=%add, min=-128, max=127)");
  node("qcv", "f32" + mk, "aten::view.default(self=%qc, size=[" + size + ", 64])");
  node("q", "i8" + mk, "aten::_to_copy.default(self=%qcv, dtype=dtype(i8))");
  node("qv", "i8" + mk, "aten::view.default(self=%q, size=[" + size + ", 64])");
  node("sv2", "f32" + col, "aten::view.default(self=%scale, size=[" + size + ", 1])");
  node("zv2", "i8" + col, "aten::view.default(self=%zp, size=[" + size + ", 1])");
  node("qf", "f32" + mk, "aten::_to_copy.default(self=%qv, dtype=dtype(f32))");
  node("zf", "f32" + col, "aten::_to_copy.default(self=%zv2, dtype=dtype(f32))");
  node("dq", "f32" + mk, "aten::sub.Tensor(self=%qf, other=%zf, alpha=1)");
  node("xd", "f32" + mk, "aten::mul.Tensor(self=%dq, other=%sv2)");
  node("xdv", "f32" + mk, "aten::view.default(self=%xd, size=[" + size + ", 64])");
  node("wd", type_of(wq.to(at::kFloat)),
       "quantized_decomposed::dequantize_per_channel_group.default(input=%wq, scales=%s, "
       "zero_points=none, quant_min=-8, quant_max=7, dtype=dtype(i8), group_size=32, "
       "output_dtype=dtype(f32))");
  node("wt", type_of(wq.t().to(at::kFloat)), "aten::permute.default(self=%wd, dims=[1, 0])");
  node("y", "f32" + mn, "aten::addmm.default(self=%b, mat1=%xdv, mat2=%wt, beta=1, alpha=1)");
  node("w2t", type_of(w2.t()), "aten::permute.default(self=%w2, dims=[1, 0])");
  node("y2", "f32" + mn2, "aten::addmm.default(self=%b2, mat1=%y, mat2=%w2t, beta=1, alpha=1)");
  t += "  return (%y2)\n}\n";
  return t;
}

// torchao's 8da4w linear then a float one, in ATen (its decomposition's ops).
at::Tensor chain_reference(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& scales,
                           const at::Tensor& b, const at::Tensor& w2, const at::Tensor& b2) {
  const int64_t m = x.size(0);
  const at::Tensor lo = at::minimum(at::amin(x, {-1}), at::zeros({m}));
  const at::Tensor hi = at::maximum(at::amax(x, {-1}), at::zeros({m}));
  const at::Tensor scale = at::clamp((hi - lo) / 255.0, 1.1754943508222875e-38).view({m, 1});
  const at::Tensor zp =
      at::clamp(-128 - at::round(lo.view({m, 1}) / scale), -128, 127).to(at::kChar);
  const at::Tensor q =
      at::clamp(at::round(x * (at::reciprocal(scale) * 1.0)) + zp, -128, 127).to(at::kChar);
  const at::Tensor xd = (q.to(at::kFloat) - zp.to(at::kFloat)) * scale;
  const at::Tensor w = wq.to(at::kFloat) * scales.repeat_interleave(32, 1);
  return at::addmm(b2, at::addmm(b, xd, w.t()), w2.t());
}

// One delegate of a dynamic batch over named data that counts its reads; call() runs it at the
// batch of x (the program's %s0 an int argument: the delegate reads only the tensors' sizes).
class DynamicDelegate {
 public:
  DynamicDelegate(const Compiled& c, std::vector<CompileSpec> specs)
      : map_(&c.result.named_data), blob_(c.result.processed) {
    BackendInitContext ctx{&allocator_, "forward", &map_};
    FreeableBuffer buf(blob_.data(), blob_.size(), nullptr, nullptr);
    Result<DelegateHandle*> h = runtime_backend()->init(ctx, &buf, specs);
    EXPECT_TRUE(h.ok()) << last_error_message();
    if (h.ok()) handle_ = *h;
    taken_at_init_ = allocator_.handed_out();
  }
  ~DynamicDelegate() {
    if (handle_ != nullptr) runtime_backend()->destroy(handle_);
  }
  at::Tensor call(const at::Tensor& x, int64_t out_features) {
    const int64_t m = x.size(0);
    std::vector<float> out(static_cast<size_t>(8 * out_features), NAN);
    const int32_t xs[2] = {static_cast<int32_t>(m), static_cast<int32_t>(x.size(1))};
    const int32_t bound[2] = {8, static_cast<int32_t>(out_features)};
    at::Tensor xc = x.contiguous();
    Tensor tx = *Tensor::make(ScalarType::Float, xs, {}, xc.data_ptr());
    Tensor ty =
        *Tensor::make(ScalarType::Float, bound, {}, out.data(), ShapeDynamism::DynamicBound);
    EValue vx = EValue::from_tensor(&tx), vs = EValue::from_int(m), vy = EValue::from_tensor(&ty);
    std::vector<EValue*> args = {&vx, &vs, &vy};
    BackendExecuteContext ectx{nullptr};
    EXPECT_EQ(runtime_backend()->execute(ectx, handle_, args), Error::Ok) << last_error_message();
    EXPECT_EQ(ty.size(0), m);
    // A call never takes from the method allocator: a build for a new size uses the heap.
    EXPECT_EQ(allocator_.handed_out(), taken_at_init_);
    return at::from_blob(out.data(), {m, out_features}).clone();
  }
  const CountingMap& named() const { return map_; }
  DelegateSummary summary() const { return summarize(handle_); }

 private:
  CountingMap map_;
  std::vector<uint8_t> blob_;
  alignas(64) static inline uint8_t pool_[1 << 20];
  MemoryAllocator allocator_{pool_, sizeof(pool_)};
  DelegateHandle* handle_ = nullptr;
  size_t taken_at_init_ = 0;
};

// torchao's 8da4w linear of a dynamic batch, as torch.export writes it (its views read the
// batch's symbolic size), is claimed whole: one grouped integer linear that quantizes its own
// input, built for each batch size a call brings. Each call equals the static program of its
// size bit for bit, and ATen's within float32 rounding; the weights are read and packed once, at
// init, for every size (more sizes than the builds kept: evicted sizes come back).
TEST(CpuDynamicBatch, PerTokenQuantizedLinearBuildsShareWeights) {
  at::manual_seed(21);
  const int64_t k = 64, n = 40, n2 = 24;
  const at::Tensor wq = at::randint(-8, 8, {n, k}).to(at::kChar);
  const at::Tensor scales = at::rand({n, k / 32}) * 0.02 + 0.001;
  const at::Tensor b = at::randn({n}), w2 = at::randn({n2, n}) * 0.1, b2 = at::randn({n2});
  auto program = parse_text(chain_program("b<=8", wq, scales, b, w2, b2));
  ASSERT_NE(program, nullptr);
  // Every node claimed (the int8 views of the symbolic size too), and the graph two linears.
  const Compiled c = compile(*program);
  ASSERT_EQ(c.graph.num_symbols, 1u);
  ASSERT_EQ(c.graph.ops.size(), 2u);
  EXPECT_EQ(c.graph.ops[0].kind, OpKind::GroupQuantMatMul);
  EXPECT_EQ(c.graph.ops[0].group_quant_matmul().input_quant, InputQuant::PerToken);
  // The named data of the linears' weights (the grouped one's integers, the float one's).
  auto key_of = [&](const OpDesc& op) {
    return c.graph.weights[c.graph.tensors[op.inputs[1]].index].key;
  };
  const std::string wq_key = key_of(c.graph.ops[0]), w2_key = key_of(c.graph.ops[1]);
  for (bool own : {true, false}) {
    SCOPED_TRACE(own ? "Ember's kernels" : "ember_kernels=off");
    DynamicDelegate d(c, {switched("ember_kernels", own)});
    EXPECT_EQ(d.summary().dot_matmuls, own_kernels_supported() ? 1 : 0);
    const int wq_reads = d.named().reads(wq_key), w2_reads = d.named().reads(w2_key);
    // Read at init (twice where the bytes are off a cache line: looked at, then copied).
    EXPECT_GE(wq_reads, 1);
    EXPECT_GE(w2_reads, 1);
    for (int64_t m : {3, 8, 1, 5, 2, 7, 3, 6, 1}) {
      SCOPED_TRACE("batch " + std::to_string(m));
      const at::Tensor x = at::randn({m, k});
      const at::Tensor got = d.call(x, n2);
      const at::Tensor want = chain_reference(x, wq, scales, b, w2, b2);
      EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max().item<float>();
      auto fixed = parse_text(chain_program(std::to_string(m), wq, scales, b, w2, b2));
      ASSERT_NE(fixed, nullptr);
      const Compiled s = compile(*fixed);
      const std::vector<at::Tensor> alone = run(s, {x}, {want}, {switched("ember_kernels", own)});
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_TRUE(at::equal(got, alone[0])) << (got - alone[0]).abs().max().item<float>();
      // Packed at init: no build for another size reads the weights again.
      EXPECT_EQ(d.named().reads(wq_key), wq_reads);
      EXPECT_EQ(d.named().reads(w2_key), w2_reads);
    }
  }
}

}  // namespace
}  // namespace ember::cpu
