// The compiler's IR passes, one per file (compiler rule 2), each recursing into subgraphs (C4).
//
//   PassContext ctx;                                     // collects notes and statistics
//   EMBER_IR_RETURN_IF_ERROR(remove_aliases(program, ctx));
//   EMBER_IR_RETURN_IF_ERROR(lower_to_out_variants(program, ctx));
//
// Order used by `ember compile` (compiler/lower/pipeline.h): remove_aliases → drop_assertions →
// fold_constants → functionalize → eliminate_dead_code → [delegate_to_backends, with --backend:
// compiler/partition/to_backend.h] → lower_to_out_variants → fold_constants → dedupe_constants →
// eliminate_dead_code → verify_support. Delegate call nodes (op_table.h, kDelegateCallOp) pass
// through every later pass unchanged. Each pass documents what it needs and what it guarantees;
// every error names the node, the op, the module path and the reason.
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
};

// Needs: any IR. Guarantees: no aten::detach / aten::alias / no-op views remain in any graph;
// their users read the aliased value itself (contract C4).
ir::Status remove_aliases(ir::Program& program, PassContext& ctx);

// Needs: any IR. Guarantees: tensor assertions (aten::_assert_async, aten::_check_tensor_all,
// aten::_assert_scalar, aten::sym_constrain_range*) are removed from every graph. Ember documents
// that assertions are dropped at compile time (C12): they never reach the runtime.
ir::Status drop_assertions(ir::Program& program, PassContext& ctx);

// Needs: any IR (in-place ops allowed). Guarantees: a node whose tensor inputs are all unwritten
// weights is replaced by a new constant weight computed with the portable kernels. A tensor that
// any in-place op writes, directly or through views, in any graph, or that the signature lists as
// mutated, is never folded, nor is anything viewing it (C1), nor is the node computing it (the
// clone of a constant that is then written stays fresh storage: C20). Folded constants have
// static shapes (C2).
ir::Status fold_constants(ir::Program& program, PassContext& ctx);

// Needs: remove_aliases. Guarantees: no in-place op and no view of a written tensor remains; each
// write becomes a functional op plus scatters back through the view chain; the final value of a
// written buffer or user input becomes a buffer_mutation / user_input_mutation output.
ir::Status functionalize(ir::Program& program, PassContext& ctx);

// Needs: functionalize. Guarantees: every node is an out-variant kernel call (`aten::relu.out`),
// a runtime prim op, or control flow; driven by the one table in op_table.h.
ir::Status lower_to_out_variants(ir::Program& program, PassContext& ctx);

// Needs: any IR. Guarantees: weights with identical type and bytes share one graph input; every
// FQN keeps its data (C3).
ir::Status dedupe_constants(ir::Program& program, PassContext& ctx);

// Needs: any IR. Guarantees: no node whose outputs are unused and that writes nothing remains; no
// unused weight input remains.
ir::Status eliminate_dead_code(ir::Program& program, PassContext& ctx);

// Needs: lower_to_out_variants. Reports, in one error, every node whose op has no kernel, no
// decomposition and no prim implementation, with node, op, module path and reason.
ir::Status verify_support(const ir::Program& program);

// Before lowering: the same check on functional ops (every op the table cannot lower), so a user
// sees all unsupported ops at once right after import.
ir::Status verify_lowerable(const ir::Program& program);

}  // namespace ember::passes
