// Bad input never crashes: every truncation and every single-byte overwrite of each fixture, and
// of a .ptd the writer makes, ends in an Error or a run. CI runs this under ASan and UBSan, so an
// out-of-bounds read or undefined behaviour fails the test even when the result looks fine.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "compiler/emit/pte_writer.h"
#include "runtime/executor/flat_tensor_data_map.h"
#include "tests/runtime/load_and_run.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

class Corruption : public ::testing::TestWithParam<const char*> {};

TEST_P(Corruption, EveryTruncationIsRefused) {
  EMBER_REQUIRE_FIXTURES();
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  const std::vector<uint8_t> file = read_bytes(fixture_dir() + "/" + GetParam());
  ASSERT_FALSE(file.empty());
  ASSERT_TRUE(load_and_run(file).ran) << "the intact file must run";
  for (size_t length = 0; length < file.size(); ++length) {
    const std::vector<uint8_t> cut(file.begin(), file.begin() + static_cast<long>(length));
    EXPECT_FALSE(load_and_run(cut).loaded) << "a file cut to " << length << " bytes loaded";
  }
}

TEST_P(Corruption, EveryByteOverwrittenLoadsOrFailsCleanly) {
  EMBER_REQUIRE_FIXTURES();
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  const std::vector<uint8_t> file = read_bytes(fixture_dir() + "/" + GetParam());
  size_t refused = 0, ran = 0;
  for (size_t at = 0; at < file.size(); ++at) {
    for (uint8_t value : {uint8_t(file[at] ^ 0xff), uint8_t(0x00), uint8_t(0x7f), uint8_t(0x80)}) {
      if (value == file[at]) continue;
      std::vector<uint8_t> bad = file;
      bad[at] = value;
      const Outcome o = load_and_run(bad);
      refused += o.loaded ? 0 : 1;
      ran += o.ran ? 1 : 0;
    }
  }
  // Both outcomes occur: corrupted tables are refused, while a changed constant still runs.
  EXPECT_GT(refused, 0u);
  EXPECT_GT(ran, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Corruption,
                         ::testing::Values("add.pte", "module_linear_no_constant_segment.pte",
                                           "add_one_with_header.pte"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// A .ptd with two tensors (the second shares the first's bytes), then every corruption of it.
std::vector<uint8_t> sample_ptd() {
  std::vector<uint8_t> weight(4 * 6), bias(4 * 3);
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<uint8_t>(100 + i);
  return emit::write_ptd({{"linear.weight", ScalarType::Float, {2, 3}, {}, weight},
                          {"linear.bias", ScalarType::Float, {3}, {}, bias},
                          {"tied.weight", ScalarType::Float, {2, 3}, {}, weight}});
}

bool read_ptd(const std::vector<uint8_t>& file) {
  AlignedBytes bytes(file);
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<FlatTensorDataMap> map = FlatTensorDataMap::load(&loader);
  if (!map.ok()) return false;
  for (size_t k = 0; k < map->num_keys(); ++k) {
    Result<std::string_view> key = map->key(k);
    if (!key.ok()) continue;
    Result<TensorLayout> layout = map->get_tensor_layout(*key);
    Result<FreeableBuffer> data = map->get_data(*key);
    if (layout.ok() && data.ok() && data->size() >= layout->nbytes) {
      std::vector<uint8_t> copy(layout->nbytes);
      EXPECT_EQ(map->load_data_into(*key, copy.data(), copy.size()), Error::Ok);
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < data->size(); ++i)
        sink = static_cast<uint8_t>(sink ^ data->bytes()[i]);
    }
  }
  return true;
}

// Inputs the fuzz targets found (docs/hardening.md), each kept as a file that once crashed.
TEST(FuzzRegressions, EveryFindingLoadsOrFailsCleanly) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  const std::filesystem::path dir = EMBER_FUZZ_REGRESSIONS_DIR;
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    ASSERT_FALSE(file.empty()) << entry.path();
    // UBSan (asan build) fails the test on undefined behaviour.
    (void)load_and_run(file, /*max_instructions=*/100'000);
    ++files;
  }
  EXPECT_GE(files, 1u);
}

// Finding 1 (program_fuzz): a zero-size dim keeps numel and the byte size at 0, but the strides of
// the other dims multiplied up to a signed overflow (undefined behaviour) in compute_strides.
TEST(FuzzRegressions, StridesOfAnEmptyTensorWithHugeDimsDoNotOverflow) {
  const int32_t sizes[] = {0, 1 << 30, 1 << 30, 1 << 30};
  float storage = 0;
  Result<Tensor> t = Tensor::make(ScalarType::Float, sizes, {}, &storage);
  ASSERT_TRUE(t.ok()) << last_error_message();
  EXPECT_EQ(t->numel(), 0);
  EXPECT_EQ(t->nbytes(), 0u);
  EXPECT_EQ(t->strides()[3], 1);
  EXPECT_EQ(t->strides()[2], int64_t{1} << 30);
  EXPECT_EQ(t->strides()[1], int64_t{1} << 60);
}

// Finding 2 (program_fuzz): a padding of 11821949021847553 made the convolution's output width
// wrap, as int32, to the static out's own width, so the resize passed and the kernel wrote far
// past the out tensor. Padding, stride, dilation and groups are now bounded, and an output size
// that does not fit int32 is refused.
TEST(FuzzRegressions, ConvolutionRefusesAnOutputSizeThatWrapsInt32) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  std::ifstream in(std::string(EMBER_FUZZ_REGRESSIONS_DIR) + "/conv_padding_wraps_int32.pte",
                   std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  ASSERT_FALSE(file.empty());
  const Outcome outcome = load_and_run(file);
  EXPECT_TRUE(outcome.loaded);
  EXPECT_FALSE(outcome.ran);
  EXPECT_NE(std::string(last_error_message()).find("padding"), std::string::npos)
      << last_error_message();
}

// Finding 3 (program_fuzz, a timeout): a JumpFalse on a constant-false value jumping backwards
// loops until the 10,000,000-instruction cap, which with real kernels outlasts any caller's
// patience. Method::set_max_instructions lets a host lower the cap; execute then stops with
// InvalidState.
TEST(FuzzRegressions, ALoopingProgramStopsAtTheInstructionCap) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  std::ifstream in(std::string(EMBER_FUZZ_REGRESSIONS_DIR) + "/jump_loop_timeout.pte",
                   std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  ASSERT_FALSE(file.empty());
  const Outcome outcome = load_and_run(file, 1000);
  EXPECT_TRUE(outcome.loaded);
  EXPECT_FALSE(outcome.ran);
  EXPECT_NE(std::string(last_error_message()).find("stopped after 1000 instructions"),
            std::string::npos)
      << last_error_message();
}

// Finding 4 (program_fuzz): a pooling padding near 2^63 overflowed int64 in the output-size
// arithmetic (undefined behaviour). Pooling parameters are now bounded.
TEST(FuzzRegressions, PoolingRefusesParametersThatOverflow) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  std::ifstream in(std::string(EMBER_FUZZ_REGRESSIONS_DIR) + "/pool_padding_overflow.pte",
                   std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  ASSERT_FALSE(file.empty());
  const Outcome outcome = load_and_run(file, 100'000);
  EXPECT_TRUE(outcome.loaded);
  EXPECT_FALSE(outcome.ran);
  EXPECT_NE(std::string(last_error_message()).find("out of range"), std::string::npos)
      << last_error_message();
}

TEST(PtdCorruption, IntactFileReadsBack) {
  const std::vector<uint8_t> file = sample_ptd();
  AlignedBytes bytes(file);
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<FlatTensorDataMap> map = FlatTensorDataMap::load(&loader);
  ASSERT_TRUE(map.ok()) << last_error_message();
  ASSERT_EQ(map->num_keys(), 3u);
  Result<TensorLayout> layout = map->get_tensor_layout("linear.weight");
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->dtype, ScalarType::Float);
  EXPECT_EQ(std::vector<int32_t>(layout->sizes.begin(), layout->sizes.end()),
            (std::vector<int32_t>{2, 3}));
  Result<FreeableBuffer> bias = map->get_data("linear.bias");
  ASSERT_TRUE(bias.ok());
  ASSERT_EQ(bias->size(), 12u);
  EXPECT_EQ(bias->bytes()[0], 100);
  EXPECT_EQ(map->get_data("linear.missing").error(), Error::NotFound);
  EXPECT_NE(std::string(last_error_message()).find("'linear.missing' is missing from named data"),
            std::string::npos);
}

TEST(PtdCorruption, EveryTruncationAndOverwriteFailsCleanly) {
  const std::vector<uint8_t> file = sample_ptd();
  ASSERT_TRUE(read_ptd(file));
  for (size_t length = 0; length < file.size(); ++length) {
    EXPECT_FALSE(read_ptd({file.begin(), file.begin() + static_cast<long>(length)}))
        << "a .ptd cut to " << length << " bytes loaded";
  }
  size_t refused = 0;
  for (size_t at = 0; at < file.size(); ++at) {
    for (uint8_t value : {uint8_t(file[at] ^ 0xff), uint8_t(0x00), uint8_t(0x80)}) {
      if (value == file[at]) continue;
      std::vector<uint8_t> bad = file;
      bad[at] = value;
      refused += read_ptd(bad) ? 0 : 1;
    }
  }
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace ember::testing
