// functionalize: in-place ops become functional ops, and each write flows back through its chain
// of views as functional scatters (select_scatter, slice_scatter, an inverse view), giving the
// written storage root a new SSA value. Later readers of the root, or of any view of it, read that
// value (views are re-taken from it). A written graph input keeps its meaning as state: its final
// value becomes a buffer_mutation (or user_input_mutation) output, which the emitter writes back
// into the tensor's own storage so the write persists across executions.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

namespace {

struct Link {
  ir::Value* parent;
  ir::Node* via;  // a view node, or an in-place node whose result is its target
};

class Functionalizer {
 public:
  Functionalizer(ir::Program& program, ir::Graph& g) : program_(program), g_(g) {}

  ir::Status run(std::vector<std::pair<ir::Value*, ir::Value*>>* written_inputs) {
    std::vector<ir::Node*> nodes;
    for (ir::Node* n : g_.nodes()) nodes.push_back(n);
    for (ir::Node* n : nodes) EMBER_IR_RETURN_IF_ERROR(visit(n));
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      ir::Value* v = g_.outputs()[i];
      if (version_of(root_of(v)) > 0) {
        ir::StatusOr<ir::Value*> m = materialize(v, nullptr);
        if (!m.ok()) return m.status();
        g_.set_output(i, *m);
      }
    }
    for (auto it = erase_.rbegin(); it != erase_.rend(); ++it) {
      EMBER_IR_RETURN_IF_ERROR(g_.erase_node(*it));
    }
    for (const auto& [root, value] : current_) {
      if (root->producer() == nullptr) written_inputs->emplace_back(root, value);
    }
    std::sort(written_inputs->begin(), written_inputs->end(), [](const auto& a, const auto& b) {
      return a.first->output_index() < b.first->output_index();
    });
    return {};
  }

 private:
  ir::Value* root_of(ir::Value* v) const {
    for (auto it = alias_.find(v); it != alias_.end(); it = alias_.find(v)) v = it->second.parent;
    return v;
  }
  int version_of(ir::Value* root) const {
    auto it = version_.find(root);
    return it == version_.end() ? 0 : it->second;
  }

  // The value `v` has now: itself when its storage was never written, else re-taken from the
  // root's newest value along its view chain.
  ir::StatusOr<ir::Value*> materialize(ir::Value* v, ir::Node* before) {
    ir::Value* root = root_of(v);
    const int ver = version_of(root);
    if (ver == 0) return v;
    if (v == root) return current_.at(root);
    auto cached = cache_.find({v, ver});
    if (cached != cache_.end()) return cached->second;
    const Link link = alias_.at(v);
    ir::StatusOr<ir::Value*> parent = materialize(link.parent, before);
    if (!parent.ok()) return parent;
    ir::Value* result = *parent;
    if (mutated_arguments(*link.via).empty()) {
      std::vector<ir::NamedArg> args = link.via->args();
      args[0].value = ir::Arg::value(*parent);
      ir::Node* view = g_.create_node(link.via->op(), link.via->overload(), std::move(args),
                                      {{g_.unique_name(v->name()), v->type()}}, before);
      view->set_module_stack(link.via->module_stack());
      result = view->output();
    }
    cache_[{v, ver}] = result;
    return result;
  }

  ir::Status visit(ir::Node* n) {
    const std::vector<ir::NamedArg> original = n->args();
    for (size_t i = 0; i < n->args().size(); ++i) {
      const ir::Arg& a = n->args()[i].value;
      bool stale = false;
      a.for_each_value([&](ir::Value* v) { stale = stale || version_of(root_of(v)) > 0; });
      if (!stale) continue;
      ir::StatusOr<ir::Arg> fresh = refresh(a, n);
      if (!fresh.ok()) return fresh.status();
      n->set_arg(i, *fresh);
    }
    const std::vector<size_t> written = mutated_arguments(*n);
    if (written.empty()) {
      if (ir::is_view_node(*n)) {
        ir::Value* parent = original[0].value.as_value();
        alias_[n->output()] = {parent, n};
        const int ver = version_of(root_of(parent));
        if (ver > 0) cache_[{n->output(), ver}] = n->output();
      }
      return {};
    }
    if (written != std::vector<size_t>{0} || n->num_outputs() != 1 ||
        original[0].value.kind() != ir::ArgKind::Value) {
      return ir::Status::error(ir::node_error(
          *n,
          "writes an argument other than `self` in place; only self-updating in-place ops "
          "(add_, copy_, index_put_...) are functionalized"));
    }
    if (n->num_subgraphs() > 0) {
      return ir::Status::error(ir::node_error(*n, "an in-place op with subgraphs"));
    }
    std::string op = n->op();
    if (op.empty() || op.back() != '_') {
      return ir::Status::error(ir::node_error(*n, "an in-place op whose name does not end in '_'"));
    }
    op.pop_back();
    const std::string overload = n->overload();
    if (program_.ops().find(op, overload) == nullptr) {
      return ir::Status::error(
          ir::node_error(*n, "no functional form " + op + "." + overload + " of this in-place op"));
    }
    ir::Value* target = original[0].value.as_value();
    ir::Node* f = g_.create_node(op, overload, n->args(),
                                 {{g_.unique_name(n->output()->name()), target->type()}}, n);
    f->set_module_stack(n->module_stack());
    ir::Value* updated = f->output();
    // Scatter the new value back up the view chain to the storage root.
    ir::Value* v = target;
    while (alias_.count(v) != 0) {
      const Link link = alias_.at(v);
      if (!mutated_arguments(*link.via).empty()) {  // an earlier in-place result: same storage
        v = link.parent;
        continue;
      }
      ir::StatusOr<ir::Value*> parent = materialize(link.parent, n);
      if (!parent.ok()) return parent.status();
      ir::StatusOr<ir::Value*> up = scatter(*link.via, *parent, updated, n);
      if (!up.ok()) return up.status();
      updated = *up;
      v = link.parent;
    }
    if (v->owner() != &g_ || (v->producer() == nullptr && g_.parent_node() != nullptr)) {
      return ir::Status::error(ir::node_error(
          *n, "writes a tensor from outside its control-flow branch in place; not supported"));
    }
    const int ver = ++version_[v];
    current_[v] = updated;
    cache_[{target, ver}] = f->output();
    alias_[n->output()] = {target, n};
    erase_.push_back(n);
    return {};
  }

