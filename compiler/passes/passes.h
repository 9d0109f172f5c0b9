// The compiler's IR passes, one per file (compiler rule 2), each recursing into subgraphs (C4).
//
//   PassContext ctx;                                     // collects notes and statistics
//   EMBER_IR_RETURN_IF_ERROR(remove_aliases(program, ctx));
//   EMBER_IR_RETURN_IF_ERROR(find_pass("lower_to_out")->run(program, ctx));  // pass_registry.h
//
// Each pass registers itself (name, function, what it needs and guarantees) with an EMBER_PASS
// line in its file (pass_registry.h); the order `ember compile` runs them in is one list of
// names, compiler/lower/pipeline.cc. Delegate call nodes (compiler/ops/op_table.h, kDelegateCallOp)
// pass through every pass unchanged. Every error names the node, the op, the module path and the
// reason.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::passes {

struct PassContext {
  std::vector<std::string> notes;    // what passes decided that a user may want to know
  std::vector<std::string> details;  // the same, item by item, where a note summarizes many
  int folded_nodes = 0;
  int removed_nodes = 0;
  // Set once the backends have partitioned the program (with or without any): fold_constants
  // then folds the dequantizes of weights that no kernel of ExecuTorch's runtime computes.
  bool delegated = false;
};

// The passes, for direct calls (tests, backends); what each needs and guarantees is its EMBER_PASS
// line, in its file.
ir::Status remove_aliases(ir::Program& program, PassContext& ctx);
ir::Status drop_assertions(ir::Program& program, PassContext& ctx);
ir::Status fold_constants(ir::Program& program, PassContext& ctx);
ir::Status functionalize(ir::Program& program, PassContext& ctx);
ir::Status lower_to_out_variants(ir::Program& program, PassContext& ctx);
ir::Status dedupe_constants(ir::Program& program, PassContext& ctx);
ir::Status eliminate_dead_code(ir::Program& program, PassContext& ctx);
// Every node whose op has no kernel, decomposition or prim implementation, in one error.
ir::Status verify_support(const ir::Program& program);
// The same check before lowering, on functional ops.
ir::Status verify_lowerable(const ir::Program& program);

}  // namespace ember::passes
