#include "compiler/partition/partitioner.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace ember::partition {

namespace {

using ir::Graph;
using ir::Node;
using ir::Status;
using ir::StatusOr;
using ir::Value;

// One graph as a DAG over its nodes, in program order: data edges (producer -> user) plus the
// order an in-place write imposes (earlier readers of the written tensor -> the write -> later
// readers), so a partition never moves a read across a write.
struct GraphInfo {
  const Graph* graph = nullptr;
  std::vector<Node*> nodes;
  std::unordered_map<const Node*, size_t> index;
  std::vector<std::vector<size_t>> succ;
  std::vector<std::vector<size_t>> pred;
  std::vector<std::string> writes;  // non-empty: why the node stays portable (it writes in place)
  std::unordered_set<const Value*> runtime;  // values computed from runtime data
};

// The named argument that schema argument `i` is, or null.
const ir::Arg* schema_arg(const Node& node, size_t i) {
  if (node.schema() == nullptr || i >= node.schema()->arguments().size()) return nullptr;
  return node.arg(node.schema()->arguments()[i].name);
}

GraphInfo build_graph_info(const Graph& g, const ir::Program* top) {
  GraphInfo info;
  info.graph = &g;
  for (Node* n : g.nodes()) {
    info.index[n] = info.nodes.size();
    info.nodes.push_back(n);
  }
  size_t n = info.nodes.size();
  std::vector<std::set<size_t>> succ(n);

  // Views and in-place results alias an argument: a write through them writes its root.
  std::unordered_map<const Value*, const Value*> root;
  auto root_of = [&](const Value* v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  std::unordered_map<const Value*, std::vector<size_t>> readers;
  std::vector<std::pair<size_t, const Value*>> written;  // (node, root)
  info.writes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *info.nodes[i];
    for (Value* v : node.operands()) {
      if (v->producer() != nullptr && v->producer()->owner() == &g) {
        succ[info.index.at(v->producer())].insert(i);
      }
      readers[root_of(v)].push_back(i);
    }
    if (node.schema() != nullptr) {
      for (size_t k = 0; k < node.num_outputs(); ++k) {
        std::optional<size_t> a = node.schema()->aliased_argument(k);
        const ir::Arg* arg = a ? schema_arg(node, *a) : nullptr;
        if (arg != nullptr && arg->kind() == ir::ArgKind::Value) {
          root[node.output(k)] = root_of(arg->as_value());
        }
      }
    }
    for (size_t a : ir::mutated_arguments(node)) {
      const ir::Arg* arg = schema_arg(node, a);
      if (arg == nullptr) continue;
      arg->for_each_value([&](Value* v) { written.emplace_back(i, root_of(v)); });
      if (info.writes[i].empty()) {
        info.writes[i] = "writes argument '" + node.schema()->arguments()[a].name +
                         "' in place; in-place writes stay on the portable path";
      }
    }
  }
  std::unordered_set<const Value*> written_roots;
  for (const auto& [m, r] : written) {
    written_roots.insert(r);
    for (size_t u : readers[r]) {
      if (u < m) succ[u].insert(m);
      if (u > m) succ[m].insert(u);
    }
  }

  // Runtime data: user inputs, inputs something writes, subgraph inputs; then what they reach.
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    bool runtime = true;
    if (top != nullptr) {
      const ir::InputSpec& spec = top->input_spec(i);
      auto listed = [&](const std::vector<std::string>& names) {
        return std::find(names.begin(), names.end(), spec.target) != names.end();
      };
      runtime = spec.kind == ir::InputKind::UserInput || listed(top->mutated_buffers) ||
                listed(top->mutated_parameters) || written_roots.contains(v);
    }
    if (runtime) info.runtime.insert(v);
  }
  for (Node* node : info.nodes) {
    bool runtime = !info.writes[info.index.at(node)].empty();
    for (Value* v : node->operands()) runtime = runtime || info.runtime.contains(v);
    if (runtime) {
      for (size_t k = 0; k < node->num_outputs(); ++k) info.runtime.insert(node->output(k));
    }
  }

