// Op schemas: the ATen signature of each op the IR knows, parsed from its schema string.
//
//   const OpSchema* s = OpRegistry::builtin().find("aten::add_", "Tensor");
//   s->mutated_arguments();   // {0}: `self` is written in place
//   s->aliased_argument(0);   // 0: the result is `self`
//
// Passes read mutation and aliasing from here (functionalization needs both; for a node, use
// ir::mutated_arguments(node), which also knows writes PyTorch's schemas leave unmarked); the
// emitter reads argument order and defaults. Schemas of ops outside the builtin table can be
// added from text, e.g. the "operators" table of an exported program.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/status.h"

namespace ember::ir {

// The kind of one argument or return, with list and optional wrappers folded into flags.
enum class TypeKind : uint8_t {
  Tensor,
  Int,
  SymInt,
  Float,
  Bool,
  Scalar,  // a number of any kind (int, float, bool)
  ScalarType,
  Layout,
  Device,
  MemoryFormat,
  String,
  Generator,
  Graph,  // a subgraph (control flow)
  Other,  // anything else; kept by name in `type`
};

struct ArgumentSchema {
  std::string name;
  std::string type;  // as written, e.g. "Tensor(a!)", "int[1]?", "SymInt[]"
  TypeKind kind = TypeKind::Other;
  bool is_list = false;
  bool is_optional = false;  // `T?` (for lists: the list itself may be None)
  bool kwarg_only = false;
  std::optional<std::string> default_value;  // as written, e.g. "1", "None", "[0, 0]"
  std::string alias_set;                     // "a" for Tensor(a) / Tensor(a!); empty: fresh
  bool is_write = false;                     // Tensor(a!)
};

class OpSchema {
 public:
  // Parses "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)".
  // A schema without an overload name gets overload "default".
  static StatusOr<OpSchema> parse(std::string_view text);

  const std::string& name() const { return name_; }          // "aten::add_"
  const std::string& overload() const { return overload_; }  // "Tensor"
  std::string qualified_name() const { return name_ + "." + overload_; }
  const std::vector<ArgumentSchema>& arguments() const { return arguments_; }
  const std::vector<ArgumentSchema>& returns() const { return returns_; }
  std::optional<size_t> argument_index(std::string_view name) const;

  // Indices of arguments written in place (Tensor(a!)).
  std::vector<size_t> mutated_arguments() const;
  bool is_mutating() const { return !mutated_arguments().empty(); }
  // The argument that return `index` aliases (views and in-place results), if any.
  std::optional<size_t> aliased_argument(size_t return_index) const;
  // A view: some result aliases an input without writing it.
  bool is_view() const;
  // The schema as text, in the form `parse` accepts.
  std::string to_string() const;

 private:
  std::string name_;
  std::string overload_;
  std::vector<ArgumentSchema> arguments_;
  std::vector<ArgumentSchema> returns_;
};

// Schemas by qualified name. Pointers stay valid for the registry's lifetime.
class OpRegistry {
 public:
  // The ATen ops Ember knows (compiler/ir/aten_schemas.inc), plus sym:: and higher_order:: ops.
  static const OpRegistry& builtin();

  // Finds `name`.`overload` here, then in the parent registry.
  const OpSchema* find(std::string_view name, std::string_view overload) const;
  // Adds a schema parsed from text; an existing schema of that name must be identical.
  StatusOr<const OpSchema*> add(std::string_view schema_text);

  // A registry that adds schemas on top of `parent` (which must outlive it).
  explicit OpRegistry(const OpRegistry* parent = nullptr) : parent_(parent) {}
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;
  size_t size() const { return schemas_.size(); }

 private:
  const OpRegistry* parent_;
  std::deque<OpSchema> schemas_;
  std::map<std::string, const OpSchema*, std::less<>> by_name_;
};

}  // namespace ember::ir
