// The backend conformance suite: every dtype-sweep case of the kernel conformance suite
// (tests/kernels/dtype_sweep.h) runs as a one-node program through each flow: `portable` (compiled,
// no backend), then each backend (`loopback`, `cpu`), compared with ATen by the sweep's own
// comparison. A node a backend claims (support()) and gets wrong is a failure; so is a node it
// leaves to the portable kernels of the compiled program and that then disagrees. Kernels with no
// functional form (in-place ones) are n/a; a compiler refusal of a call the kernel accepts is
// counted and listed, and the direct kernel call stays the reference there.
//
//   build/conf/tests/conformance/ember_backend_conformance            # every flow
//   EMBER_BACKENDS_DOC=t.md EMBER_BACKENDS_COLUMNS=c.tsv ...           # the tables of the docs
//
// scripts/gen_kernels_doc.sh writes docs/backends/conformance.md and the backend columns of
// docs/kernels.md from those two files.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <ATen/core/dispatch/Dispatcher.h>

#include "backends/builtin_compiler.h"
#include "backends/builtin_runtime.h"
#include "compiler/lower/pipeline.h"
#include "tests/conformance/one_node_program.h"
#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

struct Flow {
  const char* name;
  std::vector<std::string> backends;  // CompileOptions::backends
};

// Every flow, in the order of the tables' columns: the portable kernels alone, then each backend
// the build carries (backends/builtin_runtime.h), so a new backend is checked with no change here.
const std::vector<Flow>& flows() {
  static const std::vector<Flow> all = [] {
    std::vector<Flow> f = {{"portable", {}}};
    for (const std::string& name : backends::builtin_backend_names()) {
      f.push_back({name.c_str(), {name}});
    }
    return f;
  }();
  return all;
}

// Known backend bugs: each entry fails today, and the suite reports it with the values
// it got; remove an entry when its fix lands (the suite fails on an entry that passes). Nothing
// else may fail.
struct KnownFailure {
  const char* flow;
  const char* label;
  at::ScalarType dtype;
  const char* bug;
};
// None today: the NaN and infinity bugs of relu/hardtanh, max pooling and softmax are fixed
// (backends/cpu/kernels/nan_exact.h), and edge_cases.cc pins them.
constexpr std::array<KnownFailure, 0> kKnownFailures{};

const KnownFailure* known_failure(const std::string& flow, const std::string& label,
                                  at::ScalarType dtype) {
  for (const KnownFailure& k : kKnownFailures) {
    if (flow == k.flow && label == k.label && dtype == k.dtype) return &k;
  }
  return nullptr;
}

// What one kernel call did in a flow.
struct CallRecord {
  std::string functional;  // the program's node op; empty: no functional form (n/a)
  std::string not_applicable;
  std::string compile_error;  // the compiler refused; the direct kernel call ran instead
  std::string note;           // how the compiler lowers the node, when not to this kernel call
  bool claimed = false;       // the flow's backend took the node
};

// One (case, dtype) in one flow, for the tables. Merging the cases of one label keeps the highest.
enum class Cell : uint8_t {
  Portable,         // the compiled program's portable kernels ran it; matches ATen
  Claimed,          // the backend ran it; matches ATen
  BothRefuse,       // ATen refuses the dtype; so does Ember
  NotApplicable,    // no functional form: the direct kernel call ran
  CompilerRefused,  // the compiler refused a call the kernel accepts: the direct call ran
  KnownFailure,     // fails, listed in kKnownFailures
  Failure,
};

const char* cell_text(Cell c, bool backend) {
  switch (c) {
    case Cell::Portable:
      return backend ? "p" : "✓";
    case Cell::Claimed:
      return "✓";
    case Cell::BothRefuse:
      return "·";
    case Cell::NotApplicable:
      return "n/a";
    case Cell::CompilerRefused:
      return "c";
    case Cell::KnownFailure:
      return "✗ᵏ";
    case Cell::Failure:
      return "✗";
  }
  return "?";
}

const char* short_name(at::ScalarType t) {
  switch (t) {
    case at::kBool:
      return "bool";
    case at::kByte:
      return "u8";
    case at::kChar:
      return "i8";
    case at::kShort:
      return "i16";
    case at::kInt:
      return "i32";
    case at::kLong:
      return "i64";
    case at::kHalf:
      return "f16";
    case at::kBFloat16:
      return "bf16";
    case at::kFloat:
      return "f32";
    default:
      return "f64";
  }
}

using Row = std::vector<Cell>;  // one per kSweepTypes entry
// Per flow, per label: the merged cells. Filled by the flow tests, written by WriteTables.
std::map<std::string, std::map<std::string, Row>>& results() {
  static std::map<std::string, std::map<std::string, Row>> r;
  return r;
}

