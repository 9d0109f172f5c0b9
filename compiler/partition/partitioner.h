// Partitioning: which nodes of a program a backend delegate runs, in which groups (C13, C14, C17).
//
//   StatusOr<PartitionResult> r = partition_by_capability(program, table);
//   if (!r.ok()) return r.status();                   // only with require_all, or a bad program
//   std::cout << describe_partitions(*r);             // partitions, and why the rest stays
//   portable
//
// Every graph is partitioned on its own: the top level and, for nodes left on the portable path,
// their control-flow subgraphs (recursively). A partition never spans two graphs.
//
// Guarantees, for every graph: the graph with one vertex per partition and one per node left on
// the portable path is acyclic (partitions are convex and never depend on each other through
// portable nodes), counting both data edges and the ordering an in-place write imposes on the
// other readers of the tensor it writes. Partitions with no runtime input (constants only) are
// left for constant folding. The result does not own anything: its pointers are into `program`,
// valid while the program's nodes are not erased. The program is not modified.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/partition/backend_support.h"

namespace ember::partition {

struct Partition {
  const ir::Graph* graph = nullptr;  // the graph holding the nodes (the top level or a subgraph)
  std::vector<ir::Node*> nodes;      // in program order
  // The values the partition reads from outside, in a stable order (C17): the graph's inputs in
  // the graph's order, then node results in program order. A partition holding every node of its
  // graph takes all the graph's inputs, unused ones included, so arguments keep their positions.
  std::vector<ir::Value*> inputs;
  // The partition's results used outside it (by other nodes or as graph outputs), program order.
  std::vector<ir::Value*> outputs;
  // Index of the caller group it came from (partition_by_groups), or -1.
  int group = -1;
};

// A node no partition holds, and why.
struct PortableNode {
  ir::Node* node = nullptr;
  std::string reason;
};

struct PartitionResult {
  std::string backend;                 // the backend's name, for reports
  std::vector<Partition> partitions;   // top level first, then subgraphs; by first node in each
  std::vector<PortableNode> portable;  // same order, each graph in program order
};

struct PartitionOptions {
  // Also merge partitions that read a common value (sibling branches) when no path connects
  // them: fewer delegate calls. Caller groups are never merged with each other.
  bool merge_independent = true;
  // The user asked the backend to take the whole program: fail, naming every node left portable
  // and its reason, instead of leaving it portable (C14).
  bool require_all = false;
};

// Maximal groups of nodes `backend` supports, with an acyclic partition graph (C13); every other
// node is left portable with its reason (C14). Fails only with `require_all`.
ir::StatusOr<PartitionResult> partition_by_capability(const ir::Program& program,
                                                      const BackendSupport& backend,
                                                      const PartitionOptions& options = {});

// Partitions given by the caller as groups of node names; each group becomes one partition, kept
// as given (never split, never merged with another group). When `backend` is not null, its
// supported nodes outside the groups are partitioned by capability too, joining a group's
// partition where that keeps the partition graph acyclic, and a group node it does not support
// is an error. Groups that depend on each other, or on themselves through a node outside them,
// fail with an error naming every group on such a cycle. Unknown or repeated names, and groups
// spanning two graphs, are errors too.
ir::StatusOr<PartitionResult> partition_by_groups(
    const ir::Program& program, const std::vector<std::vector<std::string>>& groups,
    const BackendSupport* backend = nullptr, const PartitionOptions& options = {});

// A text report of `result`, the form `ember inspect` shows: each partition with its graph,
// inputs, nodes and outputs, then each portable node with its op and reason.
std::string describe_partitions(const PartitionResult& result);
// The same, a line per partition (node count and its most frequent ops) and a line per kind of
// portable node (op and reason, with how many and the first names): what `ember compile` prints
// unless asked for --verbose.
std::string summarize_partitions(const PartitionResult& result);

}  // namespace ember::partition
