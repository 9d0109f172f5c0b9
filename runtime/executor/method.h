// Method: one loaded execution plan, ready to run.
//
//   Result<Method> m = program->load_method("forward", &memory);
//   EMBER_TRY(m->set_input(input_tensor, 0));
//   EMBER_TRY(m->execute());
//   Result<EValue> out = m->get_output(0);
//
// Everything from the file is validated at load (value table, tensor metadata and storage,
// operator names and argument kinds, delegate ids, instruction operands), so execute only runs.
// A Method uses the memory of the MemoryManager it was loaded with, which must outlive it, and
// performs no heap allocation. One Method must not run on two threads at once; distinct Methods
// (even of the same Program) may.
#pragma once

#include <span>
#include <string_view>

#include "runtime/core/evalue.h"
#include "runtime/executor/backend.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/executor/memory.h"
#include "runtime/executor/method_meta.h"

namespace executorch_flatbuffer {
struct ExecutionPlan;
struct Tensor;
}  // namespace executorch_flatbuffer

namespace ember {

class Program;
class NamedDataMap;

class Method {
 public:
  Method(Method&& other) noexcept;
  Method& operator=(Method&&) = delete;
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;
  ~Method();

  std::string_view name() const;
  MethodMeta method_meta() const { return MethodMeta(plan_); }
  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }

  // Binds input `index`. A tensor must have the declared dtype, rank and dim order, and each
  // dimension must equal the declared size (static) or not exceed it (dynamic); its data is copied
  // into planned memory, or shared when the input is not planned (the caller then keeps it alive
  // until execute returns). A non-tensor input must equal the value the program was exported with.
  // InvalidArgument naming the input and what differs.
  Error set_input(const EValue& value, size_t index);
  Error set_input(const Tensor& tensor, size_t index);

  // Gives output `index` a caller buffer, for outputs the program did not plan. The buffer must
  // hold the output's upper-bound byte size (contract C23): InvalidArgument otherwise, naming both
  // sizes. InvalidState for a planned output.
  Error set_output_data_ptr(void* buffer, size_t size, size_t index);

  // The current value of input/output `index` (tensors at their current sizes).
  Result<EValue> get_input(size_t index) const;
  Result<EValue> get_output(size_t index) const;

  // Bytes of method-allocator memory loading `plan` takes (what MethodMeta reports), not counting
  // what delegates allocate during init (delegate_info() reports that, once loaded).
  static size_t required_memory(const executorch_flatbuffer::ExecutionPlan* plan);

  // A delegate of the loaded method: its backend's name in the program, the bytes its init took
  // from the method allocator (measured here for any backend: MemoryAllocator::handed_out before
  // and after), and its handle, for a backend's own report (ember::cpu::summarize). The handle
  // lives as long as the Method.
  struct DelegateInfo {
    std::string_view backend;
    size_t method_allocator_bytes = 0;
    const DelegateHandle* handle = nullptr;
  };
  size_t num_delegates() const { return num_delegates_; }
  // Bytes of MemoryManager::delegate_scratch the delegates asked for (the largest delegate's
  // share; 0 without one): memory the method uses besides the method allocator's.
  size_t delegate_scratch_bytes() const;
  // InvalidArgument for an index past num_delegates().
  Result<DelegateInfo> delegate_info(size_t index) const;

  // Runs the instructions. InvalidState when an input is unset or an output has no buffer;
  // otherwise the error of the failing kernel or delegate, with the instruction and operator named.
  Error execute();
  // Caps the instructions one execute runs (JumpFalse can loop): beyond it execute returns
  // InvalidState. The default, 10,000,000, is ExecuTorch's; a host running untrusted programs
  // (the fuzz target) may lower it so a looping program fails fast.
  void set_max_instructions(size_t n) { max_instructions_ = n; }
  // Reports each instruction execute runs to `observer` (observer.h); null (the default) turns
  // reporting off. The observer must outlive its use here.
  void set_observer(ExecutionObserver* observer) { observer_ = observer; }

 private:
  friend class Program;
  struct Instruction;
  struct Delegate;

  Method(const Program* program, const executorch_flatbuffer::ExecutionPlan* plan,
         MemoryManager* memory)
      : program_(program), plan_(plan), memory_(memory) {}
  // What loading a plan takes: bytes of method memory, and its tensors and external tensors.
  struct PlanCounts {
    size_t bytes = 0, tensors = 0, externals = 0;
  };
  static PlanCounts count(const executorch_flatbuffer::ExecutionPlan* plan);
  Error init(const NamedDataMap* external_data);
  Error parse_values(const NamedDataMap* external_data, const PlanCounts& counts);
  Error parse_tensor(const executorch_flatbuffer::Tensor* t, size_t value_index,
                     const NamedDataMap* external_data, Tensor* out);
  Error init_delegates(const NamedDataMap* external_data);
  Error init_instructions();
  Error check_io();
  Error check_storage();
  Error check_view_args(const Instruction& ins, size_t pc) const;
  // `count` Ts from the method's block, default-constructed; or left for the caller to build
  // (Tensor::make_at builds tensors in place).
  template <typename T>
  Result<T*> allocate(size_t count, const char* what);
  template <typename T>
  Result<T*> allocate_unconstructed(size_t count, const char* what);
  void release();

  const Program* program_;
  const executorch_flatbuffer::ExecutionPlan* plan_;
  MemoryManager* memory_;
  MemoryAllocator block_{nullptr, 0};  // carved from the method allocator at init

  EValue* values_ = nullptr;
  size_t num_values_ = 0;
  uint8_t* value_flags_ = nullptr;  // per value: constant, external, ...
  int32_t* input_index_ = nullptr;
  int32_t* output_index_ = nullptr;
  bool* input_set_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
  Instruction* instructions_ = nullptr;
  size_t num_instructions_ = 0;
  Tensor** views_ = nullptr;  // the et_view results (kView tensors)
  size_t num_views_ = 0;
  size_t max_instructions_ = 10'000'000;
  ExecutionObserver* observer_ = nullptr;
  Delegate* delegates_ = nullptr;
  size_t num_delegates_ = 0;
  FreeableBuffer* external_buffers_ = nullptr;
  size_t num_external_buffers_ = 0;
  size_t next_external_ = 0;
  bool initialized_ = false;
};

}  // namespace ember
