// The runtime's rules, as the cpu backend keeps them: what a delegate may and may not change of
// its caller's process.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

// Every test's run() (test/test_util.h) checks that execute makes no heap allocation with
// HeapCount; here, that the count can fail: it sees allocations, on this thread and on others.
TEST(CpuRuntimeRules, HeapCountSeesAllocations) {
  ember::testing::HeapCount heap;
  EXPECT_EQ(heap.count(), 0);
  auto one = std::make_unique<int>(1);
  EXPECT_EQ(heap.count(), 1);
  std::unique_ptr<int> other;
  std::thread t([&] { other = std::make_unique<int>(2); });  // the thread's state, and the int
  t.join();
  EXPECT_GE(heap.count(), 2);
  EXPECT_EQ(heap.onednn(), 0);
}

// A delegate runs oneDNN on its own thread count ("num_threads"), and leaves the calling
// thread's OpenMP thread count as it found it: no process state of the caller's changes.
TEST(CpuRuntimeRules, CallersOpenMpThreadsLeftAsFound) {
  at::Tensor x = at::randn({4, 8}), w = at::randn({8, 8});
  const at::Tensor want = at::relu(at::mm(x, w));
  Prog p;
  auto xi = p.input("x", x);
  auto mm = p.node("mm", want, "aten::mm.default(self=" + xi + ", mat2=" + p.weight("w", w) + ")");
  p.outputs = {p.node("y", want, "aten::relu.default(self=" + mm + ")")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  const Compiled c = compile(*program);
  static const std::string two = "2";
  const CompileSpec threads{"num_threads", {reinterpret_cast<const uint8_t*>(two.data()), 1}};
  const int before = omp_get_max_threads();
  omp_set_num_threads(3);
  auto out = run(c, {x}, {want}, {threads});
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(before);
  ASSERT_EQ(out.size(), 1u);
  expect_close(out[0], want, 1e-5, 1e-5);
}

// x, a 3x3 convolution by w and bias (padding 1), relu, flattened, times fc^T: a delegate with a
// convolution weight oneDNN reorders and a matrix its matmul reads; `want` gets ATen's result.
Prog conv_relu_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                      const at::Tensor& fc, at::Tensor* want) {
  const at::Tensor conv = at::relu(at::conv2d(x, w, bias, 1, 1));
  *want = at::mm(conv.reshape({1, -1}), fc.t());
  Prog p;
  auto c1 = p.node("c", conv,
                   "aten::convolution.default(input=" + p.input("x", x) +
                       ", weight=" + p.weight("w", w) + ", bias=" + p.weight("b", bias) +
                       ", stride=[1, 1], padding=[1, 1], dilation=[1, 1], transposed=false, "
                       "output_padding=[0, 0], groups=1)");
  auto r = p.node("r", conv, "aten::relu.default(self=" + c1 + ")");
  auto flat =
      p.node("f", conv.reshape({1, -1}), "aten::view.default(self=" + r + ", size=[1, -1])");
  auto t = p.node("t", fc.t(), "aten::t.default(self=" + p.weight("fc", fc) + ")");
  p.outputs = {p.node("y", *want, "aten::mm.default(self=" + flat + ", mat2=" + t + ")")};
  return p;
}

// The buffers a delegate keeps (weights in oneDNN's layouts, activations, the scratchpad) come
// from the method allocator init is given, as the summary counts them; the results are those of
// a delegate on the heap, bit for bit. A pool too small fails init, naming the bytes.
TEST(CpuRuntimeRules, BuffersComeFromTheMethodAllocator) {
  at::manual_seed(5);
  at::Tensor x = at::randn({1, 8, 12, 12}), w = at::randn({16, 8, 3, 3}), bias = at::randn({16});
  at::Tensor fc = at::randn({10, 16 * 12 * 12});
  at::Tensor want;
  auto program = parse_text(conv_relu_linear(x, w, bias, fc, &want).text());
  ASSERT_TRUE(program);
  const Compiled c = compile(*program);
  const std::vector<CompileSpec> own_kernels_off = {switched("ember_kernels", false)};

  DelegateSummary on_heap;
  const auto heap_out = run(c, {x}, {want}, own_kernels_off, &on_heap);
  ASSERT_EQ(heap_out.size(), 1u);
  expect_close(heap_out[0], want, 1e-4, 1e-4);
  EXPECT_FALSE(on_heap.from_method_allocator);

  std::vector<uint8_t> pool((size_t{16} << 20) + 64);
  auto* base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(pool.data()) + 63) & ~uintptr_t{63});
  MemoryAllocator allocator(base, size_t{16} << 20);
  DelegateSummary in_pool;
  const auto pool_out = run(c, {x}, {want}, own_kernels_off, &in_pool, &allocator);
  ASSERT_EQ(pool_out.size(), 1u);
  EXPECT_TRUE(at::equal(pool_out[0], heap_out[0]));
  EXPECT_TRUE(in_pool.from_method_allocator);
  // The convolution's and the matmul's weights, reordered: at least their floats.
  EXPECT_GE(in_pool.weight_bytes, static_cast<size_t>(w.numel() + fc.numel()) * 4);
  EXPECT_GT(in_pool.activation_bytes, 0u);
  EXPECT_EQ(in_pool.weight_bytes, on_heap.weight_bytes);
  const size_t kept = in_pool.weight_bytes + in_pool.activation_bytes + in_pool.scratchpad_bytes;
  // Each buffer starts on a cache line: at most 63 bytes of padding apiece.
  EXPECT_GE(allocator.handed_out(), kept);
  EXPECT_LT(allocator.handed_out(), kept + 64 * 64);

  MemoryAllocator tiny(base, 4096);
  BlobMap map(&c.result.named_data);
  BackendInitContext ctx{&tiny, "forward", &map};
  std::vector<uint8_t> blob = c.result.processed;
  FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = runtime_backend()->init(ctx, &buf, own_kernels_off);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find("the method allocator has no room for"),
            std::string::npos)
      << last_error_message();
}

