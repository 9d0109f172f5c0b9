// ExecuTorch's own program files load and run in every load mode with exactly the outputs the
// fixtures' README gives (bitwise: every value is exactly representable in fp32).
#include <cstring>

#include "runtime/executor/module.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

struct Case {
  const char* file;
  std::vector<std::vector<float>> inputs;
  std::vector<int32_t> input_shape;
  std::vector<float> expected;
};

// From shared/fixtures/executorch/README.md.
std::vector<Case> cases() {
  return {
      {"add.pte", {{1.0f}, {1.0f}}, {1}, {2.0f}},
      {"add.pte", {{2.0f}, {3.0f}}, {1}, {5.0f}},
      {"add.pte", {{13.25f}, {29.25f}}, {1}, {42.5f}},
      {"module_linear_no_constant_segment.pte", {{1, 2, 3, 4}}, {2, 2}, {5, 8, 11, 14}},
      {"module_linear_no_constant_segment.pte",
       {{0, -1, 0.5f, -2.5f}},
       {2, 2},
       {2, -1, 3.5f, -5.5f}},
      {"module_linear_no_constant_segment.pte", {{1, 1, 1, 1}}, {2, 2}, {5, 5, 5, 5}},
      {"add_one_with_header.pte", {{1, 2, 3}}, {3}, {2, 3, 4}},
      {"add_one_with_header.pte", {{-1.5f, 0, 100}}, {3}, {-0.5f, 1, 101}},
  };
}

enum class Mode { Buffer, File, Mmap, MmapMlock, MmapMlockIgnore };
const Mode kModes[] = {Mode::Buffer, Mode::File, Mode::Mmap, Mode::MmapMlock,
                       Mode::MmapMlockIgnore};

std::unique_ptr<DataLoader> open(Mode mode, const std::string& path, AlignedBytes* bytes) {
  switch (mode) {
    case Mode::Buffer:
      return std::make_unique<BufferDataLoader>(bytes->data.get(), bytes->size);
    case Mode::File:
      return std::make_unique<FileDataLoader>(std::move(*FileDataLoader::from(path.c_str())));
    case Mode::Mmap:
      return std::make_unique<MmapDataLoader>(std::move(*MmapDataLoader::from(path.c_str())));
    case Mode::MmapMlock:
      return std::make_unique<MmapDataLoader>(
          std::move(*MmapDataLoader::from(path.c_str(), MlockMode::UseMlock)));
    case Mode::MmapMlockIgnore:
      return std::make_unique<MmapDataLoader>(
          std::move(*MmapDataLoader::from(path.c_str(), MlockMode::UseMlockIgnoreErrors)));
  }
  return nullptr;
}

TEST(Fixtures, EveryFixtureEveryLoadModeGivesTheReadmeOutputsBitwise) {
  EMBER_REQUIRE_FIXTURES();
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  for (const Case& c : cases()) {
    const std::string path = fixture_dir() + "/" + c.file;
    AlignedBytes bytes(read_bytes(path));
    for (Mode mode : kModes) {
      SCOPED_TRACE(std::string(c.file) + " mode " + std::to_string(static_cast<int>(mode)));
      std::unique_ptr<DataLoader> loader = open(mode, path, &bytes);
      Result<Program> program = Program::load(loader.get());
      ASSERT_TRUE(program.ok()) << last_error_message();
      Result<MethodMeta> meta = program->method_meta("forward");
      ASSERT_TRUE(meta.ok());
      MethodMemory memory(*meta);
      Result<Method> method = program->load_method("forward", &memory.manager);
      ASSERT_TRUE(method.ok()) << last_error_message();
      std::vector<std::vector<float>> inputs = c.inputs;
      std::vector<Tensor> tensors;
      for (auto& in : inputs) tensors.push_back(float_tensor(in, c.input_shape));
      for (size_t i = 0; i < tensors.size(); ++i) {
        ASSERT_EQ(method->set_input(tensors[i], i), Error::Ok) << last_error_message();
      }
      ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
      Result<EValue> out = method->get_output(0);
      ASSERT_TRUE(out.ok() && out->is_tensor());
      const Tensor& t = out->to_tensor();
      ASSERT_EQ(t.numel(), static_cast<int64_t>(c.expected.size()));
      EXPECT_EQ(std::memcmp(t.data(), c.expected.data(), c.expected.size() * 4), 0);
      // Planned inputs are copied in: the caller's buffer is untouched.
      EXPECT_EQ(inputs, c.inputs);
    }
  }
}

