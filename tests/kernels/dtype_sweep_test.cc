// Runs every dtype-sweep case (dtype_sweep.h) over the ten dtypes, fails on any disagreement with
// ATen, and writes the op x dtype table when EMBER_KERNELS_DOC names a file.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

const char* cell(SweepOutcome o) {
  switch (o) {
    case SweepOutcome::Match:
      return "✓";
    case SweepOutcome::MatchWidened:
      return "✓ʷ";
    case SweepOutcome::BothRefuse:
      return "·";
    default:
      return "✗";
  }
}

// Merging the cases of one label: a cell shows the worst outcome (a failure, then a refusal, then
// a widened-reference match, then a match).
int severity(SweepOutcome o) {
  switch (o) {
    case SweepOutcome::Match:
      return 0;
    case SweepOutcome::MatchWidened:
      return 1;
    case SweepOutcome::BothRefuse:
      return 2;
    default:
      return 3;
  }
}

// Registered portable kernels that no sweep case covers.
std::vector<std::string> uncovered_kernels() {
  std::set<std::string> labels;
  for (const SweepCase& c : sweep_cases()) labels.insert(c.label);
  std::vector<std::string> uncovered;
  for (const Kernel& k : portable_kernels()) {
    if (labels.count(k.name) == 0) uncovered.emplace_back(k.name);
  }
  std::sort(uncovered.begin(), uncovered.end());
  uncovered.erase(std::unique(uncovered.begin(), uncovered.end()), uncovered.end());
  return uncovered;
}

// The op x dtype table of docs/kernels.md must not fall behind the op list (ops.inc): every
// registered kernel needs a sweep case.
TEST(DtypeSweep, EveryKernelHasACase) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_FALSE(portable_kernels().empty());
  for (const std::string& name : uncovered_kernels()) {
    ADD_FAILURE() << name << " has no EMBER_SWEEP_CASE (tests/kernels/dtype_sweep.h)";
  }
}

TEST(DtypeSweep, EveryCaseAgreesWithATen) {
  ASSERT_FALSE(sweep_cases().empty());
  std::map<std::string, std::vector<SweepOutcome>> table;
  int matched = 0, widened = 0, refused = 0;
  for (const SweepCase& c : sweep_cases()) {
    std::vector<SweepOutcome>& row = table[c.label];
    const bool merge = !row.empty();  // several cases may share a label: a cell passes if all do
    if (!merge) row.assign(std::size(kSweepTypes), SweepOutcome::Match);
    for (size_t i = 0; i < std::size(kSweepTypes); ++i) {
      at::manual_seed(static_cast<uint64_t>(i));
      std::string why;
      const SweepOutcome o = c.run(kSweepTypes[i], &why);
      if (o == SweepOutcome::Match) ++matched;
      if (o == SweepOutcome::MatchWidened) ++widened;
      if (o == SweepOutcome::BothRefuse) ++refused;
      if (!sweep_passes(o)) ADD_FAILURE() << c.label << " / " << kSweepTypes[i] << ": " << why;
      if (!merge || severity(o) > severity(row[i])) row[i] = o;
    }
  }
  std::printf(
      "dtype sweep: %zu cases, %d (case, dtype) pairs match ATen, %d match ATen on widened inputs, "
      "%d refused by both\n",
      sweep_cases().size(), matched, widened, refused);
  const char* path = std::getenv("EMBER_KERNELS_DOC");
  if (path == nullptr || *path == '\0') return;
  std::ofstream doc(path);
  ASSERT_TRUE(doc.good()) << "cannot write " << path;
  doc << "| operator |";
  for (at::ScalarType t : kSweepTypes) doc << " " << to_string(to_ember(t)) << " |";
  doc << "\n|---|";
  for (size_t i = 0; i < std::size(kSweepTypes); ++i) doc << "---|";
  doc << "\n";
  for (const auto& [label, row] : table) {
    doc << "| `" << label << "` |";
    for (SweepOutcome o : row) doc << " " << cell(o) << " |";
    doc << "\n";
  }
  // Registered portable kernels that no case covers (EveryKernelHasACase fails on them): listed,
  // so that the table's gaps are visible.
  const std::vector<std::string> uncovered = uncovered_kernels();
  std::printf("kernels without a sweep case: %zu\n", uncovered.size());
  if (!uncovered.empty()) {
    doc << "\n## Registered kernels without a sweep case\n\n";
    for (const std::string& name : uncovered) doc << "- `" << name << "`\n";
  }
}

}  // namespace
}  // namespace ember::testing