void register_backends() {
  static const bool done = [] {
    const ir::Status s = backends::register_builtin_compiler_backends();
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(backends::register_builtin_runtime_backends(), Error::Ok) << last_error_message();
    return true;
  }();
  (void)done;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Every overload ATen registers of an op, as schema text: the schemas the builtin table lacks
// (an exported program brings those of its ops along).
std::vector<std::string> aten_schemas(const std::string& op) {
  static const std::map<std::string, std::vector<std::string>> by_op = [] {
    std::map<std::string, std::vector<std::string>> m;
    c10::Dispatcher& d = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : d.getAllOpNames()) {
      c10::optional<c10::OperatorHandle> op = d.findSchema(name);
      if (!op) continue;
      std::ostringstream text;
      text << op->schema();
      m[name.name].push_back(text.str());
    }
    for (auto& [name, texts] : m) std::sort(texts.begin(), texts.end());
    return m;
  }();
  auto it = by_op.find(op);
  return it != by_op.end() ? it->second : std::vector<std::string>{};
}

// Runs `call` in `flow` as a one-node program; copies the program's outputs into the call's outs.
Error run_in_flow(const Flow& flow, KernelCall& call, CallRecord& record,
                  conformance::ProgramRunner& runner) {
  std::span<EValue* const> args = call.args();
  size_t num_inputs = 0;
  for (; num_inputs < args.size(); ++num_inputs) {
    const EValue& v = *args[num_inputs];
    if (v.is_tensor() && call.is_out(&v.to_tensor())) break;
    if (v.tag() == Tag::ListTensor && !v.to_tensor_list().empty() &&
        call.is_out(v.to_tensor_list()[0])) {
      break;
    }
  }
  std::vector<const Tensor*> outs;
  for (size_t i = 0; i < call.num_outs(); ++i) outs.push_back(&call.out(i));
  const auto build = [&] {
    return conformance::build_one_node_program(call.name(), args.first(num_inputs), outs,
                                               aten_schemas);
  };
  ir::StatusOr<conformance::OneNodeProgram> p = build();
  if (!p.ok()) {
    record.not_applicable = first_line(p.status().message());
    return call.run_direct();
  }
  record.functional = p->functional;
  record.note = p->note;
  lower::CompileOptions options;
  options.backends = flow.backends;
  ir::StatusOr<lower::CompileResult> r = lower::compile_program(*p->program, options);
  if (!r.ok()) {
    record.compile_error = r.status().message();
    for (char& ch : record.compile_error) ch = ch == '\n' ? ' ' : ch;
    return call.run_direct();
  }
  record.claimed = !r->delegates.empty();
  // A backend takes some nodes of several results only when the others are unused (max pooling's
  // indices, normalization statistics), as in most models: then the program returns the first
  // result alone, and the other outs come from the direct kernel call (each out is still
  // compared with ATen).
  size_t num_results = call.num_outs();
  if (!record.claimed && !flow.backends.empty() && call.num_outs() > 1) {
    ir::StatusOr<conformance::OneNodeProgram> first = build();
    for (size_t i = call.num_outs(); first.ok() && i-- > 1;) {
      ir::Status erased = first->program->erase_output(i);
      EXPECT_TRUE(erased.ok()) << erased.message();
    }
    if (first.ok()) {
      ir::StatusOr<lower::CompileResult> rf = lower::compile_program(*first->program, options);
      if (rf.ok() && !rf->delegates.empty()) {
        EMBER_TRY(call.run_direct());
        p = std::move(first);
        r = std::move(rf);
        record.claimed = true;
        num_results = 1;
      }
    }
  }
  EMBER_TRY(runner.run(r->files.pte, p->inputs));
  for (size_t i = 0; i < num_results; ++i) {
    Result<EValue> got = runner.output(i);
    if (!got.ok()) return got.error();
    if (!got->is_tensor()) return fail(Error::InvalidProgram, "output %zu is not a tensor", i);
    const Tensor& from = got->to_tensor();
    Tensor& to = call.mutable_out(i);
    if (from.dtype() != to.dtype()) {
      return fail(Error::InvalidProgram, "output %zu has dtype %s, the call's out %s", i,
                  to_string(from.dtype()), to_string(to.dtype()));
    }
    if (!std::equal(from.sizes().begin(), from.sizes().end(), to.sizes().begin(),
                    to.sizes().end())) {
      EMBER_TRY(to.resize(from.sizes()));  // refused for a static out: the shapes differ
    }
    if (from.numel() > 0) aten_view(to).copy_(aten_view(from));
  }
  return Error::Ok;
}

struct Counts {
  int claimed = 0, portable = 0, refused = 0, not_applicable = 0, compiler_refused = 0, known = 0,
      failed = 0;
};