  info.succ.resize(n);
  info.pred.resize(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t s : succ[i]) {
      info.succ[i].push_back(s);
      info.pred[s].push_back(i);
    }
  }
  return info;
}

// A partial assignment of nodes to clusters (partitions in the making). Nodes in no cluster are
// portable. Invariant: the quotient graph (one vertex per cluster, one per other node) is acyclic.
// Merging two clusters of an acyclic quotient graph makes a cycle exactly when a path joins them
// through some vertex outside both, so `can_merge` checks for such a path in both directions;
// every merge keeps the invariant, whatever order merges are tried in.
class Clustering {
 public:
  explicit Clustering(const GraphInfo& g) : g_(g), cluster_of_(g.nodes.size(), -1) {
    mark_.resize(g.nodes.size(), 0);
  }

  int cluster_of(size_t node) const { return cluster_of_[node]; }
  bool alive(int c) const { return alive_[c]; }
  int group(int c) const { return group_[c]; }
  const std::vector<size_t>& members(int c) const { return members_[c]; }
  size_t num_clusters() const { return members_.size(); }

  int make(size_t node, int group) {
    int c = static_cast<int>(members_.size());
    members_.push_back({node});
    alive_.push_back(true);
    group_.push_back(group);
    lo_.push_back(node);
    hi_.push_back(node);
    cluster_of_[node] = c;
    return c;
  }
  // Only for building caller groups before any check: the invariant is verified afterwards.
  void add(int c, size_t node) {
    members_[c].push_back(node);
    lo_[c] = std::min(lo_[c], node);
    hi_[c] = std::max(hi_[c], node);
    cluster_of_[node] = c;
  }
  void dissolve(int c) {
    for (size_t m : members_[c]) cluster_of_[m] = -1;
    members_[c].clear();
    alive_[c] = false;
  }

  bool can_merge(int a, int b) {
    if (group_[a] >= 0 && group_[b] >= 0) return false;  // caller groups are kept as given
    return !outside_path(a, b) && !outside_path(b, a);
  }
  int merge(int a, int b) {
    if (members_[a].size() < members_[b].size()) std::swap(a, b);
    for (size_t m : members_[b]) {
      cluster_of_[m] = a;
      members_[a].push_back(m);
    }
    members_[b].clear();
    alive_[b] = false;
    lo_[a] = std::min(lo_[a], lo_[b]);
    hi_[a] = std::max(hi_[a], hi_[b]);
    group_[a] = std::max(group_[a], group_[b]);
    return a;
  }
  size_t lo(int c) const { return lo_[c]; }
  size_t hi(int c) const { return hi_[c]; }

 private:
  // A path from cluster `a` to cluster `b` through at least one vertex of the quotient graph
  // that is neither: a node in no cluster, or another cluster, entered at any member and left
  // from any member (so the search expands a cluster whole the first time it reaches it).
  bool outside_path(int a, int b) {
    ++stamp_;
    cluster_mark_.resize(members_.size(), 0);
    std::vector<size_t> stack;
    auto enter = [&](size_t s) {
      int k = cluster_of_[s];
      if (k == a || k == b || mark_[s] == stamp_) return;
      if (k < 0) {
        mark_[s] = stamp_;
        stack.push_back(s);
        return;
      }
      if (cluster_mark_[k] == stamp_) return;
      cluster_mark_[k] = stamp_;
      for (size_t m : members_[k]) {
        mark_[m] = stamp_;
        stack.push_back(m);
      }
    };
    for (size_t m : members_[a]) {
      for (size_t s : g_.succ[m]) enter(s);
    }
    while (!stack.empty()) {
      size_t u = stack.back();
      stack.pop_back();
      for (size_t s : g_.succ[u]) {
        if (cluster_of_[s] == b) return true;
        enter(s);
      }
    }
    return false;
  }

