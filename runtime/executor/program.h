// Program: a loaded .pte file, verified, from which methods are loaded.
//
//   Result<FileDataLoader> file = FileDataLoader::from("model.pte");
//   Result<Program> program = Program::load(&*file);
//   Result<Method> forward = program->load_method("forward", &memory);
//
// load() reads the extended header, verifies the whole FlatBuffer (every offset, vector, string
// and union in bounds) and the program-level semantics (segments inside the file, the constant
// table), and loads the constant and mutable-data segments. It keeps a pointer to the loader, which
// must outlive the Program. A Program is immutable after load: several threads may load and run
// methods from one Program at once, each Method with its own memory.
#pragma once

#include <string_view>

#include "runtime/executor/header.h"
#include "runtime/executor/memory.h"
#include "runtime/executor/named_data_map.h"

namespace executorch_flatbuffer {
struct Program;
struct ExecutionPlan;
}  // namespace executorch_flatbuffer

namespace ember {

class Method;
class MethodMeta;

class Program {
 public:
  enum class HeaderStatus {
    CompatibleVersion,    // identifier "ET12"
    IncompatibleVersion,  // "ET" followed by two other characters
    NotPresent,           // not a program
    ShortData,            // fewer than 8 bytes
  };
  // Classifies the first bytes of a file without loading it.
  static HeaderStatus check_header(const void* data, size_t size);

  // Errors: InvalidProgram (not a program, wrong version, failed verification, inconsistent
  // tables: the message names the check and the value), InvalidArgument (data not aligned to
  // alignof(max_align_t)), AccessFailed / MemoryAllocationFailed from the loader.
  static Result<Program> load(const DataLoader* loader);

  Program(Program&&) noexcept = default;
  Program& operator=(Program&&) = delete;
  ~Program() = default;

  size_t num_methods() const;
  Result<std::string_view> get_method_name(size_t index) const;
  // NotFound naming the method when absent.
  Result<MethodMeta> method_meta(std::string_view method_name) const;

  // Loads a method into `memory` (see memory.h). External tensors come from `external_data` (a
  // .ptd map); may be null when the program has none. Errors name the value, instruction or
  // operator at fault: OperatorMissing lists every operator with no registered kernel.
  Result<Method> load_method(std::string_view method_name, MemoryManager* memory,
                             const NamedDataMap* external_data = nullptr) const;

  // The program's own named data (PTE-internal blobs, for backends), or null when it has none.
  const NamedDataMap* named_data() const { return has_named_data_ ? &pte_named_data_ : nullptr; }

  // The verified FlatBuffer root, for tools that inspect the file.
  const executorch_flatbuffer::Program* flatbuffer() const;
  const ExtendedHeader& header() const { return header_; }
  size_t file_size() const { return loader_->size(); }

  // For Method: constant bytes of table entry `index` (nbytes checked against what is stored).
  Result<const uint8_t*> constant_data(uint32_t index, size_t nbytes) const;
  // For Method: initial bytes of mutable-data entry `index`.
  Result<const uint8_t*> mutable_data(uint32_t index, size_t nbytes) const;
  // For Method and backends: the bytes of segment `index`.
  Result<FreeableBuffer> load_segment(uint32_t index, SegmentType type) const;
  // For Method: the plan named `method_name`, or NotFound.
  Result<const executorch_flatbuffer::ExecutionPlan*> plan(std::string_view method_name) const;

 private:
  class PteNamedData final : public NamedDataMap {
   public:
    Result<TensorLayout> get_tensor_layout(std::string_view key) const override;
    Result<FreeableBuffer> get_data(std::string_view key) const override;
    Error load_data_into(std::string_view key, void* buffer, size_t size) const override;
    size_t num_keys() const override;
    Result<std::string_view> key(size_t index) const override;

    const executorch_flatbuffer::Program* root = nullptr;
    const DataLoader* loader = nullptr;
    uint64_t segment_base = 0;
  };

  Program() = default;

  const DataLoader* loader_ = nullptr;
  ExtendedHeader header_;
  FreeableBuffer program_data_;
  FreeableBuffer constant_segment_;
  FreeableBuffer mutable_segment_;
  bool constants_in_segment_ = false;
  bool has_named_data_ = false;
  PteNamedData pte_named_data_;
};

}  // namespace ember
