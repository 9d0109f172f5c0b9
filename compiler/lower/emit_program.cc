#include "compiler/lower/emit_program.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/graph_util.h"
#include "compiler/lower/emitter.h"
#include "compiler/ops/kernel_eval.h"
#include "compiler/ops/op_table.h"
#include "compiler/partition/backend.h"
#include "compiler/plan/memory_planner.h"

namespace ember::lower {

namespace {

ShapeDynamism dynamism_of(const ir::TensorType& t) {
  return t.is_static() ? ShapeDynamism::Static : ShapeDynamism::DynamicBound;
}

emit::TensorSpec tensor_spec(const ir::TensorType& t) {
  emit::TensorSpec s;
  s.dtype = ops::to_scalar_type(t.dtype);
  for (const ir::Dim& d : t.shape) s.sizes.push_back(static_cast<int32_t>(d.value));
  s.dynamism = dynamism_of(t);
  return s;
}

uint64_t nbytes(const ir::TensorType& t) {
  std::optional<int64_t> n = t.numel_upper_bound();
  return n ? static_cast<uint64_t>(*n) * ir::dtype_size(t.dtype) : 0;
}

}  // namespace

namespace internal {

ir::StatusOr<EmittedMethod> Emitter::run() {
  const ir::Graph& g = program_.graph();
  std::vector<const ir::Node*> nodes;
  for (ir::Node* n : g.nodes()) nodes.push_back(n);
  // Which inputs are written state, and the value each one ends with.
  std::unordered_map<const ir::Value*, const ir::Value*> final_value;
  std::vector<const ir::Value*> user_outputs;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::OutputSpec& spec = program_.output_spec(i);
    if (spec.kind == ir::OutputKind::UserOutput) {
      user_outputs.push_back(g.outputs()[i]);
      continue;
    }
    const ir::Value* input = find_input(spec);
    if (input == nullptr) {
      return ir::Status::error("output " + std::to_string(i) + " writes " + spec.target +
                               ", which is no input of the program");
    }
    final_value[input] = g.outputs()[i];
  }
  EMBER_IR_RETURN_IF_ERROR(emit_inputs(final_value));
  find_in_place_writes(nodes, final_value, user_outputs);
  for (const auto& [input, value] : final_value) {
    state_inputs_.insert(input);
    no_view_alias_.insert(value);
  }
  no_view_alias_.insert(user_outputs.begin(), user_outputs.end());
  // Kernel calls.
  for (const ir::Node* n : nodes) EMBER_IR_RETURN_IF_ERROR(emit_node(*n));
  // Written state: copy the final value into the tensor's own storage (unless it was computed
  // there).
  for (const auto& [input, value] : final_value) {
    if (input == value || in_place_.count(value) != 0) continue;
    const int32_t dst = index_.at(input);
    auto it = index_.find(value);
    if (it == index_.end()) return ir::Status::error("the new value of a buffer is not computed");
    const int32_t none = method_.add(emit::NoneSpec{});
    use(value, instruction_count());
    use(input, instruction_count());
    method_.call("aten::clone", "out", {it->second, none, dst, dst});
  }
  std::unordered_map<const ir::Value*, int32_t> copies;
  for (const ir::Value* v : user_outputs) {
    auto it = index_.find(v);
    if (it == index_.end()) return ir::Status::error("output %" + v->name() + " is not computed");
    int32_t out = it->second;
    if (constant_inputs_.count(v) != 0) {
      // A weight or folded constant returned as it is: outputs are planned tensors (a caller
      // may hand each its own buffer, and an external weight's storage is the data file's), so
      // the output is a copy of it.
      auto [c, fresh] = copies.emplace(v, 0);
      if (fresh) {
        const int32_t none = method_.add(emit::NoneSpec{});
        const int64_t at = instruction_count();
        use(v, at);
        c->second = add_result(v, at);  // may rehash index_: `out` holds the source
        method_.call("aten::clone", "out", {out, none, c->second, c->second});
      }
      out = c->second;
    }
    method_.outputs.push_back(out);
    use(v, INT64_MAX);
  }
  plan();
  result_.method = std::move(method_);
  return std::move(result_);
}

// State whose new value is an index_put of its old one (a KV cache write) is written in place:
// index_put's out is the state tensor itself, so neither index_put's copy of the whole tensor
// nor the copy back at the end happens. Only when nothing reads the old value after the write
// (nodes run in order) or in the same call other than as `self`, and the new value is no user
// output (which would alias the state).
void Emitter::find_in_place_writes(
    const std::vector<const ir::Node*>& nodes,
    const std::unordered_map<const ir::Value*, const ir::Value*>& final_value,
    const std::vector<const ir::Value*>& user_outputs) {
  std::unordered_map<const ir::Node*, size_t> order;
  for (size_t i = 0; i < nodes.size(); ++i) order[nodes[i]] = i;
  for (const auto& [input, value] : final_value) {
    const ir::Node* p = value->producer();
    if (input == value || p == nullptr || order.count(p) == 0 ||
        p->qualified_op() != "aten::index_put.out" || p->num_outputs() != 1 ||
        std::find(user_outputs.begin(), user_outputs.end(), value) != user_outputs.end()) {
      continue;
    }
    const ir::Arg* self = p->arg("self");
    if (self == nullptr || self->kind() != ir::ArgKind::Value || self->as_value() != input) {
      continue;
    }
    size_t reads_in_p = 0;
    const ir::Value* state = input;  // clang 14 cannot capture a structured binding
    for (const ir::NamedArg& a : p->args()) {
      a.value.for_each_value([&](const ir::Value* v) { reads_in_p += v == state ? 1 : 0; });
    }
    bool later_read = reads_in_p != 1;
    for (const ir::Node* u : input->users()) {
      later_read = later_read || order.count(u) == 0 || order.at(u) > order.at(p);
    }
    if (!later_read) in_place_[value] = input;
  }
}

void Emitter::use(const ir::Value* v, int64_t at) {
  // A subgraph input is its operand; a cond result moved from branch outputs is read through
  // them, so their memory lives as long as the result is used.
  if (auto a = alias_.find(v); a != alias_.end()) return use(a->second, at);
  if (auto r = moved_from_.find(v); r != moved_from_.end()) {
    for (const ir::Value* src : r->second) use(src, at);
  }
  int64_t& l = last_use_[v];
  l = std::max(l, at);
}

const ir::Value* Emitter::find_input(const ir::OutputSpec& spec) const {
  const ir::Graph& g = program_.graph();
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::InputSpec& in = program_.input_spec(i);
    const bool user = in.kind == ir::InputKind::UserInput;
    if ((user && g.inputs()[i]->name() == spec.target) || (!user && in.target == spec.target)) {
      return g.inputs()[i];
    }
  }
  return nullptr;
}

