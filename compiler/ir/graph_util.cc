#include "compiler/ir/graph_util.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace ember::ir {

void for_each_graph(Graph& graph, const std::function<void(Graph&)>& f) {
  f(graph);
  // Collect first: f may erase nodes of this graph.
  std::vector<Node*> nodes;
  for (Node* n : graph.nodes()) nodes.push_back(n);
  for (Node* n : nodes) {
    for (size_t i = 0; i < n->num_subgraphs(); ++i) for_each_graph(*n->subgraph(i), f);
  }
}

void for_each_graph(const Graph& graph, const std::function<void(const Graph&)>& f) {
  f(graph);
  for (Node* n : graph.nodes()) {
    for (size_t i = 0; i < n->num_subgraphs(); ++i) {
      for_each_graph(static_cast<const Graph&>(*n->subgraph(i)), f);
    }
  }
}

bool is_view_node(const Node& node) {
  const OpSchema* s = node.schema();
  return s != nullptr && s->is_view() && node.num_outputs() == 1 && !node.args().empty() &&
         node.args()[0].value.kind() == ArgKind::Value;
}

Value* alias_parent(const Value* v) {
  const Node* p = v->producer();
  if (p == nullptr || p->schema() == nullptr) return nullptr;
  std::optional<size_t> a = p->schema()->aliased_argument(v->output_index());
  if (!a || *a >= p->args().size()) return nullptr;
  const Arg& arg = p->args()[*a].value;
  return arg.kind() == ArgKind::Value ? arg.as_value() : nullptr;
}

Value* alias_root(Value* v) {
  for (int guard = 0; guard < 100000; ++guard) {
    Value* p = alias_parent(v);
    if (p == nullptr) return v;
    v = p;
  }
  return v;
}

namespace {

void mark_written(const Graph& graph, std::unordered_set<const Value*>& out) {
  for (Node* n : graph.nodes()) {
    for (size_t index : mutated_arguments(*n)) {
      if (index >= n->args().size()) continue;
      n->args()[index].value.for_each_value([&](Value* v) { out.insert(alias_root(v)); });
    }
    // A subgraph that writes one of its inputs writes the outer operand bound to it.
    if (n->num_subgraphs() > 0) {
      const Arg* operands = n->arg("operands");
      for (size_t g = 0; g < n->num_subgraphs(); ++g) {
        const Graph& sub = *n->subgraph(g);
        std::unordered_set<const Value*> inner;
        mark_written(sub, inner);
        out.insert(inner.begin(), inner.end());
        if (operands == nullptr || operands->kind() != ArgKind::List) continue;
        for (size_t i = 0; i < sub.inputs().size() && i < operands->as_list().size(); ++i) {
          const Arg& op = operands->as_list()[i];
          if (op.kind() == ArgKind::Value && inner.count(sub.inputs()[i]) != 0) {
            out.insert(alias_root(op.as_value()));
          }
        }
      }
    }
  }
}

}  // namespace

std::unordered_set<const Value*> written_tensors(const Program& program) {
  std::unordered_set<const Value*> out;
  mark_written(program.graph(), out);
  const Graph& g = program.graph();
  auto listed = [&](const std::string& target) {
    for (const auto* list :
         {&program.mutated_buffers, &program.mutated_parameters, &program.mutated_user_inputs}) {
      if (std::find(list->begin(), list->end(), target) != list->end()) return true;
    }
    return false;
  };
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const InputSpec& spec = program.input_spec(i);
    const std::string& key =
        spec.kind == InputKind::UserInput ? g.inputs()[i]->name() : spec.target;
    bool mutated = listed(key);
    for (const std::string& a : spec.aliases) mutated = mutated || listed(a);
    if (mutated) out.insert(g.inputs()[i]);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const OutputSpec& spec = program.output_spec(i);
    if (spec.kind == OutputKind::UserOutput) continue;
    for (size_t j = 0; j < g.inputs().size(); ++j) {
      const InputSpec& in = program.input_spec(j);
      const bool hit = in.target == spec.target ||
                       (in.kind == InputKind::UserInput && g.inputs()[j]->name() == spec.target);
      if (hit) out.insert(g.inputs()[j]);
    }
  }
  return out;
}

std::string node_error(const Node& node, const std::string& reason) {
  return node.describe() + ": " + reason;
}

bool static_sizes(const TensorType& type, std::vector<int64_t>* sizes) {
  sizes->clear();
  for (const Dim& d : type.shape) {
    if (!d.is_static()) return false;
    sizes->push_back(d.value);
  }
  return true;
}

bool static_int_list(const Node& node, const char* name, std::vector<int64_t>* items) {
  items->clear();
  const Arg* a = node.arg(name);
  if (a == nullptr || a->kind() != ArgKind::List) return false;
  for (const Arg& item : a->as_list()) {
    if (item.kind() != ArgKind::Int) return false;
    items->push_back(item.as_int());
  }
  return true;
}

bool dense_strides(const TensorType& type, std::vector<int64_t>* strides) {
  std::vector<int64_t> sizes;
  if (!static_sizes(type, &sizes)) return false;
  const size_t rank = sizes.size();
  std::vector<int32_t> order = type.dim_order;
  if (order.empty()) {
    for (size_t d = 0; d < rank; ++d) order.push_back(static_cast<int32_t>(d));
  }
  if (order.size() != rank) return false;
  strides->assign(rank, 0);
  std::vector<bool> seen(rank, false);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    const int32_t d = order[i];
    if (d < 0 || static_cast<size_t>(d) >= rank || seen[static_cast<size_t>(d)]) return false;
    seen[static_cast<size_t>(d)] = true;
    (*strides)[static_cast<size_t>(d)] = stride;
    if (__builtin_mul_overflow(stride, std::max<int64_t>(sizes[static_cast<size_t>(d)], 1),
                               &stride)) {
      return false;
    }
  }
  return true;
}

bool fills_storage(const Value* v) {
  // Views that renumber the elements of their input one to one: the same storage, still filled.
  static constexpr std::string_view kFillingViews[] = {
      "aten::view.default",      "aten::_unsafe_view.default", "aten::reshape.default",
      "aten::permute.default",   "aten::transpose.int",        "aten::t.default",
      "aten::unsqueeze.default", "aten::squeeze.default",      "aten::squeeze.dim",
      "aten::squeeze.dims",      "aten::alias.default",        "aten::detach.default",
      "aten::lift_fresh.default"};
  for (int guard = 0; guard < 100000; ++guard) {
    const Node* p = v->producer();
    if (p == nullptr) return v->owner() != nullptr && v->owner()->parent_node() == nullptr;
    const std::string op = p->qualified_op();
    // Ops that set strides or storage themselves (empty_strided, as_strided_, set_, resize_).
    if (op.find("strided") != std::string::npos || op.starts_with("aten::set_") ||
        op.starts_with("aten::resize")) {
      return false;
    }
    const Value* parent = alias_parent(v);
    if (parent == nullptr) return true;  // a computed tensor
    const bool in_place = !mutated_arguments(*p).empty();
    if (!in_place && std::find(std::begin(kFillingViews), std::end(kFillingViews), op) ==
                         std::end(kFillingViews)) {
      return false;  // a view that may skip, repeat or offset elements (slice, expand, split...)
    }
    v = parent;  // a filling view, or an in-place op's result: its input's storage
  }
  return false;
}

}  // namespace ember::ir
