// The compile side of a backend: which nodes it runs exactly, and how a partition becomes the
// processed blob its runtime half loads (docs/contracts.md, C17-C20).
//
//   class MyBackend final : public CompilerBackend { ... };   // support() + preprocess()
//   static const MyBackend my_backend;
//   EMBER_IR_RETURN_IF_ERROR(register_compiler_backend(&my_backend));  // explicit, no static init
//
// Lowering (compiler/lower) asks `support()` through the partitioner, cuts each partition out of
// the program as a self-contained ir::Program (the "partition program", below), hands it to
// `preprocess`, and replaces the partition with one DelegateCall whose id is `name()`. The runtime
// half is registered with the same name (runtime/executor/backend.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/partition/backend_support.h"

namespace ember::partition {

// One compile spec: an option the caller gives a backend ("precision" = "bf16"), stored in the
// program beside the delegate and given back to the runtime half at init.
struct CompileSpecEntry {
  std::string key;
  std::vector<uint8_t> value;
};

// Bytes a backend wants stored once and looked up by key when its delegate initialises (weights).
// Lowering stores every distinct key once per program, in the .pte's named data or, with external
// weights, in the .ptd; two partitions (or two backends) giving one key share one copy (C19).
// Use `weight_key` for a weight's bytes as stored, so the key is bound to its content (C21).
struct NamedBlob {
  std::string key;
  std::vector<uint8_t> data;
};

struct PreprocessResult {
  std::vector<uint8_t> processed;     // the blob the runtime half's init() receives
  std::vector<NamedBlob> named_data;  // looked up through BackendInitContext::named_data
};

// The partition program, the form `preprocess` receives:
// - Graph inputs, in order: first the delegate call's arguments (InputKind::UserInput), exactly
//   the values the DelegateCall passes at run time, in the same positions, unused ones included
//   (C17), each typed as the partition reads it (C18); then the weights the partition reads
//   (InputKind::Parameter / Buffer / Constant, `target` = FQN, bytes in Program::weights). A weight
//   the program writes is never a weight here: it arrives as a call argument.
// - Graph outputs, in order: the partition's results used outside it (OutputKind::UserOutput);
//   the DelegateCall passes them after the inputs, as out arguments the delegate fills.
// - Nodes: functional ATen ops (after functionalization and constant folding, before out-variant
//   lowering), each one `support().check` accepted, in program order, module paths kept.
// A backend must never write a weight's bytes in place (C20): it copies what it transforms.
class CompilerBackend {
 public:
  virtual ~CompilerBackend() = default;
  // The name a DelegateCall carries and the runtime registry looks up ("loopback", "cpu").
  virtual std::string_view name() const = 0;
  // What the backend runs exactly; unsupported nodes stay on the portable path with the reason.
  virtual const BackendSupport& support() const = 0;
  // The processed blob for one partition. An error names the node and the reason; lowering adds
  // the backend and partition, and the compile fails (it never silently falls back).
  virtual ir::StatusOr<PreprocessResult> preprocess(
      const ir::Program& partition, std::span<const CompileSpecEntry> compile_specs) const = 0;
};

// Registers `backend` under backend->name(); it must outlive every compile that uses it. Error for
// a name already registered.
ir::Status register_compiler_backend(const CompilerBackend* backend);

// The backend registered as `name`, or null.
const CompilerBackend* find_compiler_backend(std::string_view name);

// Names of every registered backend, in registration order (for `ember compile --help`, errors).
std::vector<std::string> compiler_backend_names();

// The named-data key of a weight: "<fqn>:sha256:<64 hex digits of bytes>" (C21, C22).
std::string weight_key(std::string_view fqn, std::span<const uint8_t> bytes);

}  // namespace ember::partition