ir::Status Emitter::emit_inputs(
    const std::unordered_map<const ir::Value*, const ir::Value*>& final_value) {
  const ir::Graph& g = program_.graph();
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value* v = g.inputs()[i];
    const ir::InputSpec& spec = program_.input_spec(i);
    if (!v->is_tensor())
      return ir::Status::error("scalar input %" + v->name() + " is not supported");
    emit::TensorSpec t = tensor_spec(v->tensor_type());
    if (spec.kind == ir::InputKind::UserInput) {
      index_[v] = method_.add(t);
      method_.inputs.push_back(index_[v]);
      continue;
    }
    const bool state = final_value.count(v) != 0;
    if (!v->has_uses() && !state) continue;
    const ir::Weight* w = program_.find_weight(spec.target);
    if (w == nullptr || !w->has_data()) {
      return ir::Status::error("weight " + spec.target + " has no data");
    }
    std::span<const uint8_t> bytes = w->bytes();
    if (bytes.size() != nbytes(v->tensor_type())) {
      return ir::Status::error("weight " + spec.target + " holds " + std::to_string(bytes.size()) +
                               " bytes, its type " + ir::to_string(v->type()) + " needs " +
                               std::to_string(nbytes(v->tensor_type())));
    }
    t.data.assign(bytes.begin(), bytes.end());
    t.fqn = spec.target;
    if (state) {
      // Planned for the whole execution, never shared: it persists across executions.
      t.storage = emit::TensorSpec::Storage::Mutable;
      index_[v] = method_.add(t);
      planned_.push_back({v, index_[v], true});
      result_.stats.state_bytes += bytes.size();
      continue;
    }
    if (options_.external_weights) {
      const std::string key = partition::weight_key(spec.target, bytes);
      auto [it, inserted] = keys_->emplace(spec.target, key);
      if (!inserted && it->second != key) {
        return ir::Status::error("weight " + spec.target +
                                 " is redefined with different bytes in one export (C22)");
      }
      t.storage = emit::TensorSpec::Storage::External;
      t.fqn = key;
      result_.stats.external_bytes += bytes.size();
    } else {
      t.storage = emit::TensorSpec::Storage::Constant;
      result_.stats.constant_bytes += bytes.size();
    }
    index_[v] = method_.add(t);
    constant_inputs_.insert(v);
  }
  return {};
}

