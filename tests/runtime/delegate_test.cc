// Contract C25: a delegate that keeps pointers into its processed blob gets the blob kept alive
// and mapped until destroy; one that copies frees it during init, so the model is not held twice.
// Run in every load mode; under ASan a use after free fails the test.
#include <cstdio>
#include <cstring>

#include "compiler/emit/pte_writer.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

using emit::MethodSpec;
using emit::TensorSpec;

constexpr uint8_t kSentinel[8] = {0xe1, 0x7b, 0x3a, 0x90, 0x55, 0x0c, 0xd2, 0x4f};

// Wraps a loader and counts the buffers it handed out that are still alive.
class CountingLoader final : public DataLoader {
 public:
  explicit CountingLoader(const DataLoader* inner) : inner_(inner) {}
  Result<FreeableBuffer> load(size_t offset, size_t size, SegmentType type) const override {
    Result<FreeableBuffer> r = inner_->load(offset, size, type);
    if (!r.ok()) return r.error();
    auto* held = new Held{std::move(*r), this};
    ++live_;
    if (type == SegmentType::Backend) ++live_backend_;
    held->backend = type == SegmentType::Backend;
    return FreeableBuffer(held->buffer.data(), held->buffer.size(), &Held::release, held);
  }
  size_t size() const override { return inner_->size(); }
  int live() const { return live_; }
  int live_backend() const { return live_backend_; }

 private:
  struct Held {
    FreeableBuffer buffer;
    const CountingLoader* owner;
    bool backend = false;
    static void release(void* context, const void*, size_t) {
      auto* h = static_cast<Held*>(context);
      --h->owner->live_;
      if (h->backend) --h->owner->live_backend_;
      delete h;
    }
  };
  const DataLoader* inner_;
  mutable int live_ = 0;
  mutable int live_backend_ = 0;
};

// Reads the sentinel from its blob in init, every execute and destroy (retaining), or copies it
// in init and frees the blob (copying). Writes the sum of the sentinel bytes to its output.
class SentinelBackend final : public Backend {
 public:
  explicit SentinelBackend(bool retain) : retain_(retain) {}
  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec>) const override {
    EMBER_CHECK(processed->size() == sizeof(kSentinel), Error::InvalidProgram, "blob size");
    auto* state = static_cast<State*>(context.allocator->allocate(sizeof(State), 8));
    EMBER_CHECK(state != nullptr, Error::MemoryAllocationFailed, "state");
    state->blob = processed->bytes();
    std::memcpy(state->copy, processed->data(), sizeof(kSentinel));
    if (!retain_) {
      processed->free();
      state->blob = state->copy;
    }
    return reinterpret_cast<DelegateHandle*>(state);
  }
  Error execute(BackendExecuteContext&, DelegateHandle* handle,
                std::span<EValue*> args) const override {
    const auto* state = reinterpret_cast<State*>(handle);
    float sum = 0;
    for (size_t i = 0; i < sizeof(kSentinel); ++i) sum += static_cast<float>(state->blob[i]);
    args[1]->to_tensor().data<float>()[0] = sum;
    return Error::Ok;
  }
  void destroy(DelegateHandle* handle) const override {
    const auto* state = reinterpret_cast<State*>(handle);
    destroyed_intact = std::memcmp(state->blob, kSentinel, sizeof(kSentinel)) == 0;
  }
  mutable bool destroyed_intact = false;

 private:
  struct State {
    const uint8_t* blob;
    uint8_t copy[sizeof(kSentinel)];
  };
  bool retain_;
};

std::string write_program(const char* backend_id) {
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {1}, 0));
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {1}, 16));
  m.inputs = {x};
  m.outputs = {y};
  m.delegates.push_back({backend_id, {std::begin(kSentinel), std::end(kSentinel)}, {}});
  m.append<emit::DelegateCallSpec>(0, std::vector<int32_t>{x, y});
  m.arena_sizes = {32};
  Result<emit::WrittenProgram> w = emit::write_program(emit::ProgramSpec{{m}});
  EXPECT_TRUE(w.ok()) << last_error_message();
  const std::string path = ::testing::TempDir() + "/c25_" + backend_id + ".pte";
  EXPECT_EQ(emit::write_file(path, w->pte), Error::Ok);
  return path;
}

float expected_sum() {
  float s = 0;
  for (uint8_t b : kSentinel) s += b;
  return s;
}

