// eliminate_dead_code: removes nodes whose results nobody reads and that write nothing, in every
// graph (C4), then weight inputs nobody reads. Runs to a fixed point in one backward sweep.
#include <vector>

#include "compiler/passes/pass_registry.h"
#include "compiler/passes/pass_util.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

ir::Status eliminate_dead_code(ir::Program& program, PassContext& ctx) {
  for_each_graph(program.graph(), [&](ir::Graph& g) {
    std::vector<ir::Node*> nodes;
    for (ir::Node* n : g.nodes()) nodes.push_back(n);
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      ir::Node* n = *it;
      if (!mutated_arguments(*n).empty()) continue;
      bool used = false;
      for (size_t i = 0; i < n->num_outputs(); ++i) used = used || n->output(i)->has_uses();
      // Zero-output nodes are side effects (assertions are dropped by their own pass).
      if (used || n->num_outputs() == 0) continue;
      if (g.erase_node(n).ok()) ++ctx.removed_nodes;
    }
  });
  ir::Graph& g = program.graph();
  for (size_t i = g.inputs().size(); i-- > 0;) {
    if (program.input_spec(i).kind == ir::InputKind::UserInput) continue;
    if (g.inputs()[i]->has_uses()) continue;
    (void)program.erase_input(i);
  }
  return {};
}

EMBER_PASS(dead_code, eliminate_dead_code, "",
           "no node whose outputs are unused and that writes nothing remains; no unused weight "
           "input remains");

}  // namespace ember::passes
