// eliminate_dead_code: removes nodes whose results nobody reads and that write nothing, in every
// graph (C4), then weight inputs nobody reads. Runs to a fixed point in one backward sweep.
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

ir::Status eliminate_dead_code(ir::Program& program, PassContext& ctx) {
  ir::for_each_graph(program.graph(), [&](ir::Graph& g) {
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
  // A buffer the program writes keeps its input even when nothing reads its old value (fill_,
  // copy_, zero_): its storage carries the new value to the next execution.
  std::unordered_set<std::string> written;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::OutputSpec& spec = program.output_spec(i);
    if (spec.kind == ir::OutputKind::BufferMutation) written.insert(spec.target);
  }
  for (size_t i = g.inputs().size(); i-- > 0;) {
    if (program.input_spec(i).kind == ir::InputKind::UserInput) continue;
    if (g.inputs()[i]->has_uses() || written.count(program.input_spec(i).target) != 0) continue;
    (void)program.erase_input(i);
  }
  return {};
}

EMBER_PASS(dead_code, eliminate_dead_code, "",
           "no node whose outputs are unused and that writes nothing remains; no unused weight "
           "input remains but for the buffers the program writes");

}  // namespace ember::passes
