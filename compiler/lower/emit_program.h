// From lowered IR to the .pte writer's ProgramSpec: values, kernel calls in the out-variant
// convention, planned offsets, constants, mutable state and external weights.
//
//   ir::StatusOr<EmittedMethod> m = emit_method(program, {.external_weights = true});
//   emit::ProgramSpec spec{.methods = {m->method}};
//   Result<emit::WrittenProgram> files = emit::write_program(spec);
//
// Needs: lower_to_out_variants (every top-level node an out variant, a prim op or a delegate call).
// Tensors are planned in memory id 1 (plan/memory_planner.h); written buffers get exclusive planned
// storage with their initial bytes (Mutable) and a final copy into it; user inputs are unplanned
// (the caller's memory, so writes to them are seen by the caller); outputs are planned.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "compiler/emit/program_spec.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/partition/to_backend.h"

namespace ember::lower {

struct EmitOptions {
  bool external_weights = false;  // weights go to the .ptd, keyed `fqn:sha256:<hex>` (C21)
  std::string method_name = "forward";
  // The blobs of the program's delegate call nodes (compiler/partition/to_backend.h), by index.
  const std::vector<partition::LoweredDelegate>* delegates = nullptr;
};

struct PlanStats {
  uint64_t planned_bytes = 0;     // the arena
  uint64_t activation_bytes = 0;  // every planned tensor side by side
  uint64_t lower_bound = 0;       // the most bytes alive at one time
  uint64_t state_bytes = 0;       // mutable buffers (part of planned_bytes)
  uint64_t constant_bytes = 0;
  uint64_t external_bytes = 0;
  size_t instructions = 0;
};

struct EmittedMethod {
  emit::MethodSpec method;
  PlanStats stats;
};

// `ptd_keys` carries fqn → weight key (fqn:sha256:hex) across the methods of one export: the same
// name with other bytes is refused, naming it (C22).
ir::StatusOr<EmittedMethod> emit_method(const ir::Program& program, const EmitOptions& options,
                                        std::map<std::string, std::string>* ptd_keys);

}  // namespace ember::lower
