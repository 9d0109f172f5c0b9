#include "tools/compile.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "backends/builtin_compiler.h"
#include "compiler/emit/pte_writer.h"
#include "compiler/lower/pipeline.h"
#include "runtime/platform/loaders.h"
#include "tools/executorch_ops.h"
#include "tools/inspect.h"
#include "tools/verify.h"

namespace ember::tools {

int register_compiler_backends() {
  const ir::Status status = backends::register_builtin_compiler_backends();
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

namespace {

lower::CompileOptions options_of(const CompileCommand& command) {
  lower::CompileOptions options;
  for (const auto& [name, specs] : command.backends) {
    options.backends.push_back(name);
    auto& entries = options.compile_specs[name];
    for (const auto& [key, value] : specs) {
      entries.push_back({key, std::vector<uint8_t>(value.begin(), value.end())});
    }
    if (entries.empty()) options.compile_specs.erase(name);
  }
  return options;
}

}  // namespace

namespace {

void count_ops(const ir::Graph& g, std::map<std::string, size_t>& ops, size_t& nodes) {
  for (const ir::Node* n : g.nodes()) {
    ++nodes;
    ++ops[n->qualified_op()];
    for (size_t k = 0; k < n->num_subgraphs(); ++k) count_ops(*n->subgraph(k), ops, nodes);
  }
}

// Inputs (names, types, dynamic ranges), outputs, weights and operators of an imported program.
std::string describe_exported(const ir::Program& program, bool verbose) {
  const ir::Graph& g = program.graph();
  std::string s = "inputs:\n";
  size_t weights[4] = {};
  uint64_t weight_bytes = 0;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::InputSpec& spec = program.input_spec(i);
    if (spec.kind != ir::InputKind::UserInput) {
      ++weights[static_cast<size_t>(spec.kind)];
      if (const ir::Weight* w = program.find_weight(spec.target)) weight_bytes += w->nbytes;
      continue;
    }
    s += "  " + g.inputs()[i]->name() + ": " + ir::to_string(g.inputs()[i]->type()) + "\n";
  }
  for (const ir::Symbol& sym : program.symbols) {
    s += "  dynamic: " + sym.name + " in [" + std::to_string(sym.min) + ", " +
         std::to_string(sym.max) + "]\n";
  }
  s += "outputs:\n";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::OutputSpec& spec = program.output_spec(i);
    s += "  " + std::to_string(i) + ": " + ir::to_string(g.outputs()[i]->type());
    if (spec.kind != ir::OutputKind::UserOutput) {
      s += " (" + std::string(ir::output_kind_name(spec.kind)) + " of " + spec.target + ")";
    }
    s += "\n";
  }
  s += "weights: " + std::to_string(weights[1]) + " parameters, " + std::to_string(weights[2]) +
       " buffers, " + std::to_string(weights[3]) + " constants, " + std::to_string(weight_bytes) +
       " bytes\n";
  std::map<std::string, size_t> ops;
  size_t nodes = 0;
  count_ops(g, ops, nodes);
  std::vector<std::pair<std::string, size_t>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr size_t kOps = 12;  // the most frequent, unless --verbose
  s += "operators: " + std::to_string(nodes) + " nodes, " + std::to_string(ops.size()) +
       " distinct ops\n";
  for (size_t k = 0; k < sorted.size() && (verbose || k < kOps); ++k) {
    s += "  " + sorted[k].first + " x" + std::to_string(sorted[k].second) + "\n";
  }
  if (!verbose && sorted.size() > kOps) {
    s += "  ... " + std::to_string(sorted.size() - kOps) + " more (--verbose lists them)\n";
  }
  return s;
}

}  // namespace

