// Internal to compiler/partition: the graph view, the clustering and the helpers that
// partitioner.cc (capability), partition_groups.cc (caller groups) and partition_graph.cc share.
// Not a public header; see partitioner.h for the API.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/partition/partitioner.h"

namespace ember::partition::internal {

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

GraphInfo build_graph_info(const Graph& g, const ir::Program* top);

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

std::string value_list(const std::vector<Node*>& nodes);

// Inputs in the stable order of C17: graph inputs by position, then node results in program
// order. A partition holding the whole graph takes every graph input, used or not.
std::vector<Value*> partition_inputs(const GraphInfo& g, const Clustering& cl, int c);
std::vector<Value*> partition_outputs(const GraphInfo& g, const Clustering& cl, int c,
                                      const std::vector<size_t>& sorted_members);
bool has_runtime_input(const GraphInfo& g, const Clustering& cl, int c);

// Merges clusters joined by an edge and, with `siblings`, clusters reading a common value (fewer
// delegate calls), wherever the quotient graph stays acyclic; repeats until nothing merges.
// Candidates come from edges and shared reads, not from all pairs of clusters, so a round costs
// one acyclicity check per edge rather than one per pair.
void merge_clusters(const GraphInfo& g, Clustering& cl, bool siblings);

// Greedy pass in program order: each supported node joins the partitions of its producers,
// nearest first, wherever the merge keeps the quotient graph acyclic.
void grow_clusters(const GraphInfo& g, Clustering& cl, const std::vector<bool>& supported);

inline constexpr const char* kConstantReason =
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
std::vector<const Graph*> portable_subgraphs(const GraphInfo& g, const Clustering& cl);

// Partitions by what `backend` supports (partition_by_capability); partition_by_groups uses its
// refusals for nodes outside the caller groups.
class CapabilityPartitioner {
 public:
  CapabilityPartitioner(const BackendSupport& backend, const PartitionOptions& options)
      : backend_(backend), options_(options) {}

  // Why the backend cannot run `node` (with everything nested in it), or "" when it can.
  std::string refusal(const Node& node, const std::string& writes);
  void run(const Graph& graph, const ir::Program* top, PartitionResult& out);
  static void dissolve_constant_only(const GraphInfo& g, Clustering& cl,
                                     std::vector<std::string>& reasons, const std::string& why);

 private:
  const BackendSupport& backend_;
  const PartitionOptions& options_;
};

// Ok when nothing stays portable; otherwise the error that lists every portable node.
Status require_all(const PartitionResult& r);

}  // namespace ember::partition::internal
