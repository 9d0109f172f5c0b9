// Control flow (C4): a cond node emitted as jumps over its two branches, inline.
#include <string>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/lower/emitter.h"

namespace ember::lower::internal {

// Control flow (C4): `higher_order::cond` becomes a JumpFalse chain with both branches inline:
//   JumpFalse(pred, else); then-branch; results <- then outputs; JumpFalse(false, end);
//   else: else-branch; results <- else outputs; end:
// A branch output a branch node computes is moved into the shared result value (MoveCall makes
// the result read that tensor, so no copy); its memory is planned to live as long as the
// result is used, and instructions of the other branch, which lie in between, never share it.
// A result some branch passes through from its inputs is copied (clone.out) in both branches
// instead, so the result never aliases an operand, a weight or a constant.
ir::Status Emitter::emit_control_flow(const ir::Node& n) {
  if (n.op() != "higher_order::cond" || n.num_subgraphs() != 2) {
    return ir::Status::error(
        ir::node_error(n, "control flow other than cond (two branches) is not emitted yet"));
  }
  const ir::Arg* pred = n.arg("pred");
  const ir::Arg* operands = n.arg("operands");
  if (pred == nullptr || pred->kind() != ir::ArgKind::Value) {
    return ir::Status::error(ir::node_error(n, "cond: the predicate is not a value"));
  }
  std::vector<const ir::Value*> ops;
  if (operands != nullptr && !operands->is_none()) {
    if (operands->kind() != ir::ArgKind::List) {
      return ir::Status::error(ir::node_error(n, "cond: operands is not a list"));
    }
    for (const ir::Arg& a : operands->as_list()) {
      if (a.kind() != ir::ArgKind::Value || index_.count(a.as_value()) == 0) {
        return ir::Status::error(ir::node_error(n, "cond: an operand is not a computed value"));
      }
      ops.push_back(a.as_value());
    }
  }
  const ir::Graph* branches[2] = {n.subgraph(0), n.subgraph(1)};
  for (const ir::Graph* g : branches) {
    if (g->inputs().size() != ops.size() || g->outputs().size() != n.num_outputs()) {
      return ir::Status::error(
          ir::node_error(n, "cond: a branch takes " + std::to_string(g->inputs().size()) +
                                " inputs for " + std::to_string(ops.size()) +
                                " operands and returns " + std::to_string(g->outputs().size()) +
                                " values for " + std::to_string(n.num_outputs()) + " results"));
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      index_[g->inputs()[i]] = index_.at(ops[i]);
      alias_[g->inputs()[i]] = ops[i];
    }
  }
  const ir::ValueType& pred_type = pred->as_value()->type();
  const bool bool_pred =
      pred_type.kind == ir::ValueKind::Bool ||
      (pred_type.kind == ir::ValueKind::Tensor && pred_type.tensor.dtype == ir::DType::Bool);
  if (!bool_pred) {
    return ir::Status::error(
        ir::node_error(n, "cond: the predicate is " + ir::to_string(pred_type) + ", not a bool"));
  }
  for (const ir::Graph* g : branches) {
    for (size_t j = 0; j < n.num_outputs(); ++j) {
      if (g->outputs()[j]->type().kind != n.output(j)->type().kind) {
        return ir::Status::error(
            ir::node_error(n, "cond: branch output " + std::to_string(j) + " is " +
                                  ir::to_string(g->outputs()[j]->type()) + ", the result " +
                                  ir::to_string(n.output(j)->type())));
      }
    }
  }
  auto pred_index = index_.find(pred->as_value());
  if (pred_index == index_.end()) {
    return ir::Status::error(ir::node_error(n, "cond: the predicate is not computed"));
  }
  // Results: a move target, unless a branch returns one of its inputs.
  const int64_t start = instruction_count();
  std::vector<int32_t> results;
  std::vector<bool> moved;
  for (size_t j = 0; j < n.num_outputs(); ++j) {
    const ir::Value* r = n.output(j);
    bool move = true;
    for (const ir::Graph* g : branches) {
      const ir::Value* out = g->outputs()[j];
      move = move && out->producer() != nullptr;
    }
    const int32_t idx = add_result(r, start, /*placeholder=*/move);
    if (!r->is_tensor()) move = true;  // scalars are values, a move copies them
    results.push_back(idx);
    moved.push_back(move);
    if (move) moved_from_[r] = {branches[0]->outputs()[j], branches[1]->outputs()[j]};
  }
  use(pred->as_value(), start);
  const size_t jump_to_else = method_.instructions.size();
  method_.append<emit::JumpFalseSpec>(pred_index->second, 0);
  size_t jump_to_end = 0;
  for (int b = 0; b < 2; ++b) {
    if (b == 1) {
      const int32_t never = method_.add(false);
      jump_to_end = method_.instructions.size();
      method_.append<emit::JumpFalseSpec>(never, 0);
      std::get<emit::JumpFalseSpec>(method_.instructions[jump_to_else]).destination =
          static_cast<int32_t>(instruction_count());
    }
    ++branch_depth_;
    for (ir::Node* inner : branches[b]->nodes()) {
      ir::Status st = emit_node(*inner);
      if (!st.ok()) return st;
    }
    --branch_depth_;
    for (size_t j = 0; j < results.size(); ++j) {
      const ir::Value* out = branches[b]->outputs()[j];
      auto it = index_.find(out);
      if (it == index_.end()) {
        return ir::Status::error(
            ir::node_error(n, "cond: branch output %" + out->name() + " is not computed"));
      }
      const int64_t at = instruction_count();
      if (moved[j]) {
        // The placeholder's one instant: the first move into it (what `ember inspect` sees).
        if (b == 0 && n.output(j)->is_tensor()) first_def_[n.output(j)] = at;
        use(out, at);
        method_.append<emit::MoveSpec>(it->second, results[j]);
        continue;
      }
      const ir::Value* r = n.output(j);
      if (b == 0) first_def_[r] = at;
      use(out, at);
      use(r, at);
      const int32_t none = method_.add(emit::NoneSpec{});
      method_.call("aten::clone", "out", {it->second, none, results[j], results[j]});
    }
  }
  std::get<emit::JumpFalseSpec>(method_.instructions[jump_to_end]).destination =
      static_cast<int32_t>(instruction_count());
  return {};
}

}  // namespace ember::lower::internal