  const GraphInfo& g_;
  std::vector<int> cluster_of_;
  std::vector<std::vector<size_t>> members_;
  std::vector<bool> alive_;
  std::vector<int> group_;
  std::vector<size_t> lo_, hi_;
  std::vector<uint32_t> mark_;
  std::vector<uint32_t> cluster_mark_;
  uint32_t stamp_ = 0;
};

std::string value_list(const std::vector<Node*>& nodes) {
  std::string s;
  for (const Node* n : nodes) s += (s.empty() ? "%" : ", %") + n->name();
  return s;
}

// Inputs in the stable order of C17: graph inputs by position, then node results in program
// order. A partition holding the whole graph takes every graph input, used or not.
std::vector<Value*> partition_inputs(const GraphInfo& g, const Clustering& cl, int c) {
  std::vector<Value*> graph_inputs;
  std::vector<std::pair<std::pair<size_t, size_t>, Value*>> results;
  std::unordered_set<const Value*> seen;
  bool whole = cl.members(c).size() == g.nodes.size();
  if (whole) graph_inputs = g.graph->inputs();
  for (size_t m : cl.members(c)) {
    for (Value* v : g.nodes[m]->operands()) {
      if (!seen.insert(v).second) continue;
      if (v->producer() == nullptr) {
        if (!whole) graph_inputs.push_back(v);
      } else {
        size_t p = g.index.at(v->producer());
        if (cl.cluster_of(p) != c) results.push_back({{p, v->output_index()}, v});
      }
    }
  }
  if (!whole) {
    std::sort(graph_inputs.begin(), graph_inputs.end(),
              [](const Value* x, const Value* y) { return x->output_index() < y->output_index(); });
  }
  std::sort(results.begin(), results.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& r : results) graph_inputs.push_back(r.second);
  return graph_inputs;
}

std::vector<Value*> partition_outputs(const GraphInfo& g, const Clustering& cl, int c,
                                      const std::vector<size_t>& sorted_members) {
  std::vector<Value*> outs;
  for (size_t m : sorted_members) {
    const Node& node = *g.nodes[m];
    for (size_t k = 0; k < node.num_outputs(); ++k) {
      Value* v = node.output(k);
      bool used_outside = v->is_graph_output();
      for (const Node* u : v->users()) {
        auto it = g.index.find(u);
        used_outside = used_outside || it == g.index.end() || cl.cluster_of(it->second) != c;
      }
      if (used_outside) outs.push_back(v);
    }
  }
  return outs;
}

bool has_runtime_input(const GraphInfo& g, const Clustering& cl, int c) {
  for (const Value* v : partition_inputs(g, cl, c)) {
    if (g.runtime.contains(v)) return true;
  }
  return false;
}

// Merges clusters joined by an edge and, with `siblings`, clusters reading a common value (fewer
// delegate calls), wherever the quotient graph stays acyclic; repeats until nothing merges.
// Candidates come from edges and shared reads, not from all pairs of clusters, so a round costs
// one acyclicity check per edge rather than one per pair.
void merge_clusters(const GraphInfo& g, Clustering& cl, bool siblings) {
  std::vector<std::pair<size_t, size_t>> candidates;
  for (size_t u = 0; u < g.nodes.size(); ++u) {
    for (size_t v : g.succ[u]) candidates.emplace_back(u, v);
  }
  if (siblings) {
    // Readers in no cluster are skipped: they would hide two partitioned readers from each other.
    std::unordered_map<const Value*, size_t> last_reader;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (cl.cluster_of(i) < 0) continue;
      for (const Value* v : g.nodes[i]->operands()) {
        auto [it, fresh] = last_reader.emplace(v, i);
        if (!fresh && it->second != i) candidates.emplace_back(it->second, i);
        it->second = i;
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [u, v] : candidates) {
      int a = cl.cluster_of(u), b = cl.cluster_of(v);
      if (a < 0 || b < 0 || a == b) continue;
      if (cl.can_merge(a, b)) {
        cl.merge(a, b);
        changed = true;
      }
    }
  }
}

