// What a backend can run exactly, decided node by node on the compiler side (contracts C14, C15).
//
//   OpSupportTable cpu("cpu", {DType::Float32}, /*max_rank=*/5);
//   cpu.add({.op = "aten::elu", .overload = "default", .attrs = {{"alpha", {1.0}}}});
//   Support s = cpu.check(node);  // s.supported, or s.reason: "dtype bfloat16 not supported ..."
//
// A backend answers for one node at a time; the partitioner (partitioner.h) groups the answers.
// "Supported" means the backend gives the portable kernel's result for every input the node's
// types allow: anything it would only approximate (bf16 run as fp32, a data-dependent output
// shape, a rank above its limit) is a reason to leave the node on the portable path.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/types.h"

namespace ember::partition {

// The verdict on one node: supported, or the reason it is not (for diagnostics and reports).
struct Support {
  bool supported = false;
  std::string reason;  // empty when supported

  static Support yes() { return {true, {}}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// The compile-side capability interface of a backend. Implementations are stateless to callers:
// `check` may be called on any node, in any order, any number of times.
class BackendSupport {
 public:
  virtual ~BackendSupport() = default;
  virtual std::string_view name() const = 0;
  // Whether the backend runs `node` exactly. Nodes with subgraphs (control flow) are asked about
  // the node itself; the partitioner asks about the nodes inside separately.
  virtual Support check(const ir::Node& node) const = 0;
  // The other nodes the backend claims `node` only together with: a pattern it computes whole (a
  // linear's quantized input: the ops that quantize it and the linears that read it). Lowering's
  // filters (a compile spec's exclude_ops) refuse `node` when they refuse one of them, so that
  // such a pattern is never split between the backend and the portable path. None by default.
  virtual std::vector<const ir::Node*> claimed_with(const ir::Node& /*node*/) const { return {}; }
};

// Why `node`'s output shape depends on the data it reads, or nullopt. Known ops (nonzero,
// masked_select, unique, index with a bool mask), and any output dim over a symbol that neither
// the program's inputs nor the node's operands carry (an unbacked size, such as `u0`).
std::optional<std::string> data_dependent_shape_reason(const ir::Node& node);

// A required attribute value: the argument `name` must equal one of `allowed` (ints, floats and
// bools compare as numbers, so alpha=1 and alpha=1.0 match). A missing argument takes its
// schema default.
struct AttrRule {
  std::string name;
  std::vector<double> allowed;
};

// One supported op. Empty vectors and unset optionals take the table's defaults.
struct OpRule {
  std::string op = {};                 // "aten::add"
  std::string overload = {};           // "Tensor"; empty: every overload
  std::vector<ir::DType> dtypes = {};  // allowed for every tensor argument and result
  // Per-argument overrides (e.g. {"index", {Int64}}), checked on every element of a list.
  std::map<std::string, std::vector<ir::DType>> arg_dtypes = {};
  std::vector<ir::DType> output_dtypes = {};  // results; empty: `dtypes`
  std::optional<size_t> max_rank = {};        // of every tensor argument and result
  std::vector<AttrRule> attrs = {};
  bool allow_data_dependent_shapes = false;
  // A backend-specific last word: returns a reason to refuse, or nullopt.
  std::function<std::optional<std::string>(const ir::Node&)> extra = {};
};

// A table-driven BackendSupport: an op is supported when a rule names it and every tensor it
// reads or writes (every element of tensor lists, C15) has an allowed dtype and rank, its
// attributes have allowed values, and its output shape does not depend on data.
class OpSupportTable : public BackendSupport {
 public:
  OpSupportTable(std::string backend_name, std::vector<ir::DType> default_dtypes,
                 size_t default_max_rank);

  // Adds a rule; a later rule for the same op and overload replaces the earlier one.
  OpSupportTable& add(OpRule rule);

  std::string_view name() const override { return name_; }
  Support check(const ir::Node& node) const override;
  std::vector<const ir::Node*> claimed_with(const ir::Node& node) const override {
    return claimed_with_ ? claimed_with_(node) : std::vector<const ir::Node*>{};
  }
  // The backend's answer to claimed_with.
  OpSupportTable& set_claimed_with(std::function<std::vector<const ir::Node*>(const ir::Node&)> f) {
    claimed_with_ = std::move(f);
    return *this;
  }

 private:
  const OpRule* find(const ir::Node& node) const;

  std::string name_;
  std::vector<ir::DType> default_dtypes_;
  size_t default_max_rank_;
  std::vector<OpRule> rules_;
  std::function<std::vector<const ir::Node*>(const ir::Node&)> claimed_with_;
};

}  // namespace ember::partition
