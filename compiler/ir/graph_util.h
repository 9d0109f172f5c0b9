// Helpers the passes share: walking every graph (C4), view chains, and the set of written tensors.
//
//   for_each_graph(program.graph(), [&](Graph& g) { ... });   // top level, then subgraphs
//   WrittenSet w = written_tensors(program);                      // roots any op writes (C1)
//   if (w.contains(alias_root(v))) { /* never fold v */ }
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/ir/graph.h"

namespace ember::ir {

// Calls f on `graph` and then on every nested subgraph, depth first, in program order.
void for_each_graph(Graph& graph, const std::function<void(Graph&)>& f);
void for_each_graph(const Graph& graph, const std::function<void(const Graph&)>& f);

// True for ops whose result aliases their first input without writing it (view, select, t...).
bool is_view_node(const Node& node);
// The value a view (or an in-place op's result) aliases; null when `v` is not an alias.
Value* alias_parent(const Value* v);
// Follows alias_parent to the tensor that owns the storage.
Value* alias_root(Value* v);

// Every storage root an in-place op writes, directly or through a chain of views, in any graph,
// plus the graph inputs the program's signature lists as mutated. A write inside a subgraph to
// one of its inputs marks the outer operand bound to that input too.
std::unordered_set<const Value*> written_tensors(const Program& program);

// "node add_ (aten::add_.Tensor) in module layer1 (Block): reason".
std::string node_error(const Node& node, const std::string& reason);

// The static sizes of a tensor type, or false when a dim is symbolic.
bool static_sizes(const TensorType& type, std::vector<int64_t>* sizes);

// The integers of `node`'s list argument `name`; false when it is absent or an item is not a
// constant integer (a symbolic size).
bool static_int_list(const Node& node, const char* name, std::vector<int64_t>* items);

// The element strides of a dense tensor of `type` laid out in its dim order (row-major when the
// dim order is empty); false when a size is symbolic or the dim order is malformed.
bool dense_strides(const TensorType& type, std::vector<int64_t>* strides);

// True when, in PyTorch, `v`'s elements fill its storage exactly: storage offset 0, no gaps and no
// overlaps, laid out in `v`'s dim order. So is the result of an op that computes a new tensor, an
// input of the top-level graph (Ember's inputs are dense), an in-place op's result on such a
// tensor, and a permuting or reshaping view (view, permute, transpose, squeeze...) of one; a
// slice, select, expand or as_strided view, or a subgraph input, is not known to be. Ops that read
// storage (as_strided) can be computed exactly only on such tensors.
bool fills_storage(const Value* v);

}  // namespace ember::ir