// Greedy pass in program order: each supported node joins the partitions of its producers,
// nearest first, wherever the merge keeps the quotient graph acyclic.
void grow_clusters(const GraphInfo& g, Clustering& cl, const std::vector<bool>& supported) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!supported[i] || cl.cluster_of(i) >= 0) continue;
    int cur = cl.make(i, -1);
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<int> candidates;
      for (size_t p : g.pred[i]) {
        int c = cl.cluster_of(p);
        if (c >= 0 && c != cur &&
            std::find(candidates.begin(), candidates.end(), c) == candidates.end()) {
          candidates.push_back(c);
        }
      }
      std::sort(candidates.begin(), candidates.end(),
                [&](int x, int y) { return cl.hi(x) > cl.hi(y); });
      for (int c : candidates) {
        if (cl.can_merge(cur, c)) {
          cur = cl.merge(cur, c);
          changed = true;
        }
      }
    }
  }
}

const char* kConstantReason =
    "partition has no runtime input (constants only); constant folding computes it";

// Records the clusters of `g` as partitions and the other nodes as portable with `reason_of`.
template <typename ReasonOf>
void emit(const GraphInfo& g, const Clustering& cl, ReasonOf reason_of, PartitionResult& out) {
  std::vector<int> ids;
  for (size_t c = 0; c < cl.num_clusters(); ++c) {
    if (cl.alive(static_cast<int>(c))) ids.push_back(static_cast<int>(c));
  }
  std::sort(ids.begin(), ids.end(), [&](int x, int y) { return cl.lo(x) < cl.lo(y); });
  for (int c : ids) {
    Partition p;
    p.graph = g.graph;
    p.group = cl.group(c);
    std::vector<size_t> members = cl.members(c);
    std::sort(members.begin(), members.end());
    for (size_t m : members) p.nodes.push_back(g.nodes[m]);
    p.inputs = partition_inputs(g, cl, c);
    p.outputs = partition_outputs(g, cl, c, members);
    out.partitions.push_back(std::move(p));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (cl.cluster_of(i) < 0) out.portable.push_back({g.nodes[i], reason_of(i)});
  }
}

// Nodes, in graph order, of every subgraph below the nodes of `g` left portable.
std::vector<const Graph*> portable_subgraphs(const GraphInfo& g, const Clustering& cl) {
  std::vector<const Graph*> subs;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (cl.cluster_of(i) >= 0) continue;
    for (size_t s = 0; s < g.nodes[i]->num_subgraphs(); ++s)
      subs.push_back(g.nodes[i]->subgraph(s));
  }
  return subs;
}

class CapabilityPartitioner {
 public:
  CapabilityPartitioner(const BackendSupport& backend, const PartitionOptions& options)
      : backend_(backend), options_(options) {}

  // Why the backend cannot run `node` (with everything nested in it), or "" when it can.
  std::string refusal(const Node& node, const std::string& writes) {
    if (!writes.empty()) return writes;
    Support s = backend_.check(node);
    if (!s.supported) return s.reason.empty() ? "not supported" : s.reason;
    for (size_t k = 0; k < node.num_subgraphs(); ++k) {
      GraphInfo sub = build_graph_info(*node.subgraph(k), nullptr);
      for (size_t i = 0; i < sub.nodes.size(); ++i) {
        std::string r = refusal(*sub.nodes[i], sub.writes[i]);
        if (!r.empty()) {
          return "subgraph " + std::to_string(k) + " node %" + sub.nodes[i]->name() + " (" +
                 sub.nodes[i]->qualified_op() + "): " + r;
        }
      }
    }
    return "";
  }