void run_case(bool retain) {
  static SentinelBackend retaining(true), copying(false);
  static const bool registered = register_backend("C25Retaining", &retaining) == Error::Ok &&
                                 register_backend("C25Copying", &copying) == Error::Ok;
  ASSERT_TRUE(registered);
  SentinelBackend& backend = retain ? retaining : copying;
  const std::string path = write_program(retain ? "C25Retaining" : "C25Copying");
  for (int mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE("load mode " + std::to_string(mode));
    std::unique_ptr<DataLoader> inner;
    if (mode == 0) {
      inner = std::make_unique<FileDataLoader>(std::move(*FileDataLoader::from(path.c_str())));
    } else {
      const MlockMode mlock = mode == 1 ? MlockMode::NoMlock : MlockMode::UseMlockIgnoreErrors;
      inner =
          std::make_unique<MmapDataLoader>(std::move(*MmapDataLoader::from(path.c_str(), mlock)));
    }
    CountingLoader loader(inner.get());
    Result<Program> program = Program::load(&loader);
    ASSERT_TRUE(program.ok()) << last_error_message();
    backend.destroyed_intact = false;
    {
      MethodMemory memory(*program->method_meta("forward"));
      Result<Method> method = program->load_method("forward", &memory.manager);
      ASSERT_TRUE(method.ok()) << last_error_message();
      // The retaining backend's blob stays; the copying backend's is gone right after init.
      EXPECT_EQ(loader.live_backend(), retain ? 1 : 0);
      std::vector<float> in{0.0f};
      Tensor t = float_tensor(in, {1});
      for (int run = 0; run < 3; ++run) {
        ASSERT_EQ(method->set_input(t, 0), Error::Ok);
        ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
        EXPECT_EQ(method->get_output(0)->to_tensor().data<float>()[0], expected_sum());
      }
    }
    EXPECT_TRUE(backend.destroyed_intact) << "destroy read the blob";
    EXPECT_EQ(loader.live_backend(), 0) << "the blob is released with the method";
  }
}

// Takes kBytes from the method allocator at init (alignment 1: no padding), and nothing else.
class TakingBackend final : public Backend {
 public:
  static constexpr size_t kBytes = 1000;
  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer*,
                               std::span<const CompileSpec>) const override {
    void* p = context.allocator->allocate(kBytes, 1);
    EMBER_CHECK(p != nullptr, Error::MemoryAllocationFailed, "no room");
    return static_cast<DelegateHandle*>(p);
  }
  Error execute(BackendExecuteContext&, DelegateHandle*, std::span<EValue*>) const override {
    return Error::Ok;
  }
  void destroy(DelegateHandle*) const override {}
};

TEST(DelegateMemory, MethodReportsWhatEachDelegateTookFromItsAllocator) {
  static TakingBackend taking;
  ASSERT_EQ(register_backend("TakingBackend", &taking), Error::Ok);
  const std::string path = write_program("TakingBackend");
  Result<FileDataLoader> loader = FileDataLoader::from(path.c_str());
  ASSERT_TRUE(loader.ok());
  Result<Program> program = Program::load(&*loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  MethodMemory memory(*program->method_meta("forward"));
  const size_t before = memory.method_allocator->handed_out();
  Result<Method> method = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  ASSERT_EQ(method->num_delegates(), 1u);
  Result<Method::DelegateInfo> info = method->delegate_info(0);
  ASSERT_TRUE(info.ok()) << last_error_message();
  EXPECT_EQ(info->backend, "TakingBackend");
  EXPECT_EQ(info->method_allocator_bytes, TakingBackend::kBytes);
  EXPECT_NE(info->handle, nullptr);
  // The method's own share is what MethodMeta says it needs; the delegate's comes on top.
  EXPECT_EQ(memory.method_allocator->handed_out() - before,
            program->method_meta("forward")->method_allocator_bytes() + TakingBackend::kBytes);
  EXPECT_EQ(method->delegate_info(1).error(), Error::InvalidArgument);
}

TEST(DelegateMemory, HandedOutCountsPaddingAndResets) {
  alignas(64) uint8_t pool[256];
  MemoryAllocator a(pool, sizeof(pool));
  ASSERT_NE(a.allocate(3, 1), nullptr);
  ASSERT_NE(a.allocate(8, 8), nullptr);  // 5 bytes of padding first
  EXPECT_EQ(a.handed_out(), 16u);
  EXPECT_EQ(a.allocate(1000, 1), nullptr);
  EXPECT_EQ(a.handed_out(), 16u) << "a refused request takes nothing";
  a.reset();
  EXPECT_EQ(a.handed_out(), 0u);
}

TEST(DelegateBlob, C25_RetainingBackendKeepsItsBlobUntilDestroy) { run_case(true); }

TEST(DelegateBlob, C25_CopyingBackendFreesItsBlobDuringInit) { run_case(false); }

}  // namespace
}  // namespace ember::testing
