// The committed inputs of the blob parser's fuzz target (graph_fuzz.cc; fuzz_replay_cpu_graph,
// scripts/fuzz): the seeds (testdata/fuzz_seeds) parse, EMBER_WRITE_CPU_FUZZ_SEEDS=1 rewrites
// them from the graphs here; past findings (testdata/fuzz_regressions) stay refused.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/graph/graph_test_util.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

namespace ember::cpu::graph_test {
namespace {

// A vector of int64 at 4 mod 8 (found by cpu_graph_fuzz): flatbuffers 2.0.8's verifier checks
// the alignment of a vector's length only; reading the elements would be a misaligned load.
TEST(CpuGraphFormat, MisalignedVectorRefused) {
  std::ifstream in(std::filesystem::path(EMBER_CPU_TESTDATA) / "fuzz_regressions" /
                       "misaligned_long_vector.ecpu",
                   std::ios::binary);
  const std::vector<uint8_t> blob{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  ASSERT_FALSE(blob.empty());
  EXPECT_NE(reason(blob).find("a vector of 64-bit integers is misaligned"), std::string::npos)
      << reason(blob);
}

std::vector<std::pair<std::string, CpuGraph>> seed_graphs() {
  CpuGraph dynamic = small_cnn();
  dynamic.num_symbols = 1;
  for (TensorDesc& t : dynamic.tensors) {
    if (t.kind != TensorKind::Weight) t.batch_symbol = 0;
  }
  dynamic.tensors[0].dims[0] = 8;
  return {{"every_kind", every_kind()}, {"small_cnn", small_cnn()}, {"dynamic", dynamic}};
}

// The committed seeds of the fuzz target (fuzz_replay_cpu_graph, scripts/fuzz) are blobs this
// parse accepts; EMBER_WRITE_CPU_FUZZ_SEEDS=1 writes them again (after a format change).
TEST(CpuGraphFormat, FuzzSeedsParse) {
  const std::filesystem::path dir = std::filesystem::path(EMBER_CPU_TESTDATA) / "fuzz_seeds";
  if (std::getenv("EMBER_WRITE_CPU_FUZZ_SEEDS") != nullptr) {
    std::filesystem::create_directories(dir);
    for (const auto& [name, g] : seed_graphs()) {
      const std::vector<uint8_t> blob = serialize(g);
      std::ofstream out(dir / (name + ".ecpu"), std::ios::binary);
      out.write(reinterpret_cast<const char*>(blob.data()),
                static_cast<std::streamsize>(blob.size()));
    }
  }
  size_t seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<uint8_t> blob{std::istreambuf_iterator<char>(in),
                                    std::istreambuf_iterator<char>()};
    EXPECT_TRUE(parse(blob).ok()) << e.path() << ": " << last_error_message();
    ++seeds;
  }
  EXPECT_GE(seeds, seed_graphs().size());
}

}  // namespace
}  // namespace ember::cpu::graph_test
