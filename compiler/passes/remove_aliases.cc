// remove_aliases: alias-only ops (detach, alias, views to the same shape, as_strided to the input's
// own strides) disappear in every graph (contract C4). Their result shares storage with their
// input, so reading the input instead is exact, in-place writes included.
#include <algorithm>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

namespace {

// as_strided to its input's own sizes and strides reads every element where it is: the input
// itself. Size-1 dims are skipped: their stride is never used. (torch's decomposition of
// adaptive_avg_pool2d to 1x1 restrides a mean this way to keep its memory format.) The input must
// fill its storage (compiler/ir/graph_util.h), or its strides are not the ones its dim order
// implies.
bool is_identity_as_strided(const ir::Node& n) {
  if (n.num_outputs() != 1 || n.args().empty() || n.args()[0].value.kind() != ir::ArgKind::Value) {
    return false;
  }
  const ir::Value* self = n.args()[0].value.as_value();
  std::vector<int64_t> sizes, dense, size, stride;
  if (!ir::static_sizes(self->tensor_type(), &sizes) ||
      !ir::dense_strides(self->tensor_type(), &dense) || !ir::static_int_list(n, "size", &size) ||
      !ir::static_int_list(n, "stride", &stride) || size != sizes ||
      stride.size() != sizes.size() || !ir::fills_storage(self)) {
    return false;
  }
  const ir::Arg* offset = n.arg("storage_offset");
  if (offset != nullptr && !offset->is_none() &&
      !(offset->kind() == ir::ArgKind::Int && offset->as_int() == 0)) {
    return false;
  }
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return true;  // no elements
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && stride[d] != dense[d]) return false;
  }
  return true;
}

bool is_alias_only(const ir::Node& n) {
  const std::string op = n.qualified_op();
  if (op == "aten::as_strided.default") return is_identity_as_strided(n);
  if (op == "aten::detach.default" || op == "aten::alias.default" ||
      op == "aten::lift_fresh.default") {
    return true;
  }
  // t() of a 0-D or 1-D tensor is the tensor itself.
  if (op == "aten::t.default" && !n.args().empty() &&
      n.args()[0].value.kind() == ir::ArgKind::Value &&
      n.args()[0].value.as_value()->tensor_type().rank() < 2) {
    return true;
  }
  // dropout in eval mode is the identity.
  if (op == "aten::dropout.default") {
    const ir::Arg* train = n.arg("train");
    return train != nullptr && train->kind() == ir::ArgKind::Bool && !train->as_bool();
  }
  // A view to exactly the input's static type moves nothing.
  // A slice of a whole dim (x[:, :]) with a static type is the tensor itself.
  if (op == "aten::slice.Tensor" && n.num_outputs() == 1 && !n.args().empty() &&
      n.args()[0].value.kind() == ir::ArgKind::Value) {
    const ir::Arg* start = n.arg("start");
    const ir::Arg* step = n.arg("step");
    const bool from_zero = start == nullptr || start->is_none() ||
                           (start->kind() == ir::ArgKind::Int && start->as_int() == 0);
    const bool unit = step == nullptr || (step->kind() == ir::ArgKind::Int && step->as_int() == 1);
    const ir::ValueType& t = n.output()->type();
    return from_zero && unit && n.args()[0].value.as_value()->type() == t && t.tensor.is_static();
  }
  const bool reshape = op == "aten::view.default" || op == "aten::_unsafe_view.default" ||
                       op == "aten::_reshape_alias.default" || op == "aten::expand.default";
  if (reshape && n.num_outputs() == 1 && !n.args().empty() &&
      n.args()[0].value.kind() == ir::ArgKind::Value) {
    const ir::Value* in = n.args()[0].value.as_value();
    const ir::ValueType& t = n.output()->type();
    return in->type() == t && t.tensor.is_static();
  }
  return false;
}

}  // namespace

ir::Status remove_aliases(ir::Program& program, PassContext& ctx) {
  ir::for_each_graph(program.graph(), [&](ir::Graph& g) {
    std::vector<ir::Node*> dead;
    for (ir::Node* n : g.nodes()) {
      if (!is_alias_only(*n)) continue;
      if (n->args().empty() || n->args()[0].value.kind() != ir::ArgKind::Value) continue;
      n->output()->replace_all_uses_with(n->args()[0].value.as_value());
      dead.push_back(n);
    }
    for (ir::Node* n : dead) {
      if (g.erase_node(n).ok()) ++ctx.removed_nodes;
    }
  });
  return {};
}

EMBER_PASS(remove_aliases, remove_aliases, "",
           "no aten::detach / aten::alias / no-op view remains in any graph; their users read the "
           "aliased value itself (C4)");

}  // namespace ember::passes