  ir::StatusOr<ir::Arg> refresh(const ir::Arg& a, ir::Node* before) {
    if (a.kind() == ir::ArgKind::Value) {
      ir::StatusOr<ir::Value*> m = materialize(a.as_value(), before);
      if (!m.ok()) return m.status();
      return ir::Arg::value(*m);
    }
    if (a.kind() != ir::ArgKind::List) return a;
    std::vector<ir::Arg> items;
    for (const ir::Arg& item : a.as_list()) {
      ir::StatusOr<ir::Arg> r = refresh(item, before);
      if (!r.ok()) return r.status();
      items.push_back(*r);
    }
    return ir::Arg::list(std::move(items));
  }

  // The new value of `parent` once the view `via` of it holds `child`.
  ir::StatusOr<ir::Value*> scatter(const ir::Node& via, ir::Value* parent, ir::Value* child,
                                   ir::Node* before) {
    const std::string op = via.qualified_op();
    std::vector<ir::NamedArg> args;
    std::string new_op, new_overload = "default";
    auto copy_arg = [&](const char* name) {
      const ir::Arg* a = via.arg(name);
      args.push_back({name, a != nullptr ? *a : ir::Arg::none()});
    };
    if (op == "aten::select.int") {
      new_op = "aten::select_scatter";
      args = {{"self", ir::Arg::value(parent)}, {"src", ir::Arg::value(child)}};
      copy_arg("dim");
      copy_arg("index");
    } else if (op == "aten::slice.Tensor") {
      new_op = "aten::slice_scatter";
      args = {{"self", ir::Arg::value(parent)}, {"src", ir::Arg::value(child)}};
      for (const char* name : {"dim", "start", "end", "step"}) copy_arg(name);
    } else if (op == "aten::view.default" || op == "aten::_unsafe_view.default" ||
               op == "aten::_reshape_alias.default" || op == "aten::unsqueeze.default" ||
               op == "aten::squeeze.dim" || op == "aten::squeeze.default" ||
               op == "aten::squeeze.dims" || op == "aten::alias.default" ||
               op == "aten::detach.default") {
      std::vector<ir::Arg> size;
      for (const ir::Dim& d : parent->tensor_type().shape) {
        if (!d.is_static()) {
          return ir::Status::error(ir::node_error(via,
                                                  "a write through a reshaping view of a "
                                                  "dynamic-shape tensor is not supported"));
        }
        size.push_back(ir::Arg::integer(d.value));
      }
      new_op = "aten::view";
      args = {{"self", ir::Arg::value(child)}, {"size", ir::Arg::list(size)}};
    } else if (op == "aten::t.default") {
      new_op = "aten::t";
      args = {{"self", ir::Arg::value(child)}};
    } else if (op == "aten::transpose.int") {
      new_op = "aten::transpose";
      new_overload = "int";
      args = {{"self", ir::Arg::value(child)}};
      copy_arg("dim0");
      copy_arg("dim1");
    } else if (op == "aten::permute.default") {
      const ir::Arg* dims = via.arg("dims");
      if (dims == nullptr || dims->kind() != ir::ArgKind::List) {
        return ir::Status::error(ir::node_error(via, "permute without dims"));
      }
      const size_t rank = dims->as_list().size();
      std::vector<ir::Arg> inverse(rank, ir::Arg::integer(0));
      for (size_t i = 0; i < rank; ++i) {
        int64_t d = dims->as_list()[i].as_int();
        if (d < 0) d += static_cast<int64_t>(rank);
        if (d < 0 || d >= static_cast<int64_t>(rank)) {
          return ir::Status::error(ir::node_error(via, "permute dims out of range"));
        }
        inverse[static_cast<size_t>(d)] = ir::Arg::integer(static_cast<int64_t>(i));
      }
      new_op = "aten::permute";
      args = {{"self", ir::Arg::value(child)}, {"dims", ir::Arg::list(inverse)}};
    } else {
      return ir::Status::error(ir::node_error(
          via,
          "an in-place write through this view is not supported (only view, reshape, "
          "select, slice, squeeze/unsqueeze, t, transpose and permute)"));
    }
    ir::Node* s =
        g_.create_node(new_op, new_overload, std::move(args),
                       {{g_.unique_name(parent->name() + "_updated"), parent->type()}}, before);
    s->set_module_stack(before->module_stack());
    return s->output();
  }

