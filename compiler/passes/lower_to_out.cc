// lower_to_out_variants: every functional op becomes its out-variant kernel call, or the calls of
// its decomposition, as the table in compiler/ops/op_table.cc says. Runs on every graph (C4).
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

ir::Status lower_to_out_variants(ir::Program& program, PassContext&) {
  std::vector<std::string> errors;
  ir::for_each_graph(program.graph(), [&](ir::Graph& g) {
    std::vector<ir::Node*> nodes;
    for (ir::Node* n : g.nodes()) nodes.push_back(n);
    for (ir::Node* n : nodes) {
      ir::Status s = ops::lower_node(program, n);
      if (!s.ok()) errors.push_back(s.message());
    }
  });
  if (errors.empty()) return {};
  std::string message = std::to_string(errors.size()) + " node(s) cannot be lowered:";
  for (const std::string& e : errors) message += "\n  " + e;
  return ir::Status::error(message);
}

EMBER_PASS(lower_to_out, lower_to_out_variants, "functionalize",
           "every node is an out-variant kernel call (aten::relu.out), a runtime prim op, or "
           "control flow, driven by the one table in op_table.h");

}  // namespace ember::passes
