// A kernel call as a one-node program: the functional ATen op whose lowering is exactly that call,
// compiled with the compiler library (delegated to backends or not), loaded from memory by the
// runtime and run on the call's own input tensors.
//
//   ir::StatusOr<OneNodeProgram> p = build_one_node_program("aten::exp.out", inputs, outs);
//   ir::StatusOr<lower::CompileResult> r = lower::compile_program(*p->program, options);
//   ProgramRunner runner;  EMBER_TRY(runner.run(r->files.pte, p->inputs));  runner.output(0);
//
// Used by the backend conformance suite (backend_conformance_test.cc); no ATen here.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "runtime/core/evalue.h"
#include "runtime/executor/module.h"

namespace ember::conformance {

struct OneNodeProgram {
  std::unique_ptr<ir::Program> program;
  std::string functional;             // the node's op, "aten::add.Tensor"
  std::vector<const Tensor*> inputs;  // the graph inputs, in order: tensors of the call
  // True when the compiler lowers the node to exactly the kernel call; false for ATen's functional
  // op of the kernel that the compiler lowers another way (or refuses), said in `note`.
  bool lowered_as_called = true;
  std::string note;
};

// The schemas (as text) of every overload of an op ("aten::prod"), where the builtin table lacks
// some: ATen's own, as an exported program's operator table would bring them.
using SchemaSource = std::function<std::vector<std::string>(const std::string& op)>;

// The program whose one node is the functional op that lowers (ops::direct_kernel_form) to
// `kernel` called with `args` (its arguments before the outs, in kernel order), with results typed
// like `outs`; tensor arguments become graph inputs of their dtype, static shape and dim order,
// everything else literal arguments. The functional op is the one ATen's naming convention gives
// (`op.out` from `op.default` or `op.Tensor`, `op.X_out` from `op.X`), or another overload of the
// op (or of the view op of a `_copy` kernel) whose lowering is this call; failing that, ATen's
// functional op of the kernel (the overload with the kernel's arguments less its outs), which the
// compiler lowers another way or refuses (`lowered_as_called` false). Schemas come from the
// builtin table (compiler/ir/aten_schemas.inc), then `source`. An error says why there is none:
// an in-place kernel, an op no schema names, or no overload whose lowering is this call.
ir::StatusOr<OneNodeProgram> build_one_node_program(std::string_view kernel,
                                                    std::span<EValue* const> args,
                                                    std::span<const Tensor* const> outs,
                                                    const SchemaSource& source = {});

// Loads a .pte from memory into a Module (runtime/executor/module.h) and runs its "forward"
// method.
class ProgramRunner {
 public:
  // Loads a copy of `pte` and runs it on `inputs`.
  Error run(const std::vector<uint8_t>& pte, std::span<const Tensor* const> inputs);
  // Output `index` of the last run, valid until the next run.
  Result<EValue> output(size_t index) const;

 private:
  std::unique_ptr<Module> module_;
};

}  // namespace ember::conformance