// A method's delegates compute in one DelegateScratch (they run one at a time): each takes it
// from its start, so the method holds the largest delegate's activations and scratchpad, not the
// sum, and none of that comes from the method allocator. Two delegates of different graphs run
// interleaved over it, each call overwriting what the other left: every result is the one a
// delegate of its own memory computes, bit for bit. A scratch too small for a delegate leaves its
// buffers to the method allocator.
TEST(CpuRuntimeRules, DelegatesShareTheMethodScratch) {
  at::manual_seed(7);
  at::Tensor x = at::randn({1, 8, 12, 12}), w = at::randn({16, 8, 3, 3}), bias = at::randn({16});
  at::Tensor fc = at::randn({10, 16 * 12 * 12});
  at::Tensor want_a;
  auto pa = parse_text(conv_relu_linear(x, w, bias, fc, &want_a).text());
  at::Tensor y = at::randn({1, 8, 20, 20}), w2 = at::randn({16, 8, 3, 3}), b2 = at::randn({16});
  at::Tensor fc2 = at::randn({4, 16 * 20 * 20});
  at::Tensor want_b;
  auto pb = parse_text(conv_relu_linear(y, w2, b2, fc2, &want_b).text());
  ASSERT_TRUE(pa && pb);
  const Compiled ca = compile(*pa), cb = compile(*pb);
  DelegateSummary own_a, own_b;
  const auto alone_a = run(ca, {x}, {want_a}, {}, &own_a);
  const auto alone_b = run(cb, {y}, {want_b}, {}, &own_b);
  ASSERT_EQ(alone_a.size(), 1u);
  ASSERT_EQ(alone_b.size(), 1u);
  expect_close(alone_a[0], want_a, 1e-4, 1e-4);  // ATen's
  expect_close(alone_b[0], want_b, 1e-4, 1e-4);
  EXPECT_EQ(own_a.shared_scratch_bytes, 0u);  // no scratch given: its own buffers

  HeapAllocator allocator;
  DelegateScratch scratch;
  BlobMap map_a(&ca.result.named_data), map_b(&cb.result.named_data);
  const Backend* backend = runtime_backend();
  struct Delegate {
    DelegateHandle* handle = nullptr;
    std::vector<at::Tensor> tensors;  // the input, then the output
    std::vector<Tensor> views;
    std::vector<EValue> values;
    std::vector<EValue*> args;
  };
  auto init = [&](const Compiled& c, const NamedDataMap* map, const at::Tensor& in,
                  const at::Tensor& like, MemoryAllocator* method_allocator,
                  DelegateScratch* delegate_scratch, Delegate* d) {
    BackendInitContext ctx{method_allocator, "forward", map, delegate_scratch};
    std::vector<uint8_t> blob = c.result.processed;
    FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
    Result<DelegateHandle*> h = backend->init(ctx, &buf, {});
    ASSERT_TRUE(h.ok()) << last_error_message();
    d->handle = *h;
    d->tensors = {in.contiguous(), at::full_like(like, NAN)};
    for (auto& t : d->tensors) {
      std::vector<int32_t> sizes(t.sizes().begin(), t.sizes().end());
      d->views.push_back(*Tensor::make(ScalarType::Float, sizes, {}, t.data_ptr()));
    }
    for (auto& v : d->views) d->values.push_back(EValue::from_tensor(&v));
    for (auto& v : d->values) d->args.push_back(&v);
  };
  Delegate a, b;
  init(ca, &map_a, x, want_a, &allocator, &scratch, &a);
  init(cb, &map_b, y, want_b, &allocator, &scratch, &b);
  ASSERT_TRUE(a.handle != nullptr && b.handle != nullptr);
  const DelegateSummary sa = summarize(a.handle), sb = summarize(b.handle);
  EXPECT_GT(sa.shared_scratch_bytes, 0u);
  EXPECT_GT(sb.shared_scratch_bytes, sa.shared_scratch_bytes);  // the larger image
  EXPECT_GE(sa.shared_scratch_bytes, sa.activation_bytes + sa.scratchpad_bytes);
  EXPECT_EQ(scratch.reserved(), std::max(sa.shared_scratch_bytes, sb.shared_scratch_bytes));
  // The method allocator kept the weights alone.
  EXPECT_LT(allocator.handed_out(),
            sa.weight_bytes + sb.weight_bytes + sa.activation_bytes + sb.activation_bytes);
  BackendExecuteContext ectx{nullptr};
  for (Delegate* d : {&a, &b, &a, &b, &a}) {
    ASSERT_EQ(backend->execute(ectx, d->handle, d->args), Error::Ok) << last_error_message();
    const at::Tensor& got = d->tensors[1];
    EXPECT_TRUE(at::equal(got, d == &a ? alone_a[0] : alone_b[0]));
  }
  backend->destroy(a.handle);
  backend->destroy(b.handle);

  // Room for neither: the method allocator holds everything, as without a scratch.
  alignas(64) uint8_t little[256];
  DelegateScratch small(little, sizeof little);
  HeapAllocator other;
  Delegate c;
  init(ca, &map_a, x, want_a, &other, &small, &c);
  ASSERT_TRUE(c.handle != nullptr);
  const DelegateSummary sc = summarize(c.handle);
  EXPECT_LE(sc.shared_scratch_bytes, sizeof little);
  EXPECT_GE(other.handed_out(), sc.weight_bytes + sc.activation_bytes - sc.shared_scratch_bytes);
  ASSERT_EQ(backend->execute(ectx, c.handle, c.args), Error::Ok) << last_error_message();
  EXPECT_TRUE(at::equal(c.tensors[1], alone_a[0]));
  backend->destroy(c.handle);
}

