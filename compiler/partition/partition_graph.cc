// The graph view and the clustering both partitioners build on: dependencies (in-place writes
// included), runtime data, growing and merging clusters, and partition inputs and outputs.
#include <set>

#include "compiler/partition/partitioner_internal.h"

namespace ember::partition::internal {

namespace {

// The named argument that schema argument `i` is, or null.
const ir::Arg* schema_arg(const Node& node, size_t i) {
  if (node.schema() == nullptr || i >= node.schema()->arguments().size()) return nullptr;
  return node.arg(node.schema()->arguments()[i].name);
}

}  // namespace

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

}  // namespace ember::partition::internal
