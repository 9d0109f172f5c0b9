// Module made from a program in memory: ExecuTorch's own add.pte, copied or borrowed, runs with
// the output the fixtures' README gives (bitwise), and a malformed buffer is an Error whose
// message names the buffer, never a crash.
#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/executor/module.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

// add.pte adds its two inputs; 13.25 + 29.25 == 42.5 (0x422a0000), from
// shared/fixtures/executorch/README.md.
void expect_adds(Module& module) {
  std::vector<float> a{13.25f}, b{29.25f};
  Tensor ta = float_tensor(a, {1}), tb = float_tensor(b, {1});
  Result<std::vector<EValue>> out =
      module.forward({EValue::from_tensor(&ta), EValue::from_tensor(&tb)});
  ASSERT_TRUE(out.ok()) << last_error_message();
  ASSERT_EQ(out->size(), 1u);
  const uint8_t expected[4] = {0x00, 0x00, 0x2a, 0x42};
  EXPECT_EQ(std::memcmp((*out)[0].to_tensor().data(), expected, 4), 0);
}

TEST(ModuleFromBuffer, CopyOwnsTheBytes) {
  EMBER_REQUIRE_FIXTURES();
  std::vector<uint8_t> bytes = read_bytes(fixture_dir() + "/add.pte");
  ASSERT_FALSE(bytes.empty());
  Module module{std::span<const uint8_t>(bytes)};
  // The caller's bytes are gone before the program loads: the Module reads its copy.
  std::fill(bytes.begin(), bytes.end(), uint8_t{0xff});
  bytes.clear();
  bytes.shrink_to_fit();
  Result<std::vector<std::string>> names = module.method_names();
  ASSERT_TRUE(names.ok()) << last_error_message();
  EXPECT_EQ(*names, std::vector<std::string>{"forward"});
  expect_adds(module);
  expect_adds(module);  // the loaded method runs again
}

TEST(ModuleFromBuffer, BorrowReadsTheCallersBytes) {
  EMBER_REQUIRE_FIXTURES();
  AlignedBytes bytes(read_bytes(fixture_dir() + "/add.pte"));
  Module module(std::span<const uint8_t>(bytes.data.get(), bytes.size), ModuleOptions{},
                BufferMode::Borrow);
  expect_adds(module);
  ASSERT_NE(module.program(), nullptr);
}

TEST(ModuleFromBuffer, MalformedBufferIsAClearError) {
  const std::string text = "not a program";
  const std::span<const uint8_t> garbage(reinterpret_cast<const uint8_t*>(text.data()),
                                         text.size());
  for (BufferMode mode : {BufferMode::Copy, BufferMode::Borrow}) {
    Module module(garbage, ModuleOptions{}, mode);
    clear_error_message();
    const Error e = module.load();
    EXPECT_NE(e, Error::Ok);
    const std::string message = last_error_message();
    EXPECT_NE(message.find("the program buffer (13 bytes)"), std::string::npos) << message;
    EXPECT_EQ(module.program(), nullptr);
    // Every call that loads reports it again; none crashes.
    EXPECT_FALSE(module.method_names().ok());
    EXPECT_FALSE(module.forward({}).ok());
  }
  Module empty{std::span<const uint8_t>()};
  EXPECT_NE(empty.load(), Error::Ok);
  EXPECT_NE(std::string(last_error_message()).find("the program buffer (0 bytes)"),
            std::string::npos)
      << last_error_message();
}

TEST(ModuleFromBuffer, TruncatedProgramIsAnErrorNamingTheBuffer) {
  EMBER_REQUIRE_FIXTURES();
  std::vector<uint8_t> bytes = read_bytes(fixture_dir() + "/add.pte");
  ASSERT_GT(bytes.size(), 64u);
  bytes.resize(bytes.size() / 2);
  Module module{std::span<const uint8_t>(bytes)};
  EXPECT_NE(module.load(), Error::Ok);
  EXPECT_NE(std::string(last_error_message()).find("the program buffer"), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace ember::testing