ir::StatusOr<int32_t> Emitter::arg_value(const ir::Arg& a, int64_t at) {
  switch (a.kind()) {
    case ir::ArgKind::None:
      return method_.add(emit::NoneSpec{});
    case ir::ArgKind::Bool:
      return method_.add(a.as_bool());
    case ir::ArgKind::Int:
      return method_.add(a.as_int());
    case ir::ArgKind::Float:
      return method_.add(a.as_float());
    case ir::ArgKind::String:
      return method_.add(a.as_text());
    case ir::ArgKind::DType:
      return method_.add(static_cast<int64_t>(ops::to_scalar_type(a.as_dtype())));
    case ir::ArgKind::Layout:
    case ir::ArgKind::Device:
      return method_.add(int64_t{0});
    case ir::ArgKind::MemoryFormat:
      return method_.add(ops::memory_format_code(a.as_text()));
    case ir::ArgKind::Value: {
      auto it = index_.find(a.as_value());
      if (it == index_.end())
        return ir::Status::error("%" + a.as_value()->name() + " is not defined");
      use(a.as_value(), at);
      return it->second;
    }
    case ir::ArgKind::List: {
      const auto& items = a.as_list();
      bool ints = true, floats = true, bools = true, tensors = true;
      for (const ir::Arg& i : items) {
        const bool sym = i.kind() == ir::ArgKind::Value && !i.as_value()->is_tensor();
        ints = ints && (i.kind() == ir::ArgKind::Int || sym);
        floats = floats && i.kind() == ir::ArgKind::Float;
        bools = bools && i.kind() == ir::ArgKind::Bool;
        tensors = tensors && (i.is_none() || (i.kind() == ir::ArgKind::Value && !sym));
      }
      if (ints) {
        emit::IntListSpec list;
        for (const ir::Arg& i : items) {
          ir::StatusOr<int32_t> v = arg_value(i, at);
          if (!v.ok()) return v;
          list.items.push_back(*v);
        }
        return method_.add(list);
      }
      if (floats) {
        std::vector<double> d;
        for (const ir::Arg& i : items) d.push_back(i.as_float());
        return method_.add(d);
      }
      if (bools) {
        std::vector<bool> b;
        for (const ir::Arg& i : items) b.push_back(i.as_bool());
        return method_.add(b);
      }
      if (tensors) {
        emit::TensorListSpec list;
        for (const ir::Arg& i : items) {
          if (i.is_none()) {
            list.optional = true;
            list.items.push_back(-1);
            continue;
          }
          ir::StatusOr<int32_t> v = arg_value(i, at);
          if (!v.ok()) return v;
          list.items.push_back(*v);
        }
        return method_.add(list);
      }
      return ir::Status::error("a list mixing kinds of values");
    }
    case ir::ArgKind::Graph:
      return ir::Status::error("a subgraph argument");
  }
  return ir::Status::error("an unknown argument kind");
}

// The value slot of a result computed at instruction `at`: a planned tensor (defined there), or
// a scalar. `placeholder`: a cond result its branches' outputs are moved into.
int32_t Emitter::add_result(const ir::Value* v, int64_t at, bool placeholder) {
  int32_t idx = 0;
  switch (v->type().kind) {
    case ir::ValueKind::Tensor:
      idx = method_.add(tensor_spec(v->tensor_type()));
      planned_.push_back({v, idx, false, placeholder});
      first_def_[v] = at;
      break;
    case ir::ValueKind::Int:
      idx = method_.add(int64_t{0});
      break;
    case ir::ValueKind::Float:
      idx = method_.add(0.0);
      break;
    case ir::ValueKind::Bool:
      idx = method_.add(false);
      break;
  }
  index_[v] = idx;
  return idx;
}

