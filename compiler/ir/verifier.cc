#include "compiler/ir/verifier.h"

#include <algorithm>
#include <map>
#include <set>

namespace ember::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Program& program) : program_(program) {}

  Status run() {
    check_graph(program_.graph());
    check_signature();
    if (problems_.empty()) return Status();
    std::string message = std::to_string(problems_.size()) + " problem(s) in the IR:";
    for (const std::string& p : problems_) message += "\n  " + p;
    return Status::error(message);
  }

 private:
  void problem(std::string text) { problems_.push_back(std::move(text)); }

  void check_graph(const Graph& g) {
    std::set<const Value*> defined(g.inputs().begin(), g.inputs().end());
    std::map<const Value*, size_t> uses;
    for (const Node* n : g.nodes()) {
      for (const Value* v : n->operands()) {
        ++uses[v];
        if (defined.count(v) == 0) {
          problem(
              n->describe() + ": operand %" + v->name() +
              (v->owner() == &g ? " is used before its definition" : " belongs to another graph"));
        }
      }
      check_schema(*n);
      for (size_t i = 0; i < n->num_subgraphs(); ++i) check_graph(*n->subgraph(i));
      for (size_t i = 0; i < n->num_outputs(); ++i) defined.insert(n->output(i));
    }
    for (const Value* out : g.outputs()) {
      if (defined.count(out) == 0) {
        problem("graph output %" + out->name() + " is not defined in its graph");
      }
    }
    for (const Value* v : defined) {
      if (v->users().size() != uses[v]) {
        problem("value %" + v->name() + " lists " + std::to_string(v->users().size()) +
                " users but has " + std::to_string(uses[v]) + " uses");
      }
    }
  }

  void check_graph_refs(const Arg& a, const Node& n) {
    if (a.kind() == ArgKind::Graph && a.as_graph() >= n.num_subgraphs()) {
      problem(n.describe() + ": argument refers to subgraph " + std::to_string(a.as_graph()) +
              " of " + std::to_string(n.num_subgraphs()));
    }
    for (const Arg& item : a.as_list()) check_graph_refs(item, n);
  }

  void check_schema(const Node& n) {
    for (const NamedArg& a : n.args()) check_graph_refs(a.value, n);
    const OpSchema* s = n.schema();
    if (s == nullptr) return;
    const auto& expected = s->arguments();
    bool names_match = n.args().size() == expected.size();
    for (size_t i = 0; names_match && i < expected.size(); ++i) {
      names_match = n.args()[i].name == expected[i].name;
    }
    if (!names_match) {
      std::string got;
      for (const NamedArg& a : n.args()) got += (got.empty() ? "" : ", ") + a.name;
      problem(n.describe() + ": arguments (" + got + ") do not match the schema " + s->to_string());
    }
    const auto& returns = s->returns();
    bool list_return = returns.size() == 1 && returns[0].is_list;
    if (!list_return && n.num_outputs() != returns.size()) {
      problem(n.describe() + ": " + std::to_string(n.num_outputs()) +
              " outputs, the schema returns " + std::to_string(returns.size()));
    }
  }

  void check_signature() {
    const Graph& g = program_.graph();
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const InputSpec& spec = program_.input_spec(i);
      if (spec.kind == InputKind::UserInput) continue;
      const Value* v = g.inputs()[i];
      const Weight* w = program_.find_weight(spec.target);
      if (w == nullptr) {
        problem(std::string(input_kind_name(spec.kind)) + " \"" + spec.target + "\" (%" +
                v->name() + ") has no weight");
      } else if (!v->is_tensor() || w->type.dtype != v->tensor_type().dtype ||
                 w->type.shape != v->tensor_type().shape) {
        problem(std::string(input_kind_name(spec.kind)) + " \"" + spec.target + "\": %" +
                v->name() + " is " + to_string(v->type()) + ", its weight " + to_string(w->type));
      }
      if (v->is_tensor() && !v->tensor_type().is_static()) {
        problem(std::string(input_kind_name(spec.kind)) + " \"" + spec.target +
                "\" has a symbolic shape; constants are static (contract C2)");
      }
    }
  }

  const Program& program_;
  std::vector<std::string> problems_;
};

}  // namespace

Status verify(const Program& program) { return Verifier(program).run(); }

}  // namespace ember::ir
