// delegate_to_backends: partitions become delegate call nodes (see to_backend.h).
#include "compiler/partition/to_backend.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/op_table.h"

namespace ember::partition {

namespace {

// The backend's own verdict, except for nodes another backend already took and ops the caller
// excluded by compile spec: both stay portable, with the reason said.
class FilteredSupport final : public BackendSupport {
 public:
  FilteredSupport(const BackendSupport& inner, std::vector<std::string> excluded)
      : inner_(inner), excluded_(std::move(excluded)) {}
  std::string_view name() const override { return inner_.name(); }
  Support check(const ir::Node& node) const override {
    if (ops::is_delegate_call(node)) {
      const ir::Arg* b = node.arg("backend");
      return Support::no("delegated to backend '" + (b != nullptr ? b->as_text() : "?") + "'");
    }
    if (excluded(node)) return Support::no(node.qualified_op() + " excluded by the compile spec");
    // A pattern the backend claims whole goes portable whole.
    for (const ir::Node* other :
         excluded_.empty() ? std::vector<const ir::Node*>{} : inner_.claimed_with(node)) {
      if (other != &node && excluded(*other)) {
        return Support::no("claimed only with " + other->describe() + ", and " +
                           other->qualified_op() + " is excluded by the compile spec");
      }
    }
    return inner_.check(node);
  }

 private:
  bool excluded(const ir::Node& node) const {
    const std::string q = node.qualified_op();
    for (const std::string& e : excluded_) {
      if (e == node.op() || e == q) return true;
    }
    return false;
  }