// A delegate call: its arguments, then its outputs (planned like any activation), and the
// blob, compile specs and backend id in the method's delegate table.
ir::Status Emitter::emit_delegate(const ir::Node& n) {
  const ir::Arg* index = n.arg("index");
  const ir::Arg* inputs = n.arg("inputs");
  const auto* table = options_.delegates;
  if (index == nullptr || inputs == nullptr || table == nullptr || index->as_int() < 0 ||
      static_cast<size_t>(index->as_int()) >= table->size()) {
    return ir::Status::error(ir::node_error(n, "a delegate call without its blob"));
  }
  const partition::LoweredDelegate& d = (*table)[static_cast<size_t>(index->as_int())];
  const int64_t at = instruction_count();
  std::vector<int32_t> args;
  for (const ir::Arg& a : inputs->as_list()) {
    if (a.kind() != ir::ArgKind::Value) {
      return ir::Status::error(ir::node_error(n, "a delegate argument is not a value"));
    }
    ir::StatusOr<int32_t> v = arg_value(a, at);
    if (!v.ok()) return ir::Status::error(ir::node_error(n, v.status().message()));
    args.push_back(*v);
  }
  for (size_t i = 0; i < n.num_outputs(); ++i) {
    const ir::Value* v = n.output(i);
    if (!v->is_tensor()) {
      return ir::Status::error(ir::node_error(n, "a delegate output is not a tensor"));
    }
    const int32_t idx = add_result(v, at);
    use(v, at);
    args.push_back(idx);
  }
  emit::DelegateSpec spec;
  spec.id = d.backend;
  spec.processed = d.processed;
  for (const partition::CompileSpecEntry& c : d.compile_specs) {
    spec.compile_specs.emplace_back(c.key, c.value);
  }
  method_.delegates.push_back(std::move(spec));
  method_.append<emit::DelegateCallSpec>(static_cast<int32_t>(method_.delegates.size() - 1),
                                         std::move(args));
  return {};
}

ir::Status Emitter::emit_node(const ir::Node& n) {
  if (ops::is_delegate_call(n)) return emit_delegate(n);
  if (n.num_subgraphs() > 0) return emit_control_flow(n);
  if (is_alias_view(n)) return emit_alias_view(n);
  const std::string op = n.qualified_op();
  const bool prim = ops::is_prim_op(op);
  if (!prim && !ops::is_lowered(n)) {
    return ir::Status::error(ir::node_error(n, "reached emit without being lowered"));
  }
  const int64_t at = instruction_count();
  std::vector<int32_t> args;
  // A Tensor?[] argument ('o' in the kernel's signature, `index`'s indices) is an optional
  // tensor list in the file even when no entry is None: the kernel accepts only that tag.
  const char* sig = prim ? nullptr : ops::kernel_signature(op);
  const size_t sig_len = sig == nullptr ? 0 : std::strlen(sig);
  for (size_t i = 0; i < n.args().size(); ++i) {
    ir::StatusOr<int32_t> v = arg_value(n.args()[i].value, at);
    if (!v.ok()) return ir::Status::error(ir::node_error(n, v.status().message()));
    if (i < sig_len && sig[i] == 'o') {
      auto* list = std::get_if<emit::TensorListSpec>(&method_.values[static_cast<size_t>(*v)]);
      if (list != nullptr) list->optional = true;
    }
    args.push_back(*v);
  }
  std::vector<int32_t> outs;
  for (size_t i = 0; i < n.num_outputs(); ++i) {
    const ir::Value* v = n.output(i);
    if (auto s = in_place_.find(v); s != in_place_.end()) {
      index_[v] = index_.at(s->second);  // the state tensor: planned for the whole run
      outs.push_back(index_[v]);
      continue;
    }
    const int32_t idx = add_result(v, at);
    use(v, at);
    outs.push_back(idx);
  }
  if (ops::is_list_out_kernel(op)) {
    emit::TensorListSpec list;
    list.items = outs;
    const int32_t l = method_.add(list);
    args.push_back(l);
    args.push_back(l);
  } else {
    args.insert(args.end(), outs.begin(), outs.end());
  }
  if (!prim && !ops::is_list_out_kernel(op)) {
    if (outs.size() == 1) {
      args.push_back(outs[0]);
    } else {
      emit::TensorListSpec list;
      list.items = outs;
      args.push_back(method_.add(list));
    }
  }
  // ExecuTorch writes the `default` overload as an empty one (docs/pte-format.md §4.8).
  method_.call(n.op(), n.overload() == "default" ? "" : n.overload(), std::move(args));
  return {};
}