// Ember's own kernels pack their weights into the method allocator too (PackedMatrix::pack's
// storage): a one-row linear layer, a matrix-vector step.
TEST(CpuRuntimeRules, OwnKernelsPackIntoTheMethodAllocator) {
  if (!own_kernels_supported()) GTEST_SKIP() << "Ember's kernels need AVX2";
  at::manual_seed(6);
  const at::Tensor x = at::randn({1, 300}), fc = at::randn({70, 300}), bias = at::randn({70});
  const at::Tensor want = at::addmm(bias, x, fc.t());
  Prog p;
  auto xi = p.input("x", x);
  auto t = p.node("t", fc.t(), "aten::t.default(self=" + p.weight("fc", fc) + ")");
  p.outputs = {p.node("y", want,
                      "aten::addmm.default(self=" + p.weight("b", bias) + ", mat1=" + xi +
                          ", mat2=" + t + ", beta=1, alpha=1)")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  const Compiled c = compile(*program);
  DelegateSummary on_heap;
  const auto heap_out = run(c, {x}, {want}, {}, &on_heap);
  ASSERT_EQ(heap_out.size(), 1u);
  EXPECT_EQ(on_heap.matvec_steps, 1);
  expect_close(heap_out[0], want, 1e-4, 1e-4);

  const size_t packed = PackedMatrix::storage_bytes(300, 70);
  std::vector<uint8_t> pool((size_t{1} << 20) + 64);
  auto* base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(pool.data()) + 63) & ~uintptr_t{63});
  MemoryAllocator allocator(base, size_t{1} << 20);
  DelegateSummary in_pool;
  const auto pool_out = run(c, {x}, {want}, {}, &in_pool, &allocator);
  ASSERT_EQ(pool_out.size(), 1u);
  EXPECT_EQ(in_pool.matvec_steps, 1);
  EXPECT_TRUE(at::equal(pool_out[0], heap_out[0]));
  EXPECT_GE(in_pool.weight_bytes, packed);
  EXPECT_GE(allocator.handed_out(), packed);

  // Room for less than the packed weight: refused, saying so.
  MemoryAllocator small(base, packed / 2);
  BlobMap map(&c.result.named_data);
  BackendInitContext ctx{&small, "forward", &map};
  std::vector<uint8_t> blob = c.result.processed;
  FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = runtime_backend()->init(ctx, &buf, {});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), Error::MemoryAllocationFailed);
  // The packer ran out inside Ember's kernel: the build says why, and nothing threw through it.
  EXPECT_NE(std::string(last_error_message()).find("the method allocator has no room for"),
            std::string::npos)
      << last_error_message();
}

