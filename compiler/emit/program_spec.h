// ProgramSpec: a program described value by value, as the .pte writer takes it.
//
//   MethodSpec m{.name = "forward"};
//   int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {3}, /*offset=*/0));
//   m.inputs = {x};  ...  ProgramSpec p{.methods = {m}};
//
// The spec mirrors the file closely (value indices, operator table, instructions); the compiler's
// emit stage fills it from the IR and tests build small programs with it directly.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "runtime/core/tensor.h"

namespace ember::emit {

struct TensorSpec {
  enum class Storage {
    Unplanned,  // bound by the caller at run time (set_input / set_output_data_ptr)
    Planned,    // an activation at `offset` in arena `memory_id`
    Constant,   // `data` stored in the program's constant segment
    Mutable,    // planned, with initial `data` copied in at method load
    External,   // `data` stored in the .ptd under `fqn` (read-only constant)
  };
  ScalarType dtype = ScalarType::Float;
  std::vector<int32_t> sizes;      // the upper bound for a dynamic tensor
  std::vector<uint8_t> dim_order;  // empty: contiguous
  ShapeDynamism dynamism = ShapeDynamism::Static;
  Storage storage = Storage::Unplanned;
  uint32_t memory_id = 1;
  uint64_t offset = 0;
  std::vector<uint8_t> data;
  std::string fqn;  // External (the .ptd key); also recorded for Constant/Mutable when set

  static TensorSpec planned(ScalarType dtype, std::vector<int32_t> sizes, uint64_t offset,
                            ShapeDynamism dynamism = ShapeDynamism::Static) {
    TensorSpec t;
    t.dtype = dtype;
    t.sizes = std::move(sizes);
    t.storage = Storage::Planned;
    t.offset = offset;
    t.dynamism = dynamism;
    return t;
  }
  static TensorSpec constant(ScalarType dtype, std::vector<int32_t> sizes,
                             std::vector<uint8_t> bytes) {
    TensorSpec t;
    t.dtype = dtype;
    t.sizes = std::move(sizes);
    t.storage = Storage::Constant;
    t.data = std::move(bytes);
    return t;
  }
};

struct IntListSpec {
  std::vector<int32_t> items;  // value indices of Int values
};
struct TensorListSpec {
  std::vector<int32_t> items;  // value indices of Tensor values (-1: None when optional)
  bool optional = false;
};
struct NoneSpec {};

using ValueSpec = std::variant<NoneSpec, int64_t, double, bool, std::string, TensorSpec,
                               IntListSpec, std::vector<double>, std::vector<bool>, TensorListSpec>;

struct KernelCallSpec {
  int32_t op_index;
  std::vector<int32_t> args;
};
struct DelegateCallSpec {
  int32_t delegate_index;
  std::vector<int32_t> args;
};
struct MoveSpec {
  int32_t from, to;
};
struct JumpFalseSpec {
  int32_t cond, destination;
};
struct FreeSpec {
  int32_t value;
};
using InstructionSpec =
    std::variant<KernelCallSpec, DelegateCallSpec, MoveSpec, JumpFalseSpec, FreeSpec>;

struct OperatorSpec {
  std::string name;      // "aten::add"
  std::string overload;  // "out"; empty for the default overload
};

struct DelegateSpec {
  std::string id;                  // registered backend name
  std::vector<uint8_t> processed;  // the blob, stored in a segment
  std::vector<std::pair<std::string, std::vector<uint8_t>>> compile_specs;
};

struct MethodSpec {
  std::string name = "forward";
  std::vector<ValueSpec> values;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  std::vector<OperatorSpec> operators;
  std::vector<InstructionSpec> instructions;
  std::vector<DelegateSpec> delegates;
  std::vector<int64_t> arena_sizes;  // bytes of memory ids 1..N
  // Pytree encodings of the inputs and outputs (ContainerMetadata); written when not empty.
  std::string input_spec, output_spec;

  int32_t add(ValueSpec v) {
    values.push_back(std::move(v));
    return static_cast<int32_t>(values.size() - 1);
  }
  // Appends an instruction, constructed in place.
  template <typename Spec, typename... Args>
  void append(Args&&... args) {
    // Brace-initialized first: clang 14 (the fuzz build) has no parenthesized aggregate init.
    instructions.emplace_back(std::in_place_type<Spec>, Spec{std::forward<Args>(args)...});
  }
  // Adds (or reuses) the operator and a KernelCall with `args` (out already repeated by caller).
  void call(const std::string& op_name, const std::string& overload, std::vector<int32_t> args);
};

// Bytes stored once under a key for backends (their weights): in the .pte's named_data (a segment
// per distinct byte string) or, when `external`, in the .ptd with a tensor layout (ExecuTorch's
// .ptd map needs one for every key). A weight's layout is its own; an opaque blob is Byte [n].
struct NamedDataSpec {
  std::string key = {};
  std::vector<uint8_t> data = {};
  bool external = false;
  ScalarType dtype = ScalarType::Byte;
  std::vector<int32_t> sizes = {};  // empty with Byte: [data.size()]
};

struct ProgramSpec {
  std::vector<MethodSpec> methods;
  // Each key once (a repeated key must hold equal bytes).
  std::vector<NamedDataSpec> named_data = {};
  uint64_t constant_alignment = 16;
  uint64_t segment_alignment = 128;
};

}  // namespace ember::emit