  void run(const Graph& graph, const ir::Program* top, PartitionResult& out) {
    GraphInfo g = build_graph_info(graph, top);
    std::vector<std::string> reasons(g.nodes.size());
    std::vector<bool> supported(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      reasons[i] = refusal(*g.nodes[i], g.writes[i]);
      supported[i] = reasons[i].empty();
    }
    Clustering cl(g);
    grow_clusters(g, cl, supported);
    merge_clusters(g, cl, /*siblings=*/false);
    dissolve_constant_only(g, cl, reasons, kConstantReason);
    if (options_.merge_independent) merge_clusters(g, cl, /*siblings=*/true);
    emit(
        g, cl, [&](size_t i) { return reasons[i]; }, out);
    for (const Graph* sub : portable_subgraphs(g, cl)) run(*sub, nullptr, out);
  }

  static void dissolve_constant_only(const GraphInfo& g, Clustering& cl,
                                     std::vector<std::string>& reasons, const std::string& why) {
    for (size_t c = 0; c < cl.num_clusters(); ++c) {
      int id = static_cast<int>(c);
      if (!cl.alive(id) || has_runtime_input(g, cl, id)) continue;
      for (size_t m : cl.members(id)) reasons[m] = why;
      cl.dissolve(id);
    }
  }

 private:
  const BackendSupport& backend_;
  const PartitionOptions& options_;
};

Status require_all(const PartitionResult& r) {
  if (r.portable.empty()) return Status();
  std::string msg = "backend " + r.backend + " cannot take the whole program:";
  for (const PortableNode& p : r.portable) msg += "\n  " + p.node->describe() + ": " + p.reason;
  return Status::error(msg);
}

}  // namespace

StatusOr<PartitionResult> partition_by_capability(const ir::Program& program,
                                                  const BackendSupport& backend,
                                                  const PartitionOptions& options) {
  PartitionResult result;
  result.backend = std::string(backend.name());
  CapabilityPartitioner(backend, options).run(program.graph(), &program, result);
  if (options.require_all) EMBER_IR_RETURN_IF_ERROR(require_all(result));
  return result;
}

namespace {

void collect_nodes(const Graph& g, std::unordered_map<std::string, std::vector<Node*>>& by_name) {
  for (Node* n : g.nodes()) {
    by_name[n->name()].push_back(n);
    for (size_t s = 0; s < n->num_subgraphs(); ++s) collect_nodes(*n->subgraph(s), by_name);
  }
}

std::string group_text(size_t gi, const std::vector<std::string>& names) {
  std::string s = "group " + std::to_string(gi) + " [";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + "]";
}

// Caller groups whose vertices lie on a cycle of the quotient graph, one message per cycle.
// Only groups can close a cycle (the nodes alone form a DAG), so searching from each group
// finds them all: its strongly connected component is what it reaches and what reaches it.
std::vector<std::string> group_cycles(const GraphInfo& g, const Clustering& cl,
                                      const std::vector<std::vector<std::string>>& groups) {
  std::vector<std::string> errors;
  std::set<int> reported;
  for (size_t c = 0; c < cl.num_clusters(); ++c) {
    int start = static_cast<int>(c);
    if (!cl.alive(start) || reported.contains(cl.group(start))) continue;
    auto reach = [&](bool forward, std::set<int>& groups_hit, std::vector<bool>& nodes_hit) {
      nodes_hit.assign(g.nodes.size(), false);
      std::vector<size_t> stack;
      std::set<int> expanded{start};
      auto step = [&](size_t from) {
        for (size_t s : forward ? g.succ[from] : g.pred[from]) {
          if (nodes_hit[s]) continue;
          nodes_hit[s] = true;
          stack.push_back(s);
        }
      };
      for (size_t m : cl.members(start)) step(m);
      while (!stack.empty()) {
        size_t u = stack.back();
        stack.pop_back();
        int cu = cl.cluster_of(u);
        if (cu >= 0) {
          groups_hit.insert(cl.group(cu));
          if (!expanded.insert(cu).second) continue;
          for (size_t m : cl.members(cu)) step(m);
        } else {
          step(u);
        }
      }
    };
    std::set<int> fwd, bwd;
    std::vector<bool> fwd_nodes, bwd_nodes;
    reach(true, fwd, fwd_nodes);
    if (!fwd.contains(cl.group(start))) continue;
    reach(false, bwd, bwd_nodes);
    std::vector<int> on_cycle;
    for (int gi : fwd) {
      if (bwd.contains(gi)) on_cycle.push_back(gi);
    }
    std::vector<Node*> through;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (cl.cluster_of(i) < 0 && fwd_nodes[i] && bwd_nodes[i]) through.push_back(g.nodes[i]);
    }
    std::string msg;
    for (size_t k = 0; k < on_cycle.size(); ++k) {
      reported.insert(on_cycle[k]);
      msg += (k == 0                     ? ""
              : k + 1 == on_cycle.size() ? " and "
                                         : ", ") +
             group_text(static_cast<size_t>(on_cycle[k]), groups[on_cycle[k]]);
    }
    msg += on_cycle.size() == 1 ? " depends on itself" : " depend on each other";
    msg += " through " + value_list(through) + ", outside the group" +
           (on_cycle.size() == 1 ? "" : "s");
    errors.push_back(msg);
  }
  return errors;
}

}  // namespace