int inspect_exported_command(const CompileCommand& command) {
  if (register_compiler_backends() != 0) return 1;
  ir::StatusOr<std::unique_ptr<ir::Program>> program = lower::load_program_file(command.model);
  if (!program.ok()) {
    std::fprintf(stderr, "error: %s\n", program.status().message().c_str());
    return 1;
  }
  const bool verbose = command.verbosity == Verbosity::Verbose;
  std::printf("exported program %s\n%s", command.model.c_str(),
              describe_exported(**program, verbose).c_str());
  ir::StatusOr<lower::CompileResult> r = lower::compile_file(command.model, options_of(command));
  if (!r.ok()) {
    std::fprintf(stderr, "error: Ember cannot compile it: %s\n", r.status().message().c_str());
    return 1;
  }
  std::fputs((verbose ? r->partition_report : r->partition_summary).c_str(), stdout);
  std::printf("compiles: %zu instructions, planned %llu bytes, weights %llu bytes",
              r->stats.instructions, static_cast<unsigned long long>(r->stats.planned_bytes),
              static_cast<unsigned long long>(r->stats.constant_bytes));
  if (!command.backends.empty()) {
    std::printf(", %zu delegate(s) with %llu bytes of named data", r->delegates.size(),
                static_cast<unsigned long long>(r->named_data_bytes));
  }
  std::printf("\n");
  return 0;
}

namespace {

// --verify: checks `r`'s delegates; with fallback, replaces `r` by the program compiled without
// the failing partitions. Non-zero when a delegate stays beyond the tolerance (nothing written).
int verify_and_fall_back(const CompileCommand& command, const lower::CompileOptions& options,
                         lower::CompileResult& r, bool quiet) {
  VerifyOptions v;
  v.tolerance = command.verify_tolerance;
  v.inputs = command.verify_inputs;
  v.seed = command.verify_seed;
  if (r.delegates.empty()) {
    if (!quiet) std::printf("verify: no delegate: every op runs on the portable kernels\n");
    return 0;
  }
  ir::StatusOr<VerifyReport> report = verify_delegates(command.model, options, r, v);
  if (!report.ok()) {
    std::fprintf(stderr, "error: --verify: %s\n", report.status().message().c_str());
    return 1;
  }
  if (!quiet) std::fputs(format_report(*report, v).c_str(), stdout);
  size_t failed = 0;
  const lower::CompileOptions fallback = without_failing(options, r, *report, v.tolerance, &failed);
  if (failed == 0 && report->whole <= v.tolerance) return 0;
  if (!command.verify_fallback) {
    std::fprintf(stderr,
                 "error: --verify: %zu delegate(s) beyond the tolerance %g (the whole program's "
                 "error is %g); nothing written. --verify=fallback runs those partitions on the "
                 "portable kernels; --verify-tolerance sets the bound\n",
                 failed, v.tolerance, report->whole);
    return 1;
  }
  ir::StatusOr<lower::CompileResult> again = lower::compile_file(command.model, fallback);
  if (!again.ok()) {
    std::fprintf(stderr, "error: --verify=fallback: %s\n", again.status().message().c_str());
    return 1;
  }
  if (!quiet) {
    std::printf(
        "verify: fallback: %zu partition(s) beyond the tolerance run on the portable "
        "kernels; the program again:\n",
        failed);
  }
  ir::StatusOr<VerifyReport> second = verify_delegates(command.model, fallback, *again, v);
  if (!second.ok()) {
    std::fprintf(stderr, "error: --verify=fallback: %s\n", second.status().message().c_str());
    return 1;
  }
  if (!quiet) std::fputs(format_report(*second, v).c_str(), stdout);
  size_t still = 0;
  without_failing(fallback, *again, *second, v.tolerance, &still);
  if (still > 0 || second->whole > v.tolerance) {
    std::fprintf(stderr,
                 "error: --verify=fallback: the program is still beyond the tolerance %g (whole "
                 "program error %g); nothing written\n",
                 v.tolerance, second->whole);
    return 1;
  }
  r = std::move(*again);
  return 0;
}

}  // namespace