TEST(Fixtures, ExactBytesOfAddOneCase) {
  EMBER_REQUIRE_FIXTURES();
  Module module(fixture_dir() + "/add.pte");
  std::vector<float> a{13.25f}, b{29.25f};
  Tensor ta = float_tensor(a, {1}), tb = float_tensor(b, {1});
  Result<std::vector<EValue>> out =
      module.forward({EValue::from_tensor(&ta), EValue::from_tensor(&tb)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  const uint8_t expected[4] = {0x00, 0x00, 0x2a, 0x42};
  EXPECT_EQ(std::memcmp((*out)[0].to_tensor().data(), expected, 4), 0);
}

TEST(Fixtures, MethodMetaDescribesTheFiles) {
  EMBER_REQUIRE_FIXTURES();
  struct Expect {
    const char* file;
    size_t inputs;
    std::vector<int32_t> shape;
    int64_t arena;
  };
  for (const Expect& e : {Expect{"add.pte", 2, {1}, 48},
                          Expect{"module_linear_no_constant_segment.pte", 1, {2, 2}, 32},
                          Expect{"add_one_with_header.pte", 1, {3}, 32}}) {
    Module module(fixture_dir() + "/" + e.file);
    Result<MethodMeta> meta = module.method_meta("forward");
    ASSERT_TRUE(meta.ok()) << last_error_message();
    EXPECT_EQ(meta->num_inputs(), e.inputs);
    EXPECT_EQ(meta->num_outputs(), 1u);
    Result<TensorInfo> in = meta->input_tensor_info(0);
    ASSERT_TRUE(in.ok());
    EXPECT_EQ(in->dtype, ScalarType::Float);
    EXPECT_EQ(std::vector<int32_t>(in->sizes.begin(), in->sizes.end()), e.shape);
    EXPECT_TRUE(in->memory_planned);
    ASSERT_EQ(meta->num_memory_planned_buffers(), 1u);
    EXPECT_EQ(*meta->memory_planned_buffer_size(0), e.arena);
  }
}

TEST(Fixtures, SmallerArenaThanPlannedIsRefusedWithTheSizeNeeded) {
  EMBER_REQUIRE_FIXTURES();
  AlignedBytes bytes(read_bytes(fixture_dir() + "/add.pte"));
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  alignas(16) uint8_t pool[4096], arena[32];
  MemoryAllocator method_allocator(pool, sizeof(pool));
  std::span<uint8_t> arenas[] = {{arena, sizeof(arena)}};
  HierarchicalAllocator planned(arenas);
  MemoryManager memory{&method_allocator, &planned, nullptr};
  Result<Method> method = program->load_method("forward", &memory);
  ASSERT_EQ(method.error(), Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find("48"), std::string::npos)
      << last_error_message();

  alignas(16) uint8_t tiny_pool[64], big_arena[48];
  MemoryAllocator tiny(tiny_pool, sizeof(tiny_pool));
  std::span<uint8_t> big[] = {{big_arena, sizeof(big_arena)}};
  HierarchicalAllocator planned_ok(big);
  MemoryManager small_pool{&tiny, &planned_ok, nullptr};
  EXPECT_EQ(program->load_method("forward", &small_pool).error(), Error::MemoryAllocationFailed);
}

TEST(Fixtures, WrongInputShapeOrDtypeNamesTheInput) {
  EMBER_REQUIRE_FIXTURES();
  Module module(fixture_dir() + "/module_linear_no_constant_segment.pte");
  Result<Method*> method = module.method("forward");
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<float> three{1, 2, 3};
  Tensor wrong_shape = float_tensor(three, {3});
  EXPECT_EQ((*method)->set_input(wrong_shape, 0), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0"), std::string::npos);
  std::vector<float> six{1, 2, 3, 4, 5, 6};
  Tensor wrong_dim = float_tensor(six, {2, 3});
  EXPECT_EQ((*method)->set_input(wrong_dim, 0), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0: dim 1 is 3"), std::string::npos)
      << last_error_message();
  int64_t ints[4] = {1, 2, 3, 4};
  int32_t sizes[] = {2, 2};
  Tensor wrong_dtype = *Tensor::make(ScalarType::Long, sizes, {}, ints);
  EXPECT_EQ((*method)->set_input(wrong_dtype, 0), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0: dtype is int64"), std::string::npos)
      << last_error_message();
  EXPECT_EQ((*method)->set_input(wrong_dtype, 1), Error::InvalidArgument);
  // Nothing was bound: executing now is refused, naming the unset input.
  EXPECT_EQ((*method)->execute(), Error::InvalidState);
  EXPECT_NE(std::string(last_error_message()).find("input 0"), std::string::npos);
}

TEST(Fixtures, HeaderClassification) {
  const uint8_t et12[8] = {0, 0, 0, 0, 'E', 'T', '1', '2'};
  const uint8_t et99[8] = {0, 0, 0, 0, 'E', 'T', '9', '9'};
  const uint8_t other[8] = {0, 0, 0, 0, 'P', 'K', 3, 4};
  EXPECT_EQ(Program::check_header(et12, 8), Program::HeaderStatus::CompatibleVersion);
  EXPECT_EQ(Program::check_header(et99, 8), Program::HeaderStatus::IncompatibleVersion);
  EXPECT_EQ(Program::check_header(other, 8), Program::HeaderStatus::NotPresent);
  EXPECT_EQ(Program::check_header(et12, 7), Program::HeaderStatus::ShortData);
}

}  // namespace
}  // namespace ember::testing
