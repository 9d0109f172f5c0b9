// `ember compile` as a library: exported program → passes → memory plan → .pte (+ .ptd).
//
//   CompileOptions o;  o.external_weights = true;
//   ir::StatusOr<CompileResult> r = compile_file("model.ep", o);
//   emit::write_file("model.pte", r->files.pte);  emit::write_file("model.ptd", r->files.ptd);
//
// Errors name the node, the op, the module path and the reason; the support check lists every
// unsupported node at once.
#pragma once

#include <string>
#include <vector>

#include "compiler/emit/pte_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/lower/emit_program.h"

namespace ember::lower {

struct CompileOptions {
  bool external_weights = false;
  bool keep_ir = false;  // fill CompileResult::ir with the lowered program's text
};

struct CompileResult {
  emit::WrittenProgram files;
  PlanStats stats;
  std::vector<std::string> notes;
  std::string ir;
  double seconds = 0;  // compile time, import excluded
};

// Runs every pass on `program` (which it rewrites), then plans and writes it.
ir::StatusOr<CompileResult> compile_program(ir::Program& program, const CompileOptions& options);
// `path` is an exported program (.ep), or IR text when it ends in `.ir` (tests of programs the
// exporter cannot capture on PyTorch 1.13: torch.cond, sym_ite).
ir::StatusOr<CompileResult> compile_file(const std::string& path, const CompileOptions& options);

// The passes alone (import → lowered IR), for tests and `--print-ir`.
ir::Status run_passes(ir::Program& program, std::vector<std::string>* notes);

}  // namespace ember::lower