int compile_command(const CompileCommand& command) {
  if (register_compiler_backends() != 0) return 1;
  lower::CompileOptions options = options_of(command);
  options.external_weights = !command.ptd.empty();
  options.keep_ir = !command.print_ir.empty();
  ir::StatusOr<lower::CompileResult> r = lower::compile_file(command.model, options);
  if (!r.ok()) {
    std::fprintf(stderr, "error: %s\n", r.status().message().c_str());
    return 1;
  }
  const bool quiet = command.verbosity == Verbosity::Quiet;
  const bool verbose = command.verbosity == Verbosity::Verbose;
  if (!quiet) std::fputs((verbose ? r->partition_report : r->partition_summary).c_str(), stdout);
  if (command.verify && verify_and_fall_back(command, options, *r, quiet) != 0) return 1;
  if (command.print_ir == "-") {
    std::fputs(r->ir.c_str(), stdout);
  } else if (!command.print_ir.empty()) {
    std::ofstream(command.print_ir) << r->ir;
  }
  if (emit::write_file(command.output, r->files.pte) != Error::Ok) {
    std::fprintf(stderr, "error: cannot write %s\n", command.output.c_str());
    return 1;
  }
  // A program without external weights still gets a valid (empty) .ptd when one is asked for.
  if (!command.ptd.empty() && r->files.ptd.empty()) r->files.ptd = emit::write_ptd({});
  if (!command.ptd.empty() && emit::write_file(command.ptd, r->files.ptd) != Error::Ok) {
    std::fprintf(stderr, "error: cannot write %s\n", command.ptd.c_str());
    return 1;
  }
  if (!quiet) {
    const lower::PlanStats& s = r->stats;
    const double ratio = s.lower_bound == 0 ? 1.0
                                            : static_cast<double>(s.planned_bytes) /
                                                  static_cast<double>(s.lower_bound);
    std::printf("compiled %s -> %s%s%s in %.3f s: %zu instructions\n", command.model.c_str(),
                command.output.c_str(), command.ptd.empty() ? "" : " + ", command.ptd.c_str(),
                r->seconds, s.instructions);
    std::printf(
        "memory: planned %llu bytes, activations %llu bytes, lower bound %llu bytes "
        "(planned/lower bound %.3f), state %llu bytes\n",
        static_cast<unsigned long long>(s.planned_bytes),
        static_cast<unsigned long long>(s.activation_bytes),
        static_cast<unsigned long long>(s.lower_bound), ratio,
        static_cast<unsigned long long>(s.state_bytes));
    std::printf("weights: %llu bytes in the .pte, %llu bytes in the .ptd\n",
                static_cast<unsigned long long>(s.constant_bytes),
                static_cast<unsigned long long>(s.external_bytes));
    if (!command.backends.empty()) {
      std::printf("delegates: %zu; backends' named data: %llu bytes, once per key, in the %s\n",
                  r->delegates.size(), static_cast<unsigned long long>(r->named_data_bytes),
                  command.ptd.empty() ? ".pte" : ".ptd");
    }
    for (const std::string& n : r->notes) std::printf("note: %s\n", n.c_str());
    if (verbose) {
      for (const std::string& n : r->details) std::printf("note: %s\n", n.c_str());
    } else if (!r->details.empty()) {
      std::printf("note: --verbose lists the %zu items behind these notes\n", r->details.size());
    }
  }
  // The written program, read back as a runtime would: whether ExecuTorch's runtime runs it too.
  BufferDataLoader loader(r->files.pte.data(), r->files.pte.size());
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    std::fprintf(stderr, "error: internal: the written program does not load: %s\n",
                 last_error_message());
    return 1;
  }
  Result<std::vector<std::string>> blockers = executorch_blockers(*program);
  if (quiet) {
    // Nothing to print: the program is written.
  } else if (blockers.ok() && blockers->empty()) {
    std::printf("ExecuTorch %s's runtime runs this program too\n", executorch_version());
  } else if (blockers.ok()) {
    std::printf("note: ExecuTorch %s's runtime cannot run this program (Ember's can):",
                executorch_version());
    for (size_t i = 0; i < blockers->size(); ++i)
      std::printf("%s %s", i ? ";" : "", (*blockers)[i].c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace ember::tools