StatusOr<PartitionResult> partition_by_groups(const ir::Program& program,
                                              const std::vector<std::vector<std::string>>& groups,
                                              const BackendSupport* backend,
                                              const PartitionOptions& options) {
  std::unordered_map<std::string, std::vector<Node*>> by_name;
  collect_nodes(program.graph(), by_name);
  std::vector<std::string> errors;
  std::unordered_map<const Node*, int> group_of;
  std::map<const Graph*, std::vector<int>> groups_in;  // graph -> its groups
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Graph* graph = nullptr;
    if (groups[gi].empty()) errors.push_back(group_text(gi, groups[gi]) + " is empty");
    for (const std::string& name : groups[gi]) {
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        errors.push_back(group_text(gi, groups[gi]) + ": no node named " + name);
        continue;
      }
      if (it->second.size() > 1) {
        errors.push_back(group_text(gi, groups[gi]) + ": several nodes are named " + name);
        continue;
      }
      Node* node = it->second.front();
      auto [prev, fresh] = group_of.emplace(node, static_cast<int>(gi));
      if (!fresh) {
        errors.push_back("node " + name + " is in " +
                         group_text(static_cast<size_t>(prev->second), groups[prev->second]) +
                         " and in " + group_text(gi, groups[gi]));
        continue;
      }
      if (graph != nullptr && graph != node->owner()) {
        errors.push_back(group_text(gi, groups[gi]) + " spans two graphs (node " + name + ")");
      }
      graph = node->owner();
    }
    if (graph != nullptr) groups_in[graph].push_back(static_cast<int>(gi));
  }
  // A grouped node with subgraphs is delegated whole, so nothing inside it can be grouped apart.
  for (const auto& [node, gi] : group_of) {
    for (const Node* up = node->owner()->parent_node(); up != nullptr;
         up = up->owner()->parent_node()) {
      auto it = group_of.find(up);
      if (it != group_of.end()) {
        errors.push_back(group_text(gi, groups[gi]) + ": node " + node->name() + " is inside " +
                         up->name() + ", which " +
                         group_text(static_cast<size_t>(it->second), groups[it->second]) +
                         " delegates whole");
      }
    }
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    std::string msg = "invalid caller groups:";
    for (const std::string& e : errors) msg += "\n  " + e;
    return Status::error(msg);
  }

  PartitionResult result;
  result.backend = backend != nullptr ? std::string(backend->name()) : "(caller groups)";
  std::vector<std::string> cycle_errors;
  std::vector<std::string> support_errors;

  // Partitions one graph, then the subgraphs of its portable nodes.
  struct Walker {
    const std::vector<std::vector<std::string>>& groups;
    const BackendSupport* backend;
    const PartitionOptions& opts;
    const std::unordered_map<const Node*, int>& group_of;
    std::vector<std::string>& cycle_errors;
    std::vector<std::string>& support_errors;
    PartitionResult& out;

    void run(const Graph& graph, const ir::Program* top) {
      GraphInfo g = build_graph_info(graph, top);
      std::vector<std::string> reasons(g.nodes.size());
      std::vector<bool> supported(g.nodes.size(), false);
      std::optional<CapabilityPartitioner> capability;
      if (backend != nullptr) capability.emplace(*backend, opts);
      Clustering cl(g);
      std::map<int, int> cluster_of_group;
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        auto it = group_of.find(g.nodes[i]);
        std::string refusal = capability ? capability->refusal(*g.nodes[i], g.writes[i])
                                         : std::string("not in any caller group");
        if (it == group_of.end()) {
          reasons[i] = refusal;
          supported[i] = capability && refusal.empty();
          continue;
        }
        if (capability && !refusal.empty()) {
          support_errors.push_back(group_text(static_cast<size_t>(it->second), groups[it->second]) +
                                   ": " + g.nodes[i]->describe() + ": " + refusal);
        }
        auto c = cluster_of_group.find(it->second);
        if (c == cluster_of_group.end()) {
          cluster_of_group[it->second] = cl.make(i, it->second);
        } else {
          cl.add(c->second, i);
        }
      }
      std::vector<std::string> cycles = group_cycles(g, cl, groups);
      if (!cycles.empty()) {
        cycle_errors.insert(cycle_errors.end(), cycles.begin(), cycles.end());
        return;  // merging around a cycle means nothing; report every graph's cycles
      }
      if (capability) {
        grow_clusters(g, cl, supported);
        merge_clusters(g, cl, /*siblings=*/false);
      }
      for (size_t c = 0; c < cl.num_clusters(); ++c) {
        int id = static_cast<int>(c);
        if (!cl.alive(id) || has_runtime_input(g, cl, id)) continue;
        std::string why = kConstantReason;
        if (cl.group(id) >= 0) {
          why = "caller " + group_text(static_cast<size_t>(cl.group(id)), groups[cl.group(id)]) +
                " has no runtime input (constants only); constant folding computes it";
        }
        for (size_t m : cl.members(id)) reasons[m] = why;
        cl.dissolve(id);
      }
      if (capability && opts.merge_independent) merge_clusters(g, cl, /*siblings=*/true);
      emit(
          g, cl, [&](size_t i) { return reasons[i]; }, out);
      for (const Graph* sub : portable_subgraphs(g, cl)) run(*sub, nullptr);
    }
  };
  Walker walker{groups, backend, options, group_of, cycle_errors, support_errors, result};
  walker.run(program.graph(), &program);
  if (!cycle_errors.empty() || !support_errors.empty()) {
    std::string msg;
    if (!cycle_errors.empty()) {
      msg =
          "caller groups form a dependency cycle (partitions must not depend on each other "
          "through nodes outside them):";
      for (const std::string& e : cycle_errors) msg += "\n  " + e;
    }
    if (!support_errors.empty()) {
      msg += std::string(msg.empty() ? "" : "\n") + "backend " + result.backend +
             " cannot run grouped nodes:";
      for (const std::string& e : support_errors) msg += "\n  " + e;
    }
    return Status::error(msg);
  }
  if (options.require_all) EMBER_IR_RETURN_IF_ERROR(require_all(result));
  return result;
}

