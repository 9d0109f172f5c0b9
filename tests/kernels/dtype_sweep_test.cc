// Runs every dtype-sweep case (dtype_sweep.h) over the ten dtypes, fails on any disagreement with
// ATen, and writes the op x dtype table when EMBER_KERNELS_DOC names a file.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

const char* cell(SweepOutcome o) {
  switch (o) {
    case SweepOutcome::Match:
      return "✓";
    case SweepOutcome::BothRefuse:
      return "·";
    default:
      return "✗";
  }
}

TEST(DtypeSweep, EveryCaseAgreesWithATen) {
  ASSERT_FALSE(sweep_cases().empty());
  std::map<std::string, std::vector<SweepOutcome>> table;
  int matched = 0, refused = 0;
  for (const SweepCase& c : sweep_cases()) {
    std::vector<SweepOutcome>& row = table[c.label];
    const bool merge = !row.empty();  // several cases may share a label: a cell passes if all do
    if (!merge) row.assign(std::size(kSweepTypes), SweepOutcome::Match);
    for (size_t i = 0; i < std::size(kSweepTypes); ++i) {
      at::manual_seed(static_cast<uint64_t>(i));
      std::string why;
      const SweepOutcome o = c.run(kSweepTypes[i], &why);
      if (o == SweepOutcome::Match) ++matched;
      if (o == SweepOutcome::BothRefuse) ++refused;
      if (o != SweepOutcome::Match && o != SweepOutcome::BothRefuse) {
        ADD_FAILURE() << c.label << " / " << kSweepTypes[i] << ": " << why;
      }
      if (!merge || row[i] == SweepOutcome::Match ||
          (row[i] == SweepOutcome::BothRefuse && o != SweepOutcome::Match)) {
        row[i] = o;
      }
    }
  }
  std::printf("dtype sweep: %zu cases, %d (case, dtype) pairs match ATen, %d refused by both\n",
              sweep_cases().size(), matched, refused);
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
  // Registered portable kernels that no case covers yet, so the table's gaps are visible.
  std::vector<std::string> uncovered;
  for (const Kernel& k : portable_kernels()) {
    if (table.count(k.name) == 0) uncovered.emplace_back(k.name);
  }
  std::sort(uncovered.begin(), uncovered.end());
  uncovered.erase(std::unique(uncovered.begin(), uncovered.end()), uncovered.end());
  std::printf("kernels without a sweep case: %zu\n", uncovered.size());
  if (!uncovered.empty()) {
    doc << "\n## Registered kernels without a sweep case\n\n"
        << "Tested by their own conformance tests where they have them, but not swept over "
           "dtypes:\n\n";
    for (const std::string& name : uncovered) doc << "- `" << name << "`\n";
  }
}

}  // namespace
}  // namespace ember::testing
