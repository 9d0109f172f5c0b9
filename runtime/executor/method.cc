#include "runtime/executor/method.h"

#include <cinttypes>

#include "runtime/executor/method_internal.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

using namespace method_internal;

namespace {
// Sums allocations the way Method::allocate makes them from its block: each at least one byte,
// each rounded up to 16 so that any alignment up to 16 fits.
struct MemoryCount {
  size_t total = 0;
  template <typename T>
  void add(size_t count) {
    const size_t bytes = count * sizeof(T) == 0 ? 1 : count * sizeof(T);
    total += (bytes + 15) / 16 * 16;
  }
};
}  // namespace

size_t Method::required_memory(const fb::ExecutionPlan* plan) { return count(plan).bytes; }

Method::PlanCounts Method::count(const fb::ExecutionPlan* plan) {
  MemoryCount c;
  const auto* values = plan->values();
  const size_t n = values == nullptr ? 0 : values->size();
  size_t tensors = 0, externals = 0;
  c.add<EValue>(n);
  c.add<uint8_t>(n);
  // One switch on each value's type (the val_as_X accessors each read the type and the value
  // again: this runs at every method load).
  for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
    const fb::EValue* v = values->Get(i);
    const void* payload = v->val();
    if (payload == nullptr) continue;
    switch (v->val_type()) {
      case fb::KernelTypes::Tensor: {
        const auto* t = static_cast<const fb::Tensor*>(payload);
        ++tensors;
        const fb::ExtraTensorInfo* extra = t->extra_tensor_info();
        if (extra != nullptr && extra->location() == fb::TensorDataLocation::EXTERNAL) ++externals;
        break;
      }
      case fb::KernelTypes::IntList: {
        const auto* items = static_cast<const fb::IntList*>(payload)->items();
        const size_t k = items == nullptr ? 0 : items->size();
        c.add<EValue*>(k);
        c.add<int64_t>(k);
        break;
      }
      case fb::KernelTypes::TensorList:
      case fb::KernelTypes::OptionalTensorList: {
        const auto* items = v->val_type() == fb::KernelTypes::TensorList
                                ? static_cast<const fb::TensorList*>(payload)->items()
                                : static_cast<const fb::OptionalTensorList*>(payload)->items();
        const size_t k = items == nullptr ? 0 : items->size();
        c.add<EValue*>(k);
        c.add<Tensor*>(k);
        break;
      }
      default:
        break;
    }
  }
  c.add<Tensor>(tensors);
  c.add<FreeableBuffer>(externals);
  const size_t inputs = plan->inputs() == nullptr ? 0 : plan->inputs()->size();
  const size_t outputs = plan->outputs() == nullptr ? 0 : plan->outputs()->size();
  c.add<int32_t>(inputs);
  c.add<bool>(inputs);
  c.add<int32_t>(outputs);
  if (plan->delegates() != nullptr && plan->delegates()->size() > 0) {
    c.add<Delegate>(plan->delegates()->size());
    for (const fb::BackendDelegate* d : *plan->delegates()) {
      c.add<CompileSpec>(d->compile_specs() == nullptr ? 0 : d->compile_specs()->size());
      c.add<MergedNamedDataMap>(1);
    }
  }
  if (plan->chains() != nullptr && plan->chains()->size() > 0 &&
      plan->chains()->Get(0)->instructions() != nullptr) {
    const auto* instructions = plan->chains()->Get(0)->instructions();
    c.add<Instruction>(instructions->size());
    for (const fb::Instruction* ins : *instructions) {
      const void* payload = ins->instr_args();
      if (payload == nullptr) continue;
      const flatbuffers::Vector<int32_t>* args = nullptr;
      if (ins->instr_args_type() == fb::InstructionArguments::KernelCall) {
        args = static_cast<const fb::KernelCall*>(payload)->args();
      } else if (ins->instr_args_type() == fb::InstructionArguments::DelegateCall) {
        args = static_cast<const fb::DelegateCall*>(payload)->args();
      }
      if (args != nullptr) c.add<EValue*>(args->size());
    }
  }
  return {c.total, tensors, externals};
}

