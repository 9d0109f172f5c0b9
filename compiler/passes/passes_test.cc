// Golden tests of the passes: testdata/<pass>/<case>.ir holds the input program, a line
// "# ---- expected", then the printed program after the pass (or "# ---- error" and a substring
// of the expected error). Regenerate after an intended change with EMBER_UPDATE_GOLDEN=1, then
// review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"
#include "runtime/kernels/portable/portable.h"

namespace ember::passes {
namespace {

namespace fs = std::filesystem;
constexpr char kExpected[] = "# ---- expected\n";
constexpr char kError[] = "# ---- error\n";

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Case {
  std::string pass;
  fs::path file;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& dir : fs::directory_iterator(EMBER_PASSES_TESTDATA)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() == ".ir") out.push_back({dir.path().filename().string(), f.path()});
    }
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.file < b.file; });
  return out;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

class Golden : public testing::TestWithParam<Case> {};

TEST_P(Golden, Matches) {
  // Constant folding runs registered kernels (compiler/ops/kernel_eval.h): the portable ones, as in
  // `ember`.
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  const Case& c = GetParam();
  const std::string text = read(c.file);
  const bool wants_error = text.find(kError) != std::string::npos;
  const bool update = std::getenv("EMBER_UPDATE_GOLDEN") != nullptr;
  size_t split = text.find(wants_error ? kError : kExpected);
  if (split == std::string::npos && update) split = text.size();
  ASSERT_NE(split, std::string::npos) << c.file << " has no expected section";
  const std::string input = text.substr(0, split);
  const std::string expected =
      split == text.size()
          ? std::string()
          : text.substr(split + (wants_error ? sizeof(kError) : sizeof(kExpected)) - 1);
  auto program = ir::parse_program(input);
  ASSERT_TRUE(program.ok()) << program.status().message();
  const PassInfo* pass = find_pass(c.pass);
  ASSERT_NE(pass, nullptr) << "testdata/" << c.pass << " names no registered pass";
  PassContext ctx;
  ir::Status s = pass->run(**program, ctx);
  // Folding tests show weight bytes: the folded values are part of what they check.
  ir::PrintOptions options;
  options.weight_data = c.pass == "fold_constants" || c.pass == "dedupe_constants";
  std::string got = s.ok() ? ir::print_program(**program, options) : s.message() + "\n";
  if (update) {
    std::ofstream(c.file) << input << (s.ok() ? kExpected : kError) << got;
    return;
  }
  if (wants_error) {
    ASSERT_FALSE(s.ok()) << "expected an error, got:\n" << got;
    std::string want = expected;
    while (!want.empty() && want.back() == '\n') want.pop_back();
    EXPECT_NE(got.find(want), std::string::npos) << got;
    return;
  }
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got, expected) << c.file;
  // Passes before lowering keep the IR valid (lowered nodes are kernel calls the ATen schemas
  // do not describe).
  if (c.pass != "lower_to_out") {
    ir::Status valid = ir::verify(**program);
    EXPECT_TRUE(valid.ok()) << valid.message();
  }
  // The output is itself valid text IR.
  EXPECT_TRUE(ir::parse_program(got).ok()) << c.file;
}

INSTANTIATE_TEST_SUITE_P(Passes, Golden, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.pass + "_" + i.param.file.stem().string();
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// Every registered pass has golden tests, says what it guarantees, and needs only registered
// passes; no two share a name.
TEST(Registry, EveryPassHasGoldenTestsAndKnownNeeds) {
  std::set<std::string> names;
  for (const PassInfo* p : registered_passes()) {
    SCOPED_TRACE(p->name);
    EXPECT_TRUE(names.insert(p->name).second) << "registered twice";
    EXPECT_NE(p->run, nullptr);
    EXPECT_GT(std::string(p->guarantees).size(), 10u);
    for (const std::string& need : pass_needs(*p)) {
      EXPECT_NE(find_pass(need), nullptr) << "needs an unknown pass " << need;
    }
    bool has_case = false;
    for (const Case& c : cases()) has_case = has_case || c.pass == p->name;
    EXPECT_TRUE(has_case) << "no golden test in testdata/" << p->name;
  }
  EXPECT_GE(names.size(), 9u);  // a file whose EMBER_PASS line the table missed shows here
}

}  // namespace
}  // namespace ember::passes