// Named data over storage `offset` bytes past a cache line: counts what it hands out, what is
// freed of it and what is copied out of it.
class CountingMap final : public NamedDataMap {
 public:
  CountingMap(const std::vector<partition::NamedBlob>& blobs, size_t offset) {
    for (const auto& b : blobs) {
      auto& e = entries_.emplace_back();
      e.key = b.key;
      e.storage.resize(b.data.size() + 128);
      auto* at = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(e.storage.data()) + 63) &
                                            ~uintptr_t{63});
      e.data = {at + offset, b.data.size()};
      std::memcpy(e.data.data(), b.data.data(), b.data.size());
    }
  }
  Result<TensorLayout> get_tensor_layout(std::string_view) const override {
    return fail(Error::NotFound, "no layouts");
  }
  Result<FreeableBuffer> get_data(std::string_view key) const override {
    const Entry* e = find(key);
    if (e == nullptr) return fail(Error::NotFound, "missing");
    ++handed;
    return FreeableBuffer(
        e->data.data(), e->data.size(),
        [](void* self, const void*, size_t) { ++static_cast<CountingMap*>(self)->freed; },
        const_cast<CountingMap*>(this));
  }
  Error load_data_into(std::string_view key, void* buffer, size_t size) const override {
    const Entry* e = find(key);
    if (e == nullptr || e->data.size() < size) return fail(Error::NotFound, "missing");
    ++copies;
    std::memcpy(buffer, e->data.data(), size);
    return Error::Ok;
  }
  size_t num_keys() const override { return entries_.size(); }
  Result<std::string_view> key(size_t index) const override {
    return std::string_view(entries_[index].key);
  }

  mutable int handed = 0, freed = 0, copies = 0;

 private:
  struct Entry {
    std::string key;
    std::vector<uint8_t> storage;
    std::span<uint8_t> data;
  };
  const Entry* find(std::string_view key) const {
    for (const auto& e : entries_) {
      if (e.key == key) return &e;
    }
    return nullptr;
  }
  std::vector<Entry> entries_;
};

// A weight is read where the named data keeps it (with a program loaded by mmap, the file's
// pages), not copied, when that storage is on a cache line; what no step reads as it is (a
// weight reordered or packed into another buffer) is handed back during init, the rest when the
// delegate goes. Storage off that alignment is copied. The results are the same bit for bit.
TEST(CpuRuntimeRules, WeightsAreReadInPlaceFromAlignedNamedData) {
  at::manual_seed(7);
  at::Tensor x = at::randn({1, 8, 12, 12}), w = at::randn({16, 8, 3, 3}), bias = at::randn({16});
  at::Tensor fc = at::randn({10, 16 * 12 * 12});
  at::Tensor want;
  auto program = parse_text(conv_relu_linear(x, w, bias, fc, &want).text());
  ASSERT_TRUE(program);
  const Compiled c = compile(*program);
  const auto copied = run(c, {x}, {want});
  ASSERT_EQ(copied.size(), 1u);
  expect_close(copied[0], want, 1e-4, 1e-4);

  CountingMap aligned(c.result.named_data, 0);
  const auto in_place = run(c, {x}, {want}, {}, nullptr, nullptr, &aligned);
  ASSERT_EQ(in_place.size(), 1u);
  EXPECT_TRUE(at::equal(in_place[0], copied[0]));
  EXPECT_EQ(aligned.copies, 0);
  EXPECT_GE(aligned.handed, 3);  // w, b and fc
  EXPECT_EQ(aligned.freed, aligned.handed);

  // During init: the convolution's weight, reordered for oneDNN or packed, is handed back.
  CountingMap watched(c.result.named_data, 0);
  BackendInitContext ctx{nullptr, "forward", &watched};
  std::vector<uint8_t> blob = c.result.processed;
  FreeableBuffer buf(blob.data(), blob.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = runtime_backend()->init(ctx, &buf, {});
  ASSERT_TRUE(h.ok()) << last_error_message();
  EXPECT_GE(watched.freed, 1);
  runtime_backend()->destroy(*h);
  EXPECT_EQ(watched.freed, watched.handed);

  CountingMap misaligned(c.result.named_data, 4);
  const auto off_line = run(c, {x}, {want}, {}, nullptr, nullptr, &misaligned);
  ASSERT_EQ(off_line.size(), 1u);
  EXPECT_TRUE(at::equal(off_line[0], copied[0]));
  EXPECT_GE(misaligned.copies, 3);
  EXPECT_EQ(misaligned.freed, misaligned.handed);
}

}  // namespace
}  // namespace ember::cpu