// Every sweep case at every dtype through the flow called `name`.
void run_flow(std::string_view name) {
  const auto found =
      std::find_if(flows().begin(), flows().end(), [&](const Flow& f) { return name == f.name; });
  ASSERT_NE(found, flows().end()) << name;
  const Flow& flow = *found;
  register_backends();
  ASSERT_FALSE(sweep_cases().empty());
  conformance::ProgramRunner runner;
  std::vector<CallRecord> records;
  kernel_call_flow() = [&](KernelCall& call) {
    return run_in_flow(flow, call, records.emplace_back(), runner);
  };
  struct ResetFlow {
    ~ResetFlow() { kernel_call_flow() = nullptr; }
  } reset_flow;
  std::map<std::string, Row>& table = results()[flow.name];
  std::set<std::pair<std::string, size_t>> failing;  // (label, dtype index) with a failure
  std::set<std::string> not_applicable, lowered_otherwise;
  std::map<std::string, std::string> compiler_refusals;  // "label: message" -> dtypes
  Counts n;
  const auto start = std::chrono::steady_clock::now();
  for (const SweepCase& c : sweep_cases()) {
    Row& row = table[c.label];
    if (row.empty()) row.assign(std::size(kSweepTypes), Cell::Portable);
    for (size_t i = 0; i < std::size(kSweepTypes); ++i) {
      const at::ScalarType dtype = kSweepTypes[i];
      at::manual_seed(static_cast<uint64_t>(i));  // the kernel suite's inputs
      records.clear();
      std::string why;
      const SweepOutcome o = c.run(dtype, &why);
      bool na = !records.empty(), claimed = false;
      std::string compile_error, functional, note;
      for (const CallRecord& r : records) {
        na = na && !r.not_applicable.empty();
        claimed = claimed || r.claimed;
        if (!r.compile_error.empty()) compile_error = r.compile_error;
        if (!r.functional.empty()) functional = r.functional;
        if (!r.note.empty()) note = r.note;
      }
      if (!note.empty()) lowered_otherwise.insert(c.label + ": " + note);
      Cell cell = claimed ? Cell::Claimed : Cell::Portable;
      if (!sweep_passes(o)) {
        failing.insert({c.label, i});
        const KnownFailure* k = known_failure(flow.name, c.label, dtype);
        cell = k != nullptr ? Cell::KnownFailure : Cell::Failure;
        const std::string where = std::string(flow.name) + " / " + c.label + " (" + functional +
                                  (claimed ? ", claimed" : ", portable") + ") / " +
                                  short_name(dtype) + ": " + why;
        if (k != nullptr) {
          std::printf("known failure (%s): %s\n", k->bug, where.c_str());
        } else {
          ADD_FAILURE() << where;
        }
      } else if (o == SweepOutcome::BothRefuse) {
        cell = Cell::BothRefuse;
      } else if (na) {
        cell = Cell::NotApplicable;
        not_applicable.insert(c.label + ": " + records.front().not_applicable);
      } else if (!compile_error.empty()) {
        cell = Cell::CompilerRefused;
        std::string& dtypes = compiler_refusals[c.label + ": " + compile_error];
        dtypes += (dtypes.empty() ? "" : " ") + std::string(short_name(dtype));
      }
      switch (cell) {
        case Cell::Claimed:
          ++n.claimed;
          break;
        case Cell::Portable:
          ++n.portable;
          break;
        case Cell::BothRefuse:
          ++n.refused;
          break;
        case Cell::NotApplicable:
          ++n.not_applicable;
          break;
        case Cell::CompilerRefused:
          ++n.compiler_refused;
          break;
        case Cell::KnownFailure:
          ++n.known;
          break;
        case Cell::Failure:
          ++n.failed;
          break;
      }
      if (cell > row[i]) row[i] = cell;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const KnownFailure& k : kKnownFailures) {
    if (flow.name != std::string(k.flow)) continue;
    size_t i = 0;
    while (i < std::size(kSweepTypes) && kSweepTypes[i] != k.dtype) ++i;
    EXPECT_TRUE(failing.count({k.label, i}) != 0)
        << flow.name << " / " << k.label << " / " << short_name(k.dtype)
        << " passes now: remove it from kKnownFailures";
  }
  for (const std::string& s : not_applicable) std::printf("%s: n/a: %s\n", flow.name, s.c_str());
  for (const std::string& s : lowered_otherwise) std::printf("%s: %s\n", flow.name, s.c_str());
  for (const auto& [what, dtypes] : compiler_refusals) {
    std::printf("%s: the compiler refuses %s (%s)\n", flow.name, what.c_str(), dtypes.c_str());
  }
  std::printf(
      "%s: %zu cases x %zu dtypes in %.1f s: %d claimed by the backend, %d portable, %d refused "
      "by ATen and Ember, %d n/a, %d refused by the compiler, %d known failures, %d failures\n",
      flow.name, sweep_cases().size(), std::size(kSweepTypes), seconds, n.claimed, n.portable,
      n.refused, n.not_applicable, n.compiler_refused, n.known, n.failed);
}

// Every flow in the order of flows() (one test, so that WriteTables, next, runs after all of them);
// each flow's failures name it.
TEST(BackendConformance, EveryFlow) {
  for (const Flow& f : flows()) {
    SCOPED_TRACE(std::string("flow ") + f.name);
    run_flow(f.name);
  }
}

// The dtypes a row's cells of `which` cover, as "all" (every dtype ATen runs), a list, or "—".
std::string dtypes_with(const Row& row, std::initializer_list<Cell> which) {
  std::string list;
  size_t hit = 0, runs = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    runs += row[i] != Cell::BothRefuse ? 1 : 0;
    if (std::find(which.begin(), which.end(), row[i]) == which.end()) continue;
    ++hit;
    list += (list.empty() ? "" : " ") + std::string(short_name(kSweepTypes[i]));
  }
  if (hit == 0) return "";
  return hit == runs ? "all" : list;
}