  const BackendSupport& inner_;
  std::vector<std::string> excluded_;
};

// The comma-separated items of every spec named `key`; `present` tells whether there was one.
std::vector<std::string> spec_list(const std::vector<CompileSpecEntry>& specs, std::string_view key,
                                   bool* present = nullptr) {
  std::vector<std::string> out;
  if (present != nullptr) *present = false;
  for (const CompileSpecEntry& s : specs) {
    if (s.key != key) continue;
    if (present != nullptr) *present = true;
    std::string v(s.value.begin(), s.value.end());
    size_t pos = 0;
    while (pos <= v.size()) {
      size_t comma = v.find(',', pos);
      if (comma == std::string::npos) comma = v.size();
      if (comma > pos) out.push_back(v.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  return out;
}

// The partition indices a `partitions` spec lets the backend take, or nullopt without the spec.
ir::StatusOr<std::optional<std::set<size_t>>> selected_partitions(
    const std::vector<CompileSpecEntry>& specs) {
  bool present = false;
  const std::vector<std::string> items = spec_list(specs, kPartitionsSpecKey, &present);
  if (!present) return std::optional<std::set<size_t>>();
  std::set<size_t> out;
  for (const std::string& item : items) {
    size_t index = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (ec != std::errc() || end != item.data() + item.size()) {
      return ir::Status::error(std::string("compile spec '") + kPartitionsSpecKey + "': '" + item +
                               "' is not a partition index");
    }
    out.insert(index);
  }
  return std::optional<std::set<size_t>>(std::move(out));
}

bool lowering_spec(const CompileSpecEntry& s) {
  return s.key == "exclude_ops" || s.key == kPartitionsSpecKey;
}

// FQNs of weights the program writes: they reach a delegate as call arguments, never as named
// data (C20), and their stored bytes are only initial values.
std::unordered_set<std::string> written_weights(const ir::Program& program) {
  std::unordered_set<std::string> out(program.mutated_buffers.begin(),
                                      program.mutated_buffers.end());
  out.insert(program.mutated_parameters.begin(), program.mutated_parameters.end());
  for (size_t i = 0; i < program.graph().outputs().size(); ++i) {
    const ir::OutputSpec& s = program.output_spec(i);
    if (s.kind == ir::OutputKind::BufferMutation) out.insert(s.target);
  }
  return out;
}

const ir::Weight* weight_with_data(const ir::Program& program, const std::string& fqn) {
  const ir::Weight* w = program.find_weight(fqn);
  for (int hops = 0; w != nullptr && !w->has_data() && !w->alias_of.empty() && hops < 16; ++hops) {
    w = program.find_weight(w->alias_of);
  }
  return w;
}

ir::StatusOr<ir::Arg> remap(const ir::Arg& a,
                            const std::unordered_map<const ir::Value*, ir::Value*>& map) {
  switch (a.kind()) {
    case ir::ArgKind::Value: {
      auto it = map.find(a.as_value());
      if (it == map.end()) {
        return ir::Status::error("%" + a.as_value()->name() + " is read but not defined");
      }
      return ir::Arg::value(it->second);
    }
    case ir::ArgKind::List: {
      std::vector<ir::Arg> items;
      for (const ir::Arg& i : a.as_list()) {
        ir::StatusOr<ir::Arg> r = remap(i, map);
        if (!r.ok()) return r;
        items.push_back(std::move(*r));
      }
      return ir::Arg::list(std::move(items));
    }
    case ir::ArgKind::Graph:
      return ir::Status::error("a control-flow subgraph");
    default:
      return a;
  }
}

// Program order, changed only where dependencies force it: repeatedly take the earliest node
// (in the current order) whose operands are all defined (C16).
ir::Status stable_sort(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  std::unordered_map<const ir::Node*, size_t> index;
  for (ir::Node* n : g.nodes()) {
    index[n] = nodes.size();
    nodes.push_back(n);
  }
  std::vector<std::vector<size_t>> users(nodes.size());
  std::vector<size_t> pending(nodes.size(), 0);
  bool sorted = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<size_t> deps;
    for (const ir::Value* v : nodes[i]->operands()) {
      const ir::Node* p = v->producer();
      if (p == nullptr || p->owner() != &g) continue;
      deps.insert(index.at(p));
    }
    for (size_t d : deps) {
      users[d].push_back(i);
      sorted = sorted && d < i;
    }
    pending[i] = deps.size();
  }
  if (sorted) return {};
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<ir::Node*> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(nodes[i]);
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (order.size() != nodes.size()) {
    return ir::Status::error(
        "delegate insertion made the graph cyclic (a partition is not convex)");
  }
  for (ir::Node* n : order) EMBER_IR_RETURN_IF_ERROR(g.move_node(n, nullptr));
  return {};
}

std::string node_list(const Partition& p) {
  std::string s;
  for (const ir::Node* n : p.nodes) s += (s.empty() ? "" : ", ") + n->name();
  return s;
}

}  // namespace

ir::StatusOr<PartitionProgram> extract_partition(const ir::Program& program,
                                                 const Partition& partition) {
  const ir::Graph& g = program.graph();
  if (partition.graph != &g) {
    return ir::Status::error("only top-level partitions are cut out (control flow stays portable)");
  }
  PartitionProgram out;
  out.program = std::make_unique<ir::Program>();
  ir::Program& pp = *out.program;
  pp.symbols = program.symbols;
  const std::unordered_set<std::string> written = written_weights(program);
  std::unordered_map<const ir::Value*, size_t> input_index;
  for (size_t i = 0; i < g.inputs().size(); ++i) input_index[g.inputs()[i]] = i;

  std::unordered_map<const ir::Value*, ir::Value*> map;
  std::vector<ir::Value*> weights;
  for (ir::Value* v : partition.inputs) {
    auto it = input_index.find(v);
    if (it != input_index.end()) {
      const ir::InputSpec& spec = program.input_spec(it->second);
      if (spec.kind != ir::InputKind::UserInput && written.count(spec.target) == 0) {
        weights.push_back(v);
        continue;
      }
    }
    map[v] = pp.add_input(v->name(), v->type(), ir::InputSpec{});
    out.arguments.push_back(v);
  }
  for (ir::Value* v : weights) {
    const ir::InputSpec& spec = program.input_spec(input_index.at(v));
    const ir::Weight* w = weight_with_data(program, spec.target);
    if (w == nullptr) return ir::Status::error("weight " + spec.target + " has no stored data");
    map[v] = pp.add_input(v->name(), v->type(),
                          ir::InputSpec{spec.kind, spec.target, {}, spec.persistent});
    if (pp.find_weight(spec.target) == nullptr) {
      ir::Weight copy = *w;  // shares the bytes
      copy.name = spec.target;
      copy.alias_of.clear();
      pp.weights.push_back(std::move(copy));
    }
  }
  for (const ir::Node* n : partition.nodes) {
    if (n->num_subgraphs() > 0) {
      return ir::Status::error(n->describe() + ": control flow inside a partition is not lowered");
    }
    std::vector<ir::NamedArg> args;
    for (const ir::NamedArg& a : n->args()) {
      ir::StatusOr<ir::Arg> r = remap(a.value, map);
      if (!r.ok()) return ir::Status::error(n->describe() + ": " + r.status().message());
      args.push_back({a.name, std::move(*r)});
    }
    std::vector<std::pair<std::string, ir::ValueType>> outs;
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      outs.emplace_back(n->output(i)->name(), n->output(i)->type());
    }
    ir::Node* c = pp.graph().create_node(n->op(), n->overload(), std::move(args), std::move(outs),
                                         nullptr, n->name());
    c->set_module_stack(n->module_stack());
    for (size_t i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = c->output(i);
  }
  for (ir::Value* v : partition.outputs) {
    auto it = map.find(v);
    if (it == map.end()) return ir::Status::error("partition output %" + v->name() + " is lost");
    pp.add_output(it->second, ir::OutputSpec{});
  }
  return out;
}

ir::StatusOr<DelegationResult> delegate_to_backends(ir::Program& program,
                                                    const std::vector<BackendRequest>& backends) {
  DelegationResult result;
  std::unordered_map<std::string, size_t> named_index;
  ir::Graph& g = program.graph();
  for (const BackendRequest& request : backends) {
    if (request.backend == nullptr) return ir::Status::error("a null backend was requested");
    const std::string backend_name(request.backend->name());
    FilteredSupport support(request.backend->support(),
                            spec_list(request.compile_specs, "exclude_ops"));
    ir::StatusOr<std::optional<std::set<size_t>>> selected =
        selected_partitions(request.compile_specs);
    if (!selected.ok()) return selected.status();
    ir::StatusOr<PartitionResult> parts = partition_by_capability(program, support);
    if (!parts.ok()) {
      return ir::Status::error("partitioning for backend '" + backend_name +
                               "' failed: " + parts.status().message());
    }
    result.report += describe_partitions(*parts);
    result.summary += summarize_partitions(*parts);
    // Values the delegates made so far stand for the partition outputs they replaced.
    std::unordered_map<const ir::Value*, ir::Value*> replaced;
    size_t views_only = 0;
    for (size_t pi = 0; pi < parts->partitions.size(); ++pi) {
      Partition p = parts->partitions[pi];
      // Views alone compute nothing: the portable runtime makes them without a copy or a call,
      // where a delegate call would copy (a Llama 8da4w decode step had 29 such partitions).
      if (std::all_of(p.nodes.begin(), p.nodes.end(),
                      [](const ir::Node* n) { return ir::is_view_node(*n); })) {
        result.report += "partition " + std::to_string(pi) + " stays portable: views only (" +
                         node_list(p) + ")\n";
        ++views_only;
        continue;
      }
      if (p.graph != &g) {
        const std::string line = "partition " + std::to_string(pi) +
                                 " stays portable: it is inside a control-flow subgraph, and "
                                 "control flow is not emitted yet";
        result.report += line + " (" + node_list(p) + ")\n";
        result.summary += "  " + line + "\n";
        continue;
      }
      if (*selected && (*selected)->count(pi) == 0) {
        const std::string line = "partition " + std::to_string(pi) +
                                 " stays portable: not among the compile spec's partitions";
        result.report += line + " (" + node_list(p) + ")\n";
        result.summary += "  " + line + "\n";
        continue;
      }
      for (ir::Value*& v : p.inputs) {
        auto it = replaced.find(v);
        if (it != replaced.end()) v = it->second;
      }
      const std::string where = "backend '" + backend_name + "', partition " + std::to_string(pi) +
                                " (nodes " + node_list(p) + ")";
      ir::StatusOr<PartitionProgram> pp = extract_partition(program, p);
      if (!pp.ok()) return ir::Status::error(where + ": " + pp.status().message());
      LoweredDelegate d;
      d.backend = backend_name;
      d.partition = pi;
      // `exclude_ops` and `partitions` are lowering's own specs: the backend never sees them,
      // nor does the runtime.
      for (const CompileSpecEntry& s : request.compile_specs) {
        if (!lowering_spec(s)) d.compile_specs.push_back(s);
      }
      const std::vector<CompileSpecEntry> backend_specs = d.compile_specs;
      std::string listing;
      for (const ir::Node* n : p.nodes) {
        d.nodes.push_back(n->name() + " (" + n->qualified_op() + ")");
        listing += n->name() + "\t" + n->qualified_op() + "\n";
      }
      d.compile_specs.push_back({kNodesSpecKey, {listing.begin(), listing.end()}});
      ir::StatusOr<PreprocessResult> pre = request.backend->preprocess(*pp->program, backend_specs);
      if (!pre.ok()) {
        return ir::Status::error(where + ": preprocess failed: " + pre.status().message());
      }
      d.processed = std::move(pre->processed);
      for (NamedBlob& blob : pre->named_data) {
        auto [it, inserted] = named_index.emplace(blob.key, result.named_data.size());
        if (!inserted) {
          if (result.named_data[it->second].data != blob.data) {
            return ir::Status::error(where + ": named data '" + blob.key +
                                     "' is given twice with different bytes");
          }
          continue;
        }
        // A weight's key names its FQN: the .ptd stores the weight's own layout.
        const size_t cut = blob.key.rfind(":sha256:");
        if (cut != std::string::npos) {
          const ir::Weight* w = pp->program->find_weight(blob.key.substr(0, cut));
          if (w != nullptr && w->nbytes == blob.data.size()) {
            result.weight_types[blob.key] = w->type;
          }
        }
        result.named_data.push_back(std::move(blob));
      }

      // One call node where the partition's last node was.
      const std::string dname = g.unique_name("delegate");
      std::vector<ir::Arg> inputs;
      for (ir::Value* v : pp->arguments) inputs.push_back(ir::Arg::value(v));
      std::vector<std::pair<std::string, ir::ValueType>> outs;
      for (size_t i = 0; i < p.outputs.size(); ++i) {
        outs.emplace_back(
            p.outputs.size() == 1 ? dname : g.unique_name(dname + "_" + std::to_string(i)),
            p.outputs[i]->type());
      }
      const int64_t index = static_cast<int64_t>(result.delegates.size());
      ir::Node* call = g.create_node(std::string(ops::kDelegateCallOp), "default",
                                     {{"backend", ir::Arg::string(backend_name)},
                                      {"index", ir::Arg::integer(index)},
                                      {"inputs", ir::Arg::list(std::move(inputs))}},
                                     std::move(outs), p.nodes.back(), dname);
      for (size_t i = 0; i < p.outputs.size(); ++i) {
        p.outputs[i]->replace_all_uses_with(call->output(i));
        replaced[p.outputs[i]] = call->output(i);
      }
      for (auto it = p.nodes.rbegin(); it != p.nodes.rend(); ++it) {
        ir::Status s = g.erase_node(*it);
        if (!s.ok()) return ir::Status::error(where + ": " + s.message());
      }
      EMBER_IR_RETURN_IF_ERROR(stable_sort(g));
      result.delegates.push_back(std::move(d));
    }
    if (views_only > 0) {
      result.summary += "  " + std::to_string(views_only) +
                        " partition(s) of views only stay portable (no copy, no call)\n";
    }
  }
  return result;
}

}  // namespace ember::partition
