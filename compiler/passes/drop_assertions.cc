// drop_assertions: tensor assertions are checked by PyTorch while tracing and dropped here, in
// every graph (contract C12). Ember documents this choice: a program never fails at run time on an
// assertion, and the verifier never refuses one.
#include <string>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

namespace {

bool is_assertion(const ir::Node& n) {
  static const char* const kOps[] = {
      "aten::_assert_async",           "aten::_check_tensor_all",
      "aten::_assert_scalar",          "aten::_assert_tensor_metadata",
      "aten::sym_constrain_range",     "aten::sym_constrain_range_for_size",
      "aten::_functional_assert_async"};
  for (const char* op : kOps) {
    if (n.op() == op) return true;
  }
  return false;
}

}  // namespace

ir::Status drop_assertions(ir::Program& program, PassContext& ctx) {
  ir::for_each_graph(program.graph(), [&](ir::Graph& g) {
    std::vector<ir::Node*> dead;
    for (ir::Node* n : g.nodes()) {
      if (!is_assertion(*n)) continue;
      bool used = false;
      for (size_t i = 0; i < n->num_outputs(); ++i) used = used || n->output(i)->has_uses();
      if (!used) dead.push_back(n);
    }
    for (ir::Node* n : dead) {
      if (g.erase_node(n).ok()) ++ctx.removed_nodes;
    }
  });
  return {};
}

EMBER_PASS(drop_assertions, drop_assertions, "",
           "tensor assertions (aten::_assert_async, aten::_check_tensor_all, aten::_assert_scalar, "
           "aten::sym_constrain_range*) are removed from every graph: Ember drops assertions at "
           "compile time (C12)");

}  // namespace ember::passes