// One column cell of docs/kernels.md: what a flow does with a kernel, over the dtypes.
std::string summary(const Row& row, bool backend) {
  if (std::all_of(row.begin(), row.end(),
                  [](Cell c) { return c == Cell::NotApplicable || c == Cell::BothRefuse; })) {
    return std::find(row.begin(), row.end(), Cell::NotApplicable) != row.end() ? "n/a" : "·";
  }
  std::string s = dtypes_with(
      row, {backend ? Cell::Claimed : Cell::Portable, Cell::KnownFailure, Cell::Failure});
  const std::string refused = dtypes_with(row, {Cell::CompilerRefused});
  if (s.empty() && refused == "all") return "c";
  if (s.empty()) s = "—";
  if (!refused.empty()) s += " (c: " + refused + ")";
  const std::string known = dtypes_with(row, {Cell::KnownFailure});
  if (!known.empty()) s += " ✗ᵏ " + known;
  const std::string failed = dtypes_with(row, {Cell::Failure});
  if (!failed.empty()) s += " ✗ " + failed;
  return s;
}

// Writes the tables when EMBER_BACKENDS_DOC / EMBER_BACKENDS_COLUMNS name files (after every flow).
TEST(BackendConformance, WriteTables) {
  const char* doc_path = std::getenv("EMBER_BACKENDS_DOC");
  const char* columns_path = std::getenv("EMBER_BACKENDS_COLUMNS");
  const bool doc = doc_path != nullptr && *doc_path != '\0';
  const bool columns = columns_path != nullptr && *columns_path != '\0';
  if (!doc && !columns) GTEST_SKIP() << "EMBER_BACKENDS_DOC / EMBER_BACKENDS_COLUMNS not set";
  std::vector<std::string> names;
  for (const Flow& f : flows()) names.emplace_back(f.name);
  for (const std::string& f : names) ASSERT_TRUE(results().count(f)) << "the " << f << " flow";
  if (doc) {
    std::ofstream out(doc_path);
    ASSERT_TRUE(out.good()) << "cannot write " << doc_path;
    for (const std::string& f : names) {
      out << "## `" << f << "`\n\n| operator |";
      for (at::ScalarType t : kSweepTypes) out << " " << short_name(t) << " |";
      out << "\n|---|";
      for (size_t i = 0; i < std::size(kSweepTypes); ++i) out << "---|";
      out << "\n";
      for (const auto& [label, row] : results()[f]) {
        out << "| `" << label << "` |";
        for (Cell c : row) out << " " << cell_text(c, f != "portable") << " |";
        out << "\n";
      }
      out << "\n";
    }
  }
  if (columns) {
    std::ofstream out(columns_path);
    ASSERT_TRUE(out.good()) << "cannot write " << columns_path;
    out << "operator";
    for (const std::string& f : names) out << "\t" << (f == "portable" ? "compiled" : f);
    out << "\n";
    for (const auto& [label, row] : results()[names[0]]) {
      out << label;
      for (const std::string& f : names)
        out << "\t" << summary(results()[f][label], f != "portable");
      out << "\n";
    }
  }
}

}  // namespace
}  // namespace ember::testing

// The executable holds the kernel suite's test files (for their sweep cases); only this suite runs
// unless --gtest_filter says otherwise.
int main(int argc, char** argv) {
  ::testing::GTEST_FLAG(filter) = "BackendConformance.*";
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
