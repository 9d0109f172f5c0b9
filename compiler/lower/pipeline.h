// `ember compile` as a library: exported program → passes → memory plan → .pte (+ .ptd).
//
//   CompileOptions o;  o.external_weights = true;
//   ir::StatusOr<CompileResult> r = compile_file("model.ep", o);
//   emit::write_file("model.pte", r->files.pte);  emit::write_file("model.ptd", r->files.ptd);
//
// Errors name the node, the op, the module path and the reason; the support check lists every
// unsupported node at once.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/emit/pte_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/lower/emit_program.h"
#include "compiler/partition/to_backend.h"
#include "compiler/passes/passes.h"

namespace ember::lower {

struct CompileOptions {
  bool external_weights = false;  // weights, and backends' named data, go to the .ptd
  bool keep_ir = false;           // fill CompileResult::ir with the lowered program's text
  // Registered compiler backends (compiler/partition/backend.h) to delegate to, in priority
  // order: each takes what it supports of what the earlier ones left.
  std::vector<std::string> backends;
  std::map<std::string, std::vector<partition::CompileSpecEntry>> compile_specs;  // by backend
};

struct CompileResult {
  emit::WrittenProgram files;
  PlanStats stats;
  std::vector<std::string> notes;    // passes' notes (passes::PassContext), one line each
  std::vector<std::string> details;  // item by item, where a note summarizes many (--verbose)
  std::string ir;
  double seconds = 0;  // compile time, import excluded
  // With backends: what each took and why the rest stays portable (describe_partitions).
  std::string partition_report;
  std::string partition_summary;  // the same, a line per partition and per kind of portable node
  // With backends: each delegate call, by its index (backend, partition index, nodes).
  struct Delegate {
    std::string backend;
    size_t partition = 0;
    std::vector<std::string> nodes;  // "name (op.overload)", program order
  };
  std::vector<Delegate> delegates;
  uint64_t named_data_bytes = 0;  // stored once per key, in the .pte or the .ptd
};

// Runs every pass on `program` (which it rewrites), then plans and writes it.
ir::StatusOr<CompileResult> compile_program(ir::Program& program, const CompileOptions& options);
// `path` is an exported program (.ep), torch.export.save's archive (.pt2, or any file starting
// with the ZIP magic; compiler/import/pt2.h), or IR text when it ends in `.ir` (tests of programs
// the exporter cannot capture on PyTorch 1.13: torch.cond, sym_ite).
ir::StatusOr<CompileResult> compile_file(const std::string& path, const CompileOptions& options);
// The program `compile_file` compiles, imported and verified, before any pass.
ir::StatusOr<std::unique_ptr<ir::Program>> load_program_file(const std::string& path);

// The step of the pipeline where --backend partitions become delegate calls
// (compiler/partition/to_backend.h); every other step is a registered pass
// (compiler/passes/pass_registry.h).
inline constexpr std::string_view kDelegationStep = "delegate_to_backends";
// The steps `ember compile` runs, in order: pass names and kDelegationStep.
std::span<const std::string_view> pipeline();

// The passes alone (import → lowered IR), for tests and `--print-ir`; `context`, when given,
// receives the passes' notes. With `backends`, their partitions become delegate calls after
// functionalization (to_backend.h) and `delegation` (required then) receives the blobs.
ir::Status run_passes(ir::Program& program, passes::PassContext* context,
                      const std::vector<partition::BackendRequest>& backends = {},
                      partition::DelegationResult* delegation = nullptr);

}  // namespace ember::lower
