// The one table that maps functional ATen ops to the out-variant kernels Ember's runtime has.
//
//   const LoweringRule* r = find_rule(*node);          // explicit entry, or the naming convention
//   std::string k = kernel_name(*node);                // "aten::relu.out"; empty if none
//   EMBER_IR_RETURN_IF_ERROR(lower_node(program, node));
//
// A rule is either direct (`kernel` plus the functional arguments it takes, in kernel order, with
// `name=literal` for constants the kernel needs) or a decomposition into several kernel calls.
// Ops without an entry follow ATen's naming: `ns::op.default` → `ns::op.out`, `ns::op.X` →
// `ns::op.X_out`, used when a kernel of that name is registered. The verifier, the lowering pass
// and constant folding all read this table, so they accept one and the same op set (C12).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::ops {

using DecomposeFn = ir::Status (*)(ir::Program& program, ir::Node* node);

struct LoweringRule {
  const char* functional;  // "aten::t.default"
  const char* kernel;      // "aten::permute_copy.out"; null for a decomposition
  const char* args;        // "self,dims=[1,0]"; null: every argument, in order
  DecomposeFn decompose;   // when `kernel` is null
  const char* reason;      // with neither kernel nor decompose: why the op is refused
};

// A direct kernel call: the out variant and its non-out arguments.
struct KernelForm {
  std::string op;        // "aten::relu"
  std::string overload;  // "out"
  std::vector<ir::NamedArg> args;
};

// True for ops the runtime implements as prim ops (docs/pte-format.md §4.8): they take their
// arguments and then their result once, with no repeated out. `qualified` is the graph's name
// ("aten::sym_numel.default"); it is a prim op when its runtime name is one of prim_ops().
bool is_prim_op(std::string_view qualified);
// The runtime's prim ops by their runtime names ("aten::sym_numel"), as the op manifest lists them
// (kind prim; generated from runtime/kernels/prim/prim_ops.cc), sorted by name.
std::span<const std::string_view> prim_ops();
// The name the runtime registers a prim op under: a `default` overload is dropped (§4.8).
std::string runtime_op_name(std::string_view qualified);
// True for kernels whose out argument is one Tensor[] (split_copy, unbind_copy): the list is
// passed, then passed again.
bool is_list_out_kernel(std::string_view name);
// The op of a delegate call node (compiler/partition/to_backend.h): `backend` (string), `index`
// (int, into the lowering's delegate table) and `inputs` (the call's arguments); its outputs are
// the partition's results. Lowering, folding and the verifier leave it as it is; emit writes a
// DelegateCall.
inline constexpr std::string_view kDelegateCallOp = "executorch::call_delegate";
bool is_delegate_call(const ir::Node& node);
// True when the runtime implements `name` ("aten::relu.out", or a prim op under its runtime name),
// as the op manifest (ops/manifest.json, compiled in as op_manifest.inc) lists it.
bool kernel_exists(std::string_view name);
// The kernel's signature letters (the manifest's), or null when unknown.
const char* kernel_signature(std::string_view name);

// The explicit entry for `node`'s op, or null.
const LoweringRule* find_rule(const ir::Node& node);
// The direct kernel form of `node` (explicit entry or naming convention) when it has one whose
// kernel exists; nullopt for decompositions and unsupported ops.
std::optional<KernelForm> direct_kernel_form(const ir::Node& node);
// Empty when `node` can be lowered (or is already lowered, a prim, or control flow); otherwise
// the reason it cannot.
std::string lowering_gap(const ir::Node& node);
// True for a node that lower_node already produced (an out variant or a prim op).
bool is_lowered(const ir::Node& node);

// Replaces `node` with its kernel calls (before it, in order) and erases it.
ir::Status lower_node(ir::Program& program, ir::Node* node);

// Creates a lowered node computing `outputs` before `before`, named after `base`.
ir::Node* add_kernel_node(ir::Graph& g, const std::string& kernel, std::vector<ir::NamedArg> args,
                          std::vector<ir::ValueType> outputs, const std::string& base,
                          ir::Node* before);

}  // namespace ember::ops
