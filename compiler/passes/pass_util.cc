#include "compiler/passes/pass_util.h"

#include <algorithm>

namespace ember::passes {

void for_each_graph(ir::Graph& graph, const std::function<void(ir::Graph&)>& f) {
  f(graph);
  // Collect first: f may erase nodes of this graph.
  std::vector<ir::Node*> nodes;
  for (ir::Node* n : graph.nodes()) nodes.push_back(n);
  for (ir::Node* n : nodes) {
    for (size_t i = 0; i < n->num_subgraphs(); ++i) for_each_graph(*n->subgraph(i), f);
  }
}

void for_each_graph(const ir::Graph& graph, const std::function<void(const ir::Graph&)>& f) {
  f(graph);
  for (ir::Node* n : graph.nodes()) {
    for (size_t i = 0; i < n->num_subgraphs(); ++i) {
      for_each_graph(static_cast<const ir::Graph&>(*n->subgraph(i)), f);
    }
  }
}

bool is_view_node(const ir::Node& node) {
  const ir::OpSchema* s = node.schema();
  return s != nullptr && s->is_view() && node.num_outputs() == 1 && !node.args().empty() &&
         node.args()[0].value.kind() == ir::ArgKind::Value;
}

ir::Value* alias_parent(const ir::Value* v) {
  const ir::Node* p = v->producer();
  if (p == nullptr || p->schema() == nullptr) return nullptr;
  std::optional<size_t> a = p->schema()->aliased_argument(v->output_index());
  if (!a || *a >= p->args().size()) return nullptr;
  const ir::Arg& arg = p->args()[*a].value;
  return arg.kind() == ir::ArgKind::Value ? arg.as_value() : nullptr;
}

ir::Value* alias_root(ir::Value* v) {
  for (int guard = 0; guard < 100000; ++guard) {
    ir::Value* p = alias_parent(v);
    if (p == nullptr) return v;
    v = p;
  }
  return v;
}

namespace {

void mark_written(const ir::Graph& graph, std::unordered_set<const ir::Value*>& out) {
  for (ir::Node* n : graph.nodes()) {
    for (size_t index : ir::mutated_arguments(*n)) {
      if (index >= n->args().size()) continue;
      n->args()[index].value.for_each_value([&](ir::Value* v) { out.insert(alias_root(v)); });
    }
    // A subgraph that writes one of its inputs writes the outer operand bound to it.
    if (n->num_subgraphs() > 0) {
      const ir::Arg* operands = n->arg("operands");
      for (size_t g = 0; g < n->num_subgraphs(); ++g) {
        const ir::Graph& sub = *n->subgraph(g);
        std::unordered_set<const ir::Value*> inner;
        mark_written(sub, inner);
        out.insert(inner.begin(), inner.end());
        if (operands == nullptr || operands->kind() != ir::ArgKind::List) continue;
        for (size_t i = 0; i < sub.inputs().size() && i < operands->as_list().size(); ++i) {
          const ir::Arg& op = operands->as_list()[i];
          if (op.kind() == ir::ArgKind::Value && inner.count(sub.inputs()[i]) != 0) {
            out.insert(alias_root(op.as_value()));
          }
        }
      }
    }
  }
}

}  // namespace

std::unordered_set<const ir::Value*> written_tensors(const ir::Program& program) {
  std::unordered_set<const ir::Value*> out;
  mark_written(program.graph(), out);
  const ir::Graph& g = program.graph();
  auto listed = [&](const std::string& target) {
    for (const auto* list :
         {&program.mutated_buffers, &program.mutated_parameters, &program.mutated_user_inputs}) {
      if (std::find(list->begin(), list->end(), target) != list->end()) return true;
    }
    return false;
  };
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::InputSpec& spec = program.input_spec(i);
    const std::string& key =
        spec.kind == ir::InputKind::UserInput ? g.inputs()[i]->name() : spec.target;
    bool mutated = listed(key);
    for (const std::string& a : spec.aliases) mutated = mutated || listed(a);
    if (mutated) out.insert(g.inputs()[i]);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::OutputSpec& spec = program.output_spec(i);
    if (spec.kind == ir::OutputKind::UserOutput) continue;
    for (size_t j = 0; j < g.inputs().size(); ++j) {
      const ir::InputSpec& in = program.input_spec(j);
      const bool hit = in.target == spec.target || (in.kind == ir::InputKind::UserInput &&
                                                    g.inputs()[j]->name() == spec.target);
      if (hit) out.insert(g.inputs()[j]);
    }
  }
  return out;
}

std::string node_error(const ir::Node& node, const std::string& reason) {
  return node.describe() + ": " + reason;
}

bool static_sizes(const ir::TensorType& type, std::vector<int64_t>* sizes) {
  sizes->clear();
  for (const ir::Dim& d : type.shape) {
    if (!d.is_static()) return false;
    sizes->push_back(d.value);
  }
  return true;
}

}  // namespace ember::passes
