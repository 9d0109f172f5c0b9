// MethodMeta: what a method takes and returns and the memory it plans, read without loading it.
//
//   Result<MethodMeta> meta = program->method_meta("forward");
//   Result<TensorInfo> in0 = meta->input_tensor_info(0);   // dtype, upper-bound sizes, ...
//   for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) arena_bytes(i);
//
// A MethodMeta points into the Program and lives no longer than it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "runtime/core/evalue.h"

namespace executorch_flatbuffer {
struct ExecutionPlan;
}

namespace ember {

struct TensorInfo {
  ScalarType dtype;
  std::span<const int32_t> sizes;  // the upper bound for a dynamic tensor
  std::span<const uint8_t> dim_order;
  ShapeDynamism dynamism;
  size_t nbytes;        // at the upper bound
  bool memory_planned;  // planned or constant: set_input copies, set_output_data_ptr refuses
};

class MethodMeta {
 public:
  explicit MethodMeta(const executorch_flatbuffer::ExecutionPlan* plan) : plan_(plan) {}

  std::string_view name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  // The tag of input/output `index`. InvalidArgument for an index out of range, InvalidProgram
  // for an entry the file got wrong.
  Result<Tag> input_tag(size_t index) const;
  Result<Tag> output_tag(size_t index) const;
  // Tensor details. InvalidArgument when the entry is not a tensor.
  Result<TensorInfo> input_tensor_info(size_t index) const;
  Result<TensorInfo> output_tensor_info(size_t index) const;
  // Planned arenas: non_const_buffer_sizes without its reserved entry 0.
  size_t num_memory_planned_buffers() const;
  Result<int64_t> memory_planned_buffer_size(size_t index) const;
  size_t num_instructions() const;
  // Bytes the method allocator must have free to load this method (delegates may need more).
  size_t method_allocator_bytes() const;

 private:
  Result<Tag> tag_of(int32_t value_index) const;
  Result<TensorInfo> tensor_info_of(int32_t value_index) const;
  const executorch_flatbuffer::ExecutionPlan* plan_;
};

}  // namespace ember
