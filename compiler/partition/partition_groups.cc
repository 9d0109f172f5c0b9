// partition_by_groups: partitions the caller names, checked and grown by a backend's support.
#include <map>
#include <optional>
#include <set>

#include "compiler/partition/partitioner.h"
#include "compiler/partition/partitioner_internal.h"

namespace ember::partition {

using namespace internal;

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

}  // namespace ember::partition
