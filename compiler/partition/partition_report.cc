// describe_partitions and summarize_partitions: the reports of a PartitionResult.
#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "compiler/partition/partitioner.h"

namespace ember::partition {

namespace {

using ir::Graph;
using ir::Node;
using ir::Value;

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
