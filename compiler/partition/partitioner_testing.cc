#include "compiler/partition/partitioner_testing.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "compiler/ir/parser.h"

namespace ember::partition {

std::unique_ptr<ir::Program> parse(const std::string& text) {
  ir::StatusOr<std::unique_ptr<ir::Program>> p = ir::parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::move(*p) : nullptr;
}

OpSupportTable test_backend(size_t max_rank) {
  OpSupportTable t("test", {ir::DType::Float32}, max_rank);
  t.add({.op = "aten::add"}).add({.op = "aten::mul"}).add({.op = "aten::cat"});
  t.add({.op = "aten::mm"}).add({.op = "aten::view"}).add({.op = "aten::sum"});
  t.add({.op = "aten::elu", .attrs = {{"alpha", {1.0}}, {"scale", {1.0}}}});
  t.add(
      {.op = "aten::_to_copy", .dtypes = {ir::DType::Float32, ir::DType::Int32, ir::DType::Int64}});
  t.add({.op = "aten::gt", .output_dtypes = {ir::DType::Bool}});
  t.add({.op = "aten::index", .arg_dtypes = {{"indices", {ir::DType::Bool, ir::DType::Int64}}}});
  t.add({.op = "aten::nonzero", .output_dtypes = {ir::DType::Int64}});
  t.add({.op = "custom::filter"});
  t.add({.op = "higher_order::cond", .dtypes = {ir::DType::Float32, ir::DType::Bool}});
  return t;
}

int partition_of(const PartitionResult& r, const std::string& name) {
  for (size_t i = 0; i < r.partitions.size(); ++i) {
    for (const ir::Node* n : r.partitions[i].nodes) {
      if (n->name() == name) return static_cast<int>(i);
    }
  }
  return -1;
}

std::string reason_of(const PartitionResult& r, const std::string& name) {
  for (const PortableNode& p : r.portable) {
    if (p.node->name() == name) return p.reason;
  }
  return "(not portable)";
}

std::vector<std::string> names(const std::vector<ir::Value*>& values) {
  std::vector<std::string> out;
  for (const ir::Value* v : values) out.push_back(v->name());
  return out;
}

void expect_acyclic(const PartitionResult& r) {
  std::set<const ir::Graph*> graphs;
  std::map<const ir::Node*, std::string> vertex;
  for (size_t i = 0; i < r.partitions.size(); ++i) {
    graphs.insert(r.partitions[i].graph);
    for (const ir::Node* n : r.partitions[i].nodes) vertex[n] = "P" + std::to_string(i);
  }
  for (const PortableNode& p : r.portable) graphs.insert(p.node->owner());
  for (const ir::Graph* g : graphs) {
    std::map<std::string, std::set<std::string>> edges;
    auto v = [&](const ir::Node* n) {
      auto it = vertex.find(n);
      return it == vertex.end() ? "%" + n->name() : it->second;
    };
    for (const ir::Node* n : g->nodes()) {
      for (const ir::Value* operand : n->operands()) {
        const ir::Node* p = operand->producer();
        if (p != nullptr && p->owner() == g && v(p) != v(n)) edges[v(p)].insert(v(n));
      }
    }
    std::map<std::string, int> state;  // 1: on the stack, 2: done
    std::function<bool(const std::string&)> cyclic = [&](const std::string& u) {
      state[u] = 1;
      for (const std::string& w : edges[u]) {
        if (state[w] == 1 || (state[w] == 0 && cyclic(w))) return true;
      }
      state[u] = 2;
      return false;
    };
    for (const auto& [u, ignored] : edges) {
      EXPECT_FALSE(state[u] == 0 && cyclic(u))
          << "partition graph has a cycle through " << u << "\n"
          << describe_partitions(r);
    }
  }
}

}  // namespace ember::partition