namespace {

std::string graph_name(const Graph* g) {
  const Node* parent = g->parent_node();
  if (parent == nullptr) return "top level";
  size_t k = 0;
  for (; k < parent->num_subgraphs(); ++k) {
    if (parent->subgraph(k) == g) break;
  }
  return "subgraph " + std::to_string(k) + " of %" + parent->name() + " (" +
         graph_name(parent->owner()) + ")";
}

std::string values_text(const std::vector<Value*>& values) {
  std::string s;
  for (const Value* v : values) s += (s.empty() ? "%" : ", %") + v->name();
  return s.empty() ? "(none)" : s;
}

std::string plural(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string headline(const PartitionResult& result) {
  return "backend " + result.backend + ": " + plural(result.partitions.size(), "partition") + ", " +
         plural(result.portable.size(), "portable node") + "\n";
}

}  // namespace

std::string describe_partitions(const PartitionResult& result) {
  std::string s = headline(result);
  for (size_t i = 0; i < result.partitions.size(); ++i) {
    const Partition& p = result.partitions[i];
    s += "partition " + std::to_string(i) + " in " + graph_name(p.graph);
    if (p.group >= 0) s += " (caller group " + std::to_string(p.group) + ")";
    s += ", " + std::to_string(p.nodes.size()) + " node" + (p.nodes.size() == 1 ? "" : "s") + "\n";
    s += "  inputs: " + values_text(p.inputs) + "\n";
    for (const Node* n : p.nodes) s += "  node %" + n->name() + " (" + n->qualified_op() + ")\n";
    s += "  outputs: " + values_text(p.outputs) + "\n";
  }
  for (const PortableNode& p : result.portable) {
    s += "portable %" + p.node->name() + " (" + p.node->qualified_op() + ") in " +
         graph_name(p.node->owner()) + ": " + p.reason + "\n";
  }
  return s;
}

std::string summarize_partitions(const PartitionResult& result) {
  constexpr size_t kOps = 4;    // ops named per partition
  constexpr size_t kNames = 3;  // node names per kind of portable node
  std::string s = headline(result);
  for (size_t i = 0; i < result.partitions.size(); ++i) {
    const Partition& p = result.partitions[i];
    std::map<std::string, size_t> count;
    for (const Node* n : p.nodes) ++count[std::string(n->op())];
    std::vector<std::pair<std::string, size_t>> ops(count.begin(), count.end());
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string list;
    for (size_t k = 0; k < ops.size() && k < kOps; ++k) {
      list += (k ? ", " : "") + ops[k].first + " x" + std::to_string(ops[k].second);
    }
    if (ops.size() > kOps) list += ", " + plural(ops.size() - kOps, "more op");
    s += "  partition " + std::to_string(i) + " in " + graph_name(p.graph) + ": " +
         plural(p.nodes.size(), "node") + " (" + list + "), " + plural(p.inputs.size(), "input") +
         ", " + plural(p.outputs.size(), "output") + "\n";
  }
  // Portable nodes by op and reason, the values a reason names aside ("dynamic shape on %x"),
  // in first-seen order.
  struct Kind {
    std::vector<const PortableNode*> nodes;
    bool reasons_differ = false;
  };
  std::vector<Kind> kinds;
  std::map<std::string, size_t> index;
  for (const PortableNode& p : result.portable) {
    std::string key = p.node->qualified_op() + "\t";
    for (size_t i = 0; i < p.reason.size(); ++i) {
      key += p.reason[i];
      if (p.reason[i] != '%') continue;
      while (i + 1 < p.reason.size() &&
             (std::isalnum(static_cast<unsigned char>(p.reason[i + 1])) || p.reason[i + 1] == '_' ||
              p.reason[i + 1] == '.')) {
        ++i;
      }
    }
    auto [it, inserted] = index.emplace(key, kinds.size());
    if (inserted) kinds.emplace_back();
    Kind& kind = kinds[it->second];
    if (!kind.nodes.empty() && kind.nodes[0]->reason != p.reason) kind.reasons_differ = true;
    kind.nodes.push_back(&p);
  }
  for (const Kind& kind : kinds) {
    std::string names;
    for (size_t k = 0; k < kind.nodes.size() && k < kNames; ++k) {
      names += (k ? ", %" : "%") + kind.nodes[k]->node->name();
    }
    if (kind.nodes.size() > kNames) names += ", ...";
    s += "  portable: " + kind.nodes[0]->node->qualified_op() + " x" +
         std::to_string(kind.nodes.size()) + " (" + names + "): " + kind.nodes[0]->reason +
         (kind.reasons_differ ? " (the first; --verbose gives each)" : "") + "\n";
  }
  return s;
}

}  // namespace ember::partition