Method::Method(Method&& o) noexcept
    : program_(o.program_),
      plan_(o.plan_),
      memory_(o.memory_),
      block_(o.block_),
      values_(std::exchange(o.values_, nullptr)),
      num_values_(std::exchange(o.num_values_, 0)),
      value_flags_(std::exchange(o.value_flags_, nullptr)),
      input_index_(std::exchange(o.input_index_, nullptr)),
      output_index_(std::exchange(o.output_index_, nullptr)),
      input_set_(std::exchange(o.input_set_, nullptr)),
      num_inputs_(std::exchange(o.num_inputs_, 0)),
      num_outputs_(std::exchange(o.num_outputs_, 0)),
      instructions_(std::exchange(o.instructions_, nullptr)),
      num_instructions_(std::exchange(o.num_instructions_, 0)),
      views_(std::exchange(o.views_, nullptr)),
      num_views_(std::exchange(o.num_views_, 0)),
      max_instructions_(o.max_instructions_),
      observer_(std::exchange(o.observer_, nullptr)),
      delegates_(std::exchange(o.delegates_, nullptr)),
      num_delegates_(std::exchange(o.num_delegates_, 0)),
      external_buffers_(std::exchange(o.external_buffers_, nullptr)),
      num_external_buffers_(std::exchange(o.num_external_buffers_, 0)),
      next_external_(std::exchange(o.next_external_, 0)),
      initialized_(std::exchange(o.initialized_, false)) {}

Method::~Method() { release(); }

void Method::release() {
  for (size_t i = 0; i < num_delegates_; ++i) {
    Delegate& d = delegates_[i];
    if (d.handle != nullptr) d.backend->destroy(d.handle);
    d.handle = nullptr;
    d.blob.~FreeableBuffer();
  }
  num_delegates_ = 0;
  for (size_t i = 0; i < num_external_buffers_; ++i) external_buffers_[i].~FreeableBuffer();
  num_external_buffers_ = 0;
  initialized_ = false;
}

std::string_view Method::name() const { return {plan_->name()->c_str(), plan_->name()->size()}; }

Error Method::init(const NamedDataMap* external_data) {
  EMBER_CHECK(plan_->values() != nullptr, Error::InvalidProgram, "the plan has no values table");
  EMBER_CHECK(plan_->inputs() != nullptr && plan_->outputs() != nullptr, Error::InvalidProgram,
              "the plan lacks its inputs or outputs list");
  EMBER_CHECK(plan_->chains() != nullptr && plan_->chains()->size() > 0, Error::InvalidProgram,
              "the plan has no chains");
  EMBER_CHECK(plan_->delegates() != nullptr, Error::InvalidProgram,
              "the plan has no delegates table");
  EMBER_CHECK(plan_->non_const_buffer_sizes() != nullptr, Error::InvalidProgram,
              "the plan has no non_const_buffer_sizes");

  // Planned arenas: the caller must provide each one, at least as large as planned.
  const auto* arena_sizes = plan_->non_const_buffer_sizes();
  const size_t num_arenas = arena_sizes->size() == 0 ? 0 : arena_sizes->size() - 1;
  const size_t given =
      memory_->planned_memory == nullptr ? 0 : memory_->planned_memory->num_arenas();
  for (size_t j = 0; j < num_arenas; ++j) {
    const int64_t need = arena_sizes->Get(static_cast<flatbuffers::uoffset_t>(j + 1));
    EMBER_CHECK(need >= 0, Error::InvalidProgram, "planned arena %zu has negative size %" PRId64,
                j + 1, need);
    EMBER_CHECK(j < given, Error::MemoryAllocationFailed,
                "the method plans %zu memory arenas; %zu were given (arena %zu needs %" PRId64
                " bytes)",
                num_arenas, given, j + 1, need);
    const size_t have = memory_->planned_memory->arena(j).size();
    EMBER_CHECK(static_cast<uint64_t>(need) <= have, Error::MemoryAllocationFailed,
                "planned arena %zu needs %" PRId64 " bytes; the buffer given holds %zu", j + 1,
                need, have);
  }

  // Everything the method keeps comes from one block, sized up front: a caller whose allocator is
  // too small learns the exact size needed, and nothing is half-allocated.
  const PlanCounts counts = count(plan_);
  const size_t needed = counts.bytes;
  MemoryAllocator* pool = memory_->method_allocator;
  void* block = pool->allocate(needed, 16);
  EMBER_CHECK(block != nullptr, Error::MemoryAllocationFailed,
              "the method needs %zu bytes of method memory; the method allocator has %zu of %zu "
              "bytes free",
              needed, pool->capacity() - pool->used(), pool->capacity());
  block_ = MemoryAllocator(block, needed);

  EMBER_TRY(parse_values(external_data, counts));
  EMBER_TRY(check_io());
  EMBER_TRY(init_delegates(external_data));
  EMBER_TRY(init_instructions());
  EMBER_TRY(check_storage());
  // The kernels' thread pool starts on first use, which makes its threads: here, at load, rather
  // than inside the first execute (runtime rule 3: execute allocates nothing).
  ThreadPool::global();
  initialized_ = true;
  return Error::Ok;
}

