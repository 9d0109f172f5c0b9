#include "compiler/partition/partitioner.h"

#include "compiler/partition/partitioner_internal.h"

namespace ember::partition {

namespace internal {

std::string CapabilityPartitioner::refusal(const Node& node, const std::string& writes) {
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

void CapabilityPartitioner::run(const Graph& graph, const ir::Program* top, PartitionResult& out) {
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

void CapabilityPartitioner::dissolve_constant_only(const GraphInfo& g, Clustering& cl,
                                                   std::vector<std::string>& reasons,
                                                   const std::string& why) {
  for (size_t c = 0; c < cl.num_clusters(); ++c) {
    int id = static_cast<int>(c);
    if (!cl.alive(id) || has_runtime_input(g, cl, id)) continue;
    for (size_t m : cl.members(id)) reasons[m] = why;
    cl.dissolve(id);
  }
}

Status require_all(const PartitionResult& r) {
  if (r.portable.empty()) return Status();
  std::string msg = "backend " + r.backend + " cannot take the whole program:";
  for (const PortableNode& p : r.portable) msg += "\n  " + p.node->describe() + ": " + p.reason;
  return Status::error(msg);
}

}  // namespace internal

ir::StatusOr<PartitionResult> partition_by_capability(const ir::Program& program,
                                                      const BackendSupport& backend,
                                                      const PartitionOptions& options) {
  PartitionResult result;
  result.backend = std::string(backend.name());
  internal::CapabilityPartitioner(backend, options).run(program.graph(), &program, result);
  if (options.require_all) EMBER_IR_RETURN_IF_ERROR(internal::require_all(result));
  return result;
}

}  // namespace ember::partition
