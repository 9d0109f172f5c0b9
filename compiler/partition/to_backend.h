// Lowering partitions into backend delegates: each partition a backend takes becomes one delegate
// call node (contracts C16-C20).
//
//   std::vector<BackendRequest> req{{find_compiler_backend("loopback"), {}}};
//   ir::StatusOr<DelegationResult> d = delegate_to_backends(program, req);
//   // program now holds executorch::call_delegate nodes; d->delegates[i] is the blob of index i
//
// Needs: functionalize, constant folding and dead-code elimination (no in-place op, no view of a
// written tensor), before lower_to_out_variants. Guarantees:
// - Backends are asked in the order given; nodes an earlier backend took are not offered to a
//   later one. Only top-level partitions are delegated: partitions inside control-flow subgraphs
//   stay portable (control flow is not emitted yet), and the report says so.
// - Each partition is cut out as the partition program compiler/partition/backend.h describes
//   (call arguments first in the partition's stable input order, unused ones kept, each with the
//   type the partition reads (C17, C18); then the unwritten weights it reads, bytes shared).
// - The partition's nodes are replaced by ONE node `executorch::call_delegate(backend=...,
//   index=i, inputs=[...])` whose outputs are the partition's outputs. It is placed where the
//   partition's last node was; a stable topological sort then moves only the nodes dependencies
//   force, so every other node keeps its relative order and the outputs stay last (C16).
// - Named data of every preprocess result is kept once per key; the same key with other bytes is
//   an error (C19). Weights a program writes are never named data: they are call arguments (C20).
// - A preprocess error fails with the backend and the partition's nodes named.
// The result owns the blobs; the program owns the nodes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/partition/backend.h"
#include "compiler/partition/partitioner.h"

namespace ember::partition {

// One backend the caller asks for, with its compile specs. Two specs are read by lowering itself,
// for every backend, and neither preprocess nor the runtime half sees them:
// - `exclude_ops` (comma-separated qualified or bare op names, "aten::cumsum,aten::mul.Tensor"):
//   nodes of those ops stay portable with the reason "excluded by the compile spec";
// - `partitions` (comma-separated partition indices, "0,2"; empty: none): the backend takes only
//   those of its partitions, the others stay portable (`ember compile --verify` checks one
//   partition at a time with it, and its fallback leaves the failing ones out).
struct BackendRequest {
  const CompilerBackend* backend = nullptr;
  std::vector<CompileSpecEntry> compile_specs;
};

inline constexpr const char* kPartitionsSpecKey = "partitions";

// The key of the compile spec that lists a delegate's nodes, one "name<TAB>op.overload" line per
// node in program order, for `ember inspect`; runtime halves ignore keys starting with "ember.".
inline constexpr const char* kNodesSpecKey = "ember.nodes";

struct LoweredDelegate {
  std::string backend;
  size_t partition = 0;  // the index of its partition among the backend's (describe_partitions)
  std::vector<uint8_t> processed;
  std::vector<CompileSpecEntry> compile_specs;  // the caller's, then `ember.nodes`
  std::vector<std::string> nodes;               // "name (op.overload)", program order
};

struct DelegationResult {
  std::vector<LoweredDelegate> delegates;  // indexed by the call node's `index`
  std::vector<NamedBlob> named_data;       // every key once, in first-seen order
  // The type of the weight a named-data key stores, when the key is a partition weight's
  // weight_key: a .ptd stores that layout with the bytes.
  std::map<std::string, ir::TensorType> weight_types;
  std::string report;   // describe_partitions of each backend, in order
  std::string summary;  // summarize_partitions of each backend, in order
};

ir::StatusOr<DelegationResult> delegate_to_backends(ir::Program& program,
                                                    const std::vector<BackendRequest>& backends);

// The partition program of `partition` (backend.h), and the call's arguments in order. For tests
// and for backends that want to see what lowering hands them.
struct PartitionProgram {
  std::unique_ptr<ir::Program> program;
  std::vector<ir::Value*> arguments;  // values of the outer graph, in the call's order
};
ir::StatusOr<PartitionProgram> extract_partition(const ir::Program& program,
                                                 const Partition& partition);

}  // namespace ember::partition