  ir::Program& program_;
  ir::Graph& g_;
  std::map<ir::Value*, Link> alias_;
  std::map<ir::Value*, int> version_;
  std::map<ir::Value*, ir::Value*> current_;
  std::map<std::pair<ir::Value*, int>, ir::Value*> cache_;
  std::vector<ir::Node*> erase_;
};

}  // namespace

ir::Status functionalize(ir::Program& program, PassContext& ctx) {
  std::vector<std::string> errors;
  ir::for_each_graph(program.graph(), [&](ir::Graph& g) {
    if (&g == &program.graph()) return;
    std::vector<std::pair<ir::Value*, ir::Value*>> written;
    Functionalizer f(program, g);
    ir::Status s = f.run(&written);
    if (!s.ok()) errors.push_back(s.message());
    if (s.ok() && !written.empty()) {
      errors.push_back("a control-flow branch writes its input " + written[0].first->name() +
                       " in place; not supported");
    }
  });
  if (!errors.empty()) return ir::Status::error(errors[0]);
  ir::Graph& g = program.graph();
  // A mutation output that names the in-place result itself (a view of the written input's own
  // storage, not a new value) is the captured in-place form: this pass recreates it from the
  // final value. A view of another input (copy_(buf, src) captured as expand(src)) is the new
  // value itself and stays.
  auto is_target = [&](ir::Value* root, const ir::OutputSpec& spec) {
    const std::vector<ir::Value*>& inputs = g.inputs();
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (inputs[j] != root) continue;
      const ir::InputSpec& in = program.input_spec(j);
      if (spec.kind == ir::OutputKind::UserInputMutation) {
        return in.kind == ir::InputKind::UserInput && root->name() == spec.target;
      }
      return in.kind != ir::InputKind::UserInput &&
             (in.target == spec.target ||
              std::find(in.aliases.begin(), in.aliases.end(), spec.target) != in.aliases.end());
    }
    return false;
  };
  for (size_t i = g.outputs().size(); i-- > 0;) {
    const ir::OutputSpec& spec = program.output_spec(i);
    if (spec.kind == ir::OutputKind::UserOutput) continue;
    ir::Value* root = ir::alias_root(g.outputs()[i]);
    if (root != g.outputs()[i] && root->producer() == nullptr && is_target(root, spec)) {
      EMBER_IR_RETURN_IF_ERROR(program.erase_output(i));
    }
  }
  std::vector<std::pair<ir::Value*, ir::Value*>> written;
  Functionalizer f(program, g);
  EMBER_IR_RETURN_IF_ERROR(f.run(&written));
  for (const auto& [input, value] : written) {
    const ir::InputSpec& spec = program.input_spec(input->output_index());
    if (spec.kind == ir::InputKind::UserInput) {
      program.add_output(value, {ir::OutputKind::UserInputMutation, input->name()});
      if (std::find(program.mutated_user_inputs.begin(), program.mutated_user_inputs.end(),
                    input->name()) == program.mutated_user_inputs.end()) {
        program.mutated_user_inputs.push_back(input->name());
      }
    } else {
      program.add_output(value, {ir::OutputKind::BufferMutation, spec.target});
      if (std::find(program.mutated_buffers.begin(), program.mutated_buffers.end(), spec.target) ==
          program.mutated_buffers.end()) {
        program.mutated_buffers.push_back(spec.target);
      }
    }
    ctx.notes.push_back("state: " + (spec.target.empty() ? input->name() : spec.target) +
                        " is written in place and persists across executions");
  }
  return {};
}

EMBER_PASS(functionalize, functionalize, "remove_aliases",
           "no in-place op and no view of a written tensor remains; each write becomes a "
           "functional op plus scatters back through the view chain; the final value of a written "
           "buffer or user input becomes a buffer_mutation / user_input_mutation output");

}  // namespace ember::passes