// A view of a contiguous tensor as another contiguous shape reads the same bytes in the same
// order, so it is emitted as ExecuTorch's executorch_prim::et_view: the result points into the
// operand's storage and has none of its own (no copy, no memory planned). The operand's memory
// then lives as long as the view is used. Only at the top level (a branch's result is moved),
// for static shapes, and never for a view of state before its write (a later in-place write
// would show through it), a user output or a state's new value (they need storage of their own).
bool Emitter::is_alias_view(const ir::Node& n) const {
  if (branch_depth_ > 0 || n.qualified_op() != "aten::view_copy.out" || n.num_outputs() != 1) {
    return false;
  }
  const ir::Arg* self = n.arg("self");
  const ir::Arg* size = n.arg("size");
  if (self == nullptr || self->kind() != ir::ArgKind::Value || size == nullptr ||
      size->kind() != ir::ArgKind::List) {
    return false;
  }
  const ir::Value* in = self->as_value();
  const ir::Value* out = n.output(0);
  if (!in->is_tensor() || !out->is_tensor() || no_view_alias_.count(out) != 0) return false;
  const ir::TensorType &a = in->tensor_type(), &b = out->tensor_type();
  if (!a.is_static() || !b.is_static() || !a.is_contiguous() || !b.is_contiguous() ||
      a.dtype != b.dtype || a.numel_upper_bound() != b.numel_upper_bound()) {
    return false;
  }
  // Through views already emitted as aliases, down to the storage.
  const ir::Value* root = in;
  for (auto it = alias_.find(root); it != alias_.end(); it = alias_.find(root)) root = it->second;
  return state_inputs_.count(root) == 0;
}

ir::Status Emitter::emit_alias_view(const ir::Node& n) {
  const int64_t at = instruction_count();
  const ir::Value* in = n.arg("self")->as_value();
  const ir::Value* out = n.output(0);
  ir::StatusOr<int32_t> self = arg_value(*n.arg("self"), at);
  if (!self.ok()) return ir::Status::error(ir::node_error(n, self.status().message()));
  // The result's own sizes (the operand's may hold a -1 to infer).
  emit::IntListSpec size;
  for (const ir::Dim& d : out->tensor_type().shape) size.items.push_back(method_.add(d.value));
  const int32_t size_idx = method_.add(size);
  const int32_t idx = method_.add(tensor_spec(out->tensor_type()));  // unplanned: no storage
  index_[out] = idx;
  alias_[out] = in;
  // ExecuTorch writes this one prim op with its `default` overload (docs/pte-format.md §4.8).
  method_.call("executorch_prim::et_view", "default", {*self, size_idx, idx});
  return {};
}

void Emitter::plan() {
  std::vector<plan::PlanBuffer> buffers;
  const int64_t end = instruction_count();
  for (const Planned& p : planned_) {
    plan::PlanBuffer b;
    b.bytes = nbytes(p.value->tensor_type());
    if (p.state) {
      b.first = 0;
      b.last = end + 1;
    } else if (p.placeholder) {
      // Never holds data: a move replaces it with a branch output before any read.
      b.first = first_def_.at(p.value);
      b.last = b.first;
    } else {
      b.first = first_def_.at(p.value);
      const int64_t last = last_use_[p.value];
      b.last = last == INT64_MAX ? end + 1 : std::max(last, b.first);
    }
    buffers.push_back(b);
  }
  plan::MemoryPlan mp = plan::plan_memory(buffers, 16);
  for (size_t i = 0; i < planned_.size(); ++i) {
    auto& t = std::get<emit::TensorSpec>(method_.values[static_cast<size_t>(planned_[i].index)]);
    if (!planned_[i].state) t.storage = emit::TensorSpec::Storage::Planned;
    t.memory_id = 1;
    t.offset = mp.offsets[i];
  }
  if (!planned_.empty()) method_.arena_sizes = {static_cast<int64_t>(mp.arena_bytes)};
  result_.stats.planned_bytes = mp.arena_bytes;
  result_.stats.activation_bytes = mp.total_bytes;
  result_.stats.lower_bound = mp.lower_bound;
  result_.stats.instructions = method_.instructions.size();
}

}  // namespace internal

ir::StatusOr<EmittedMethod> emit_method(const ir::Program& program, const EmitOptions& options,
                                        std::map<std::string, std::string>* ptd_keys) {
  internal::Emitter e(program, options, ptd_keys);
  return e.run();
}

}  // namespace ember::lower
