// The fuzz targets (LLVMFuzzerTestOneInput of runtime/executor/*_fuzz.cc,
// compiler/import/exported_program_fuzz.cc and backends/cpu/graph/graph_fuzz.cc) outside libFuzzer:
// in every gcc build, so that they compile there, and as CTest tests (fuzz_replay_*) that run
// their seed inputs, each also mutated `--mutations N` times (bytes overwritten, runs flipped, cut
// or repeated; deterministic from `--seed`), under ASan and UBSan in the sanitizer build.
// Coverage-guided fuzzing is libFuzzer's: scripts/fuzz SECONDS (docs/hardening.md).
//
//   program_replay [--mutations N] [--seed S] FILE_OR_DIR...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One random edit of `bytes`: an overwritten byte, a flipped bit run, a cut, or a repeated run.
void mutate(std::vector<uint8_t>& bytes, std::mt19937_64& rng) {
  if (bytes.empty()) {
    bytes.push_back(static_cast<uint8_t>(rng()));
    return;
  }
  const size_t at = rng() % bytes.size();
  const size_t len = 1 + rng() % std::min<size_t>(16, bytes.size() - at);
  switch (rng() % 4) {
    case 0:
      bytes[at] = static_cast<uint8_t>(rng());
      break;
    case 1:
      for (size_t i = at; i < at + len; ++i) bytes[i] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 2:
      bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                  bytes.begin() + static_cast<std::ptrdiff_t>(at + len));
      break;
    default: {
      const std::vector<uint8_t> run(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                     bytes.begin() + static_cast<std::ptrdiff_t>(at + len));
      bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), run.begin(), run.end());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 0;
  unsigned long long seed = 1;
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--mutations" || arg == "--seed") && i + 1 < argc) {
      if (arg == "--mutations") {
        mutations = std::strtol(argv[++i], nullptr, 10);
      } else {
        seed = std::strtoull(argv[++i], nullptr, 10);
      }
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg)) {
        if (e.is_regular_file()) inputs.push_back(e.path());
      }
    } else if (std::filesystem::is_regular_file(arg)) {
      inputs.emplace_back(arg);
    } else {
      std::fprintf(stderr, "error: %s is neither an option, a file nor a directory\n", arg.c_str());
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "error: no seed inputs\n");
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  std::mt19937_64 rng(seed);
  long runs = 0;
  for (const auto& path : inputs) {
    const std::vector<uint8_t> original = read_file(path);
    LLVMFuzzerTestOneInput(original.data(), original.size());
    ++runs;
    std::vector<uint8_t> bytes = original;
    for (long m = 0; m < mutations; ++m) {
      if (m % 8 == 0) bytes = original;  // short chains of edits from the seed
      mutate(bytes, rng);
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++runs;
    }
  }
  std::printf("%zu seed inputs, %ld runs, no failure\n", inputs.size(), runs);
  return 0;
}