Error Method::check_io() {
  const auto* inputs = plan_->inputs();
  const auto* outputs = plan_->outputs();
  num_inputs_ = inputs->size();
  num_outputs_ = outputs->size();
  EMBER_ASSIGN_OR_RETURN(input_index_, allocate<int32_t>(num_inputs_, "inputs"));
  EMBER_ASSIGN_OR_RETURN(input_set_, allocate<bool>(num_inputs_, "inputs"));
  EMBER_ASSIGN_OR_RETURN(output_index_, allocate<int32_t>(num_outputs_, "outputs"));
  for (size_t i = 0; i < num_inputs_; ++i) {
    const int32_t idx = inputs->Get(static_cast<flatbuffers::uoffset_t>(i));
    EMBER_CHECK(idx >= 0 && static_cast<size_t>(idx) < num_values_, Error::InvalidProgram,
                "input %zu refers to value %d of %zu", i, idx, num_values_);
    const Tag tag = values_[idx].tag();
    EMBER_CHECK(tag == Tag::None || tag == Tag::Int || tag == Tag::Bool || tag == Tag::Double ||
                    tag == Tag::String || tag == Tag::Tensor,
                Error::InvalidProgram, "input %zu is a %s, which cannot be an input", i,
                to_string(tag));
    EMBER_CHECK((value_flags_[idx] & kConstant) == 0, Error::InvalidProgram,
                "input %zu refers to constant value %d", i, idx);
    input_index_[i] = idx;
    input_set_[i] = tag != Tag::Tensor;  // non-tensors hold their exported value
  }
  for (size_t i = 0; i < num_outputs_; ++i) {
    const int32_t idx = outputs->Get(static_cast<flatbuffers::uoffset_t>(i));
    EMBER_CHECK(idx >= 0 && static_cast<size_t>(idx) < num_values_, Error::InvalidProgram,
                "output %zu refers to value %d of %zu", i, idx, num_values_);
    output_index_[i] = idx;
  }
  return Error::Ok;
}

Error Method::check_storage() {
  // Every tensor with bytes and no storage must be bound by the caller, so it must be an input or
  // an output, or get its storage from an et_view: anything else would leave a kernel writing
  // through a null pointer.
  for (size_t v = 0; v < num_values_; ++v) {
    const Tensor* t = values_[v].tensor_ptr();
    if (t == nullptr || t->data() != nullptr || t->capacity_bytes() == 0) continue;
    bool io = (value_flags_[v] & kView) != 0;
    for (size_t i = 0; i < num_inputs_ && !io; ++i) io = input_index_[i] == static_cast<int32_t>(v);
    for (size_t i = 0; i < num_outputs_ && !io; ++i) {
      io = output_index_[i] == static_cast<int32_t>(v);
    }
    EMBER_CHECK(io, Error::InvalidProgram,
                "value %zu: a tensor of %zu bytes has no storage (not planned, not a constant, "
                "not an input, an output or an et_view result)",
                v, t->capacity_bytes());
  }
  return Error::Ok;
}

}  // namespace ember
