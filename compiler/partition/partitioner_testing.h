// Helpers of the partitioner's tests (partitioner_test.cc, backend_support_test.cc): a test
// backend, lookups into a PartitionResult, and an independent check of C13.
//
//   auto p = parse("graph(%x: f32[4]) { ... }");
//   PartitionResult r = partition_graph(p->graph(), test_backend());
//   EXPECT_EQ(partition_of(r, "a"), 0);
//   expect_acyclic(r);
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/partition/partitioner.h"

namespace ember::partition {

// The program `text` parses to, or null (and a failed expectation) when it does not parse.
std::unique_ptr<ir::Program> parse(const std::string& text);

// A backend with fp32 math only, rank limit 5, that supports + and * but not cumsum.
OpSupportTable test_backend(size_t max_rank = 5);

// Index of the partition holding the node named `name`, or -1 when no partition holds it.
int partition_of(const PartitionResult& r, const std::string& name);
// The reason the node named `name` stays portable, or "(not portable)".
std::string reason_of(const PartitionResult& r, const std::string& name);
// The names of `values`, in order.
std::vector<std::string> names(const std::vector<ir::Value*>& values);

// An independent check of C13: in every graph the result touches, the graph with one vertex per
// partition and one per other node, joined by data edges, has no cycle.
void expect_acyclic(const PartitionResult& r);

}  // namespace ember::partition
