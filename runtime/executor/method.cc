#include "runtime/executor/method.h"

#include <cinttypes>
#include <cmath>
#include <cstring>
#include <new>

#include "ember/schema/program_generated.h"
#include "runtime/executor/program.h"
#include "runtime/platform/thread_pool.h"

namespace ember {
namespace fb = executorch_flatbuffer;

Tag tag_from_flatbuffer(fb::KernelTypes type);  // method_meta.cc

namespace {

// Per-value facts established at load.
enum ValueFlag : uint8_t {
  kConstant = 1,  // data in the program or a .ptd: read-only, never an out argument
  kPlanned = 2,   // memory-planned or constant: set_input copies into it
  kView = 4,      // the result of an et_view (or moved from one): storage set when that runs
};

// One execute runs at most this many instructions (ExecuTorch's ET_MAX_INSTRUCTIONS): a program
// whose jumps loop forever fails instead of hanging.
// Operator names are built in a buffer of this size, as in ExecuTorch.
constexpr size_t kMaxOperatorNameLength = 100;

// The prim op whose result takes its operand's storage (a view without a copy).
constexpr const char* kEtView = "executorch_prim::et_view.default";

const char* fb_tag_name(const fb::EValue* v) {
  return v == nullptr ? "null" : to_string(tag_from_flatbuffer(v->val_type()));
}

size_t alignment_for(ScalarType dtype) {
  const size_t e = element_size(dtype);
  return e == 0 ? 1 : (e > 8 ? 8 : e);
}

}  // namespace

struct Method::Instruction {
  enum class Kind : uint8_t { Kernel, Delegate, Move, JumpFalse, Free };
  Kind kind;
  uint32_t num_args;
  EValue** args;
  const Kernel* kernel;
  uint32_t delegate;
  int32_t a;         // move_from, cond_value_index, value_index
  int32_t b;         // move_to, destination_instruction
  bool reads_views;  // an argument is an et_view result, checked to be set before the call
  bool et_view;      // the call is an et_view (its last argument is the result it sets)
};

struct Method::Delegate {
  const Backend* backend = nullptr;
  DelegateHandle* handle = nullptr;
  FreeableBuffer blob;
  MergedNamedDataMap* named_data = nullptr;
};

template <typename T>
Result<T*> Method::allocate(size_t count, const char* what) {
  // The block was sized by required_memory(), so running out here means the estimate is wrong.
  T* p = block_.allocate_array<T>(count);
  EMBER_CHECK(p != nullptr, Error::Internal,
              "method memory estimate too small allocating %zu %s (%zu of %zu bytes used)", count,
              what, block_.used(), block_.capacity());
  return p;
}

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

size_t Method::required_memory(const fb::ExecutionPlan* plan) {
  MemoryCount c;
  const auto* values = plan->values();
  const size_t n = values == nullptr ? 0 : values->size();
  size_t tensors = 0, externals = 0;
  c.add<EValue>(n);
  c.add<uint8_t>(n);
  for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
    const fb::EValue* v = values->Get(i);
    if (const fb::Tensor* t = v->val_as_Tensor()) {
      ++tensors;
      if (t->extra_tensor_info() != nullptr &&
          t->extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL) {
        ++externals;
      }
    } else if (const fb::IntList* il = v->val_as_IntList()) {
      const size_t k = il->items() == nullptr ? 0 : il->items()->size();
      c.add<EValue*>(k);
      c.add<int64_t>(k);
    } else if (const fb::TensorList* tl = v->val_as_TensorList()) {
      const size_t k = tl->items() == nullptr ? 0 : tl->items()->size();
      c.add<EValue*>(k);
      c.add<Tensor*>(k);
    } else if (const fb::OptionalTensorList* ol = v->val_as_OptionalTensorList()) {
      const size_t k = ol->items() == nullptr ? 0 : ol->items()->size();
      c.add<EValue*>(k);
      c.add<Tensor*>(k);
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
      const flatbuffers::Vector<int32_t>* args = nullptr;
      if (const fb::KernelCall* k = ins->instr_args_as_KernelCall()) args = k->args();
      if (const fb::DelegateCall* d = ins->instr_args_as_DelegateCall()) args = d->args();
      if (args != nullptr) c.add<EValue*>(args->size());
    }
  }
  return c.total;
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
  const size_t needed = required_memory(plan_);
  MemoryAllocator* pool = memory_->method_allocator;
  void* block = pool->allocate(needed, 16);
  EMBER_CHECK(block != nullptr, Error::MemoryAllocationFailed,
              "the method needs %zu bytes of method memory; the method allocator has %zu of %zu "
              "bytes free",
              needed, pool->capacity() - pool->used(), pool->capacity());
  block_ = MemoryAllocator(block, needed);

  EMBER_TRY(parse_values(external_data));
  EMBER_TRY(check_io());
  EMBER_TRY(init_delegates(external_data));
  EMBER_TRY(init_instructions());
  EMBER_TRY(check_storage());
  initialized_ = true;
  return Error::Ok;
}

Error Method::parse_values(const NamedDataMap* external_data) {
  const auto* values = plan_->values();
  const size_t n = values->size();
  EMBER_ASSIGN_OR_RETURN(values_, allocate<EValue>(n, "values"));
  EMBER_ASSIGN_OR_RETURN(value_flags_, allocate<uint8_t>(n, "value flags"));
  num_values_ = n;

  size_t num_tensors = 0, num_external = 0;
  for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
    const fb::EValue* v = values->Get(i);
    if (v->val_type() != fb::KernelTypes::Tensor || v->val_as_Tensor() == nullptr) continue;
    ++num_tensors;
    const fb::ExtraTensorInfo* extra = v->val_as_Tensor()->extra_tensor_info();
    if (extra != nullptr && extra->location() == fb::TensorDataLocation::EXTERNAL) ++num_external;
  }
  EMBER_ASSIGN_OR_RETURN(Tensor * tensors, allocate<Tensor>(num_tensors, "tensors"));
  EMBER_ASSIGN_OR_RETURN(external_buffers_,
                         allocate<FreeableBuffer>(num_external, "external buffers"));
  num_external_buffers_ = num_external;

  size_t tensor_index = 0;
  for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
    const fb::EValue* v = values->Get(i);
    const fb::KernelTypes type = v->val_type();
    EMBER_CHECK(type == fb::KernelTypes::Null || v->val() != nullptr, Error::InvalidProgram,
                "value %u (%s) has no payload", i, fb_tag_name(v));
    switch (type) {
      case fb::KernelTypes::Null:
        values_[i] = EValue();
        break;
      case fb::KernelTypes::Int:
        values_[i] = EValue::from_int(v->val_as_Int()->int_val());
        break;
      case fb::KernelTypes::Bool:
        values_[i] = EValue::from_bool(v->val_as_Bool()->bool_val());
        break;
      case fb::KernelTypes::Double:
        values_[i] = EValue::from_double(v->val_as_Double()->double_val());
        break;
      case fb::KernelTypes::String: {
        const flatbuffers::String* s = v->val_as_String()->string_val();
        values_[i] = EValue::from_string(s == nullptr ? std::string_view()
                                                      : std::string_view(s->c_str(), s->size()));
        break;
      }
      case fb::KernelTypes::Tensor: {
        Tensor* t = &tensors[tensor_index++];
        const Error e = parse_tensor(v->val_as_Tensor(), i, external_data, t);
        if (e != Error::Ok) return add_error_context(e, "value %u (Tensor)", i);
        values_[i] = EValue::from_tensor(t);
        break;
      }
      case fb::KernelTypes::IntList: {
        const auto* items = v->val_as_IntList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (IntList) has no items", i);
        EMBER_ASSIGN_OR_RETURN(EValue * *boxed, allocate<EValue*>(items->size(), "list items"));
        EMBER_ASSIGN_OR_RETURN(int64_t * scratch, allocate<int64_t>(items->size(), "list items"));
        for (flatbuffers::uoffset_t k = 0; k < items->size(); ++k) {
          const int64_t idx = items->Get(k);
          EMBER_CHECK(idx >= 0 && static_cast<uint64_t>(idx) < n, Error::InvalidProgram,
                      "value %u (IntList): item %u refers to value %" PRId64 " of %zu", i, k, idx,
                      n);
          const fb::EValue* member = values->Get(static_cast<flatbuffers::uoffset_t>(idx));
          EMBER_CHECK(member->val_type() == fb::KernelTypes::Int, Error::InvalidProgram,
                      "value %u (IntList): item %u refers to value %" PRId64 ", a %s, not an Int",
                      i, k, idx, fb_tag_name(member));
          boxed[k] = &values_[idx];
        }
        values_[i] = EValue::from_int_list({boxed, scratch, items->size()});
        break;
      }
      case fb::KernelTypes::DoubleList: {
        const auto* items = v->val_as_DoubleList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (DoubleList) has no items",
                    i);
        EMBER_CHECK(reinterpret_cast<uintptr_t>(items->data()) % alignof(double) == 0,
                    Error::InvalidProgram, "value %u (DoubleList): items are misaligned", i);
        values_[i] = EValue::from_double_list({items->data(), items->size()});
        break;
      }
      case fb::KernelTypes::BoolList: {
        const auto* items = v->val_as_BoolList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (BoolList) has no items", i);
        for (flatbuffers::uoffset_t k = 0; k < items->size(); ++k) {
          EMBER_CHECK(items->Get(k) <= 1, Error::InvalidProgram,
                      "value %u (BoolList): item %u is %u, not a bool", i, k, items->Get(k));
        }
        values_[i] =
            EValue::from_bool_list({reinterpret_cast<const bool*>(items->data()), items->size()});
        break;
      }
      case fb::KernelTypes::TensorList:
      case fb::KernelTypes::OptionalTensorList: {
        const bool optional = type == fb::KernelTypes::OptionalTensorList;
        const auto* items =
            optional ? v->val_as_OptionalTensorList()->items() : v->val_as_TensorList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (%s) has no items", i,
                    fb_tag_name(v));
        EMBER_ASSIGN_OR_RETURN(EValue * *boxed, allocate<EValue*>(items->size(), "list items"));
        EMBER_ASSIGN_OR_RETURN(Tensor * *scratch, allocate<Tensor*>(items->size(), "list items"));
        for (flatbuffers::uoffset_t k = 0; k < items->size(); ++k) {
          const int32_t idx = items->Get(k);
          if (optional && idx == -1) {
            boxed[k] = nullptr;
            continue;
          }
          // Members come before the list (they are parsed first).
          EMBER_CHECK(idx >= 0 && static_cast<uint32_t>(idx) < i, Error::InvalidProgram,
                      "value %u (%s): item %u refers to value %d; members must precede the list", i,
                      fb_tag_name(v), k, idx);
          const Tag member = values_[idx].tag();
          EMBER_CHECK(member == Tag::Tensor || (optional && member == Tag::None),
                      Error::InvalidProgram,
                      "value %u (%s): item %u refers to value %d, a %s, not a Tensor", i,
                      fb_tag_name(v), k, idx, to_string(member));
          boxed[k] = &values_[idx];
        }
        const BoxedTensorList list{boxed, scratch, items->size()};
        values_[i] =
            optional ? EValue::from_optional_tensor_list(list) : EValue::from_tensor_list(list);
        break;
      }
      default:
        return fail(Error::InvalidProgram, "value %u has unknown type tag %d", i,
                    static_cast<int>(type));
    }
  }
  return Error::Ok;
}

Error Method::parse_tensor(const fb::Tensor* ft, size_t value_index,
                           const NamedDataMap* external_data, Tensor* out) {
  const auto dtype = static_cast<ScalarType>(ft->scalar_type());
  EMBER_CHECK(is_valid(dtype), Error::InvalidProgram, "scalar type code %d is not defined",
              static_cast<int>(dtype));
  EMBER_CHECK(is_supported(dtype), Error::NotSupported,
              "dtype %s (code %d) is not supported by Ember", to_string(dtype),
              static_cast<int>(dtype));
  EMBER_CHECK(ft->storage_offset() == 0, Error::InvalidProgram,
              "storage_offset is %d; only 0 is supported", ft->storage_offset());
  EMBER_CHECK(ft->sizes() != nullptr && ft->dim_order() != nullptr, Error::InvalidProgram,
              "sizes or dim_order is missing");
  EMBER_CHECK(reinterpret_cast<uintptr_t>(ft->sizes()->data()) % alignof(int32_t) == 0,
              Error::InvalidProgram, "sizes are misaligned");
  const auto dynamism = static_cast<ShapeDynamism>(ft->shape_dynamism());
  EMBER_CHECK(dynamism == ShapeDynamism::Static || dynamism == ShapeDynamism::DynamicBound,
              Error::NotSupported, "shape dynamism %d is not supported (static or bounded only)",
              static_cast<int>(dynamism));
  std::span<const int32_t> sizes(ft->sizes()->data(), ft->sizes()->size());
  std::span<const uint8_t> dim_order(ft->dim_order()->data(), ft->dim_order()->size());
  EMBER_CHECK(dim_order.size() == sizes.size(), Error::InvalidProgram,
              "dim_order has %zu entries for rank %zu", dim_order.size(), sizes.size());
  Result<Tensor> made = Tensor::make(dtype, sizes, dim_order, nullptr, dynamism);
  if (!made.ok()) {
    // Tensor::make reports InvalidArgument for bad metadata; from a file that is a bad program.
    return made.error() == Error::InvalidArgument ? Error::InvalidProgram : made.error();
  }
  *out = *made;
  const size_t nbytes = out->capacity_bytes();

  const fb::AllocationDetails* alloc = ft->allocation_info();
  auto planned_address = [&]() -> Result<void*> {
    EMBER_CHECK(memory_->planned_memory != nullptr, Error::InvalidProgram,
                "tensor is planned in arena %u but the method plans no arenas", alloc->memory_id());
    const uint64_t offset = static_cast<uint64_t>(alloc->memory_offset_low()) |
                            (static_cast<uint64_t>(alloc->memory_offset_high()) << 32);
    return memory_->planned_memory->address(alloc->memory_id(), offset, nbytes);
  };

  void* data = nullptr;
  uint8_t flags = 0;
  const fb::ExtraTensorInfo* extra = ft->extra_tensor_info();
  if (extra != nullptr && extra->location() == fb::TensorDataLocation::EXTERNAL) {
    const flatbuffers::String* fqn = extra->fully_qualified_name();
    EMBER_CHECK(fqn != nullptr, Error::InvalidProgram, "external tensor has no name");
    EMBER_CHECK(external_data != nullptr, Error::NotFound,
                "'%s' is missing from named data: the program keeps its weights in a .ptd file "
                "and none was given",
                fqn->c_str());
    Result<TensorLayout> layout = external_data->get_tensor_layout(fqn->c_str());
    if (!layout.ok()) return layout.error();
    EMBER_CHECK(layout->dtype == dtype && layout->sizes.size() == sizes.size() &&
                    std::equal(sizes.begin(), sizes.end(), layout->sizes.begin()) &&
                    layout->dim_order.size() == dim_order.size() &&
                    std::equal(dim_order.begin(), dim_order.end(), layout->dim_order.begin()),
                Error::InvalidExternalData,
                "named data '%s' has another dtype, shape or dim order than the program's tensor "
                "(%s, rank %zu)",
                fqn->c_str(), to_string(dtype), sizes.size());
    if (alloc != nullptr) {
      EMBER_ASSIGN_OR_RETURN(data, planned_address());
      EMBER_TRY(external_data->load_data_into(fqn->c_str(), data, nbytes));
      flags = kPlanned;
    } else {
      Result<FreeableBuffer> buffer = external_data->get_data(fqn->c_str());
      if (!buffer.ok()) return buffer.error();
      EMBER_CHECK(buffer->size() >= nbytes, Error::InvalidExternalData,
                  "named data '%s' holds %zu bytes, the tensor needs %zu", fqn->c_str(),
                  buffer->size(), nbytes);
      data = const_cast<void*>(buffer->data());
      // The buffer stays mapped for the Method's lifetime: the tensor points into it.
      external_buffers_[next_external_++] = std::move(*buffer);
      flags = kConstant | kPlanned;
    }
  } else if (ft->data_buffer_idx() > 0 && alloc == nullptr) {
    Result<const uint8_t*> constant = program_->constant_data(ft->data_buffer_idx(), nbytes);
    if (!constant.ok()) return constant.error();
    data = const_cast<uint8_t*>(*constant);
    flags = kConstant | kPlanned;
  } else if (ft->data_buffer_idx() > 0) {
    EMBER_ASSIGN_OR_RETURN(data, planned_address());
    Result<const uint8_t*> initial = program_->mutable_data(ft->data_buffer_idx(), nbytes);
    if (!initial.ok()) return initial.error();
    if (nbytes > 0) std::memcpy(data, *initial, nbytes);
    flags = kPlanned;
  } else if (alloc != nullptr) {
    EMBER_ASSIGN_OR_RETURN(data, planned_address());
    flags = kPlanned;
  }
  EMBER_CHECK(reinterpret_cast<uintptr_t>(data) % alignment_for(dtype) == 0, Error::InvalidProgram,
              "data of a %s tensor is not aligned to %zu bytes", to_string(dtype),
              alignment_for(dtype));
  out->set_data(data);
  value_flags_[value_index] = flags;
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

Error Method::init_delegates(const NamedDataMap* external_data) {
  const auto* delegates = plan_->delegates();
  if (delegates->size() == 0) return Error::Ok;
  EMBER_ASSIGN_OR_RETURN(delegates_, allocate<Delegate>(delegates->size(), "delegates"));
  num_delegates_ = delegates->size();
  const fb::Program* root = program_->flatbuffer();
  for (flatbuffers::uoffset_t i = 0; i < delegates->size(); ++i) {
    const fb::BackendDelegate* d = delegates->Get(i);
    EMBER_CHECK(d->id() != nullptr && d->processed() != nullptr, Error::InvalidProgram,
                "delegate %u lacks its backend id or processed data", i);
    const Backend* backend = find_backend(d->id()->c_str());
    EMBER_CHECK(backend != nullptr, Error::NotFound,
                "delegate %u: backend '%s' is not registered in this runtime", i, d->id()->c_str());
    EMBER_CHECK(backend->is_available(), Error::NotFound,
                "delegate %u: backend '%s' is not available on this machine", i, d->id()->c_str());
    Delegate& slot = delegates_[i];
    slot.backend = backend;
    const fb::BackendDelegateDataReference* ref = d->processed();
    if (ref->location() == fb::DataLocation::INLINE) {
      const auto* inline_data = root->backend_delegate_data();
      EMBER_CHECK(inline_data != nullptr && ref->index() < inline_data->size() &&
                      inline_data->Get(ref->index())->data() != nullptr,
                  Error::InvalidProgram, "delegate %u: inline data %u does not exist", i,
                  ref->index());
      const auto* bytes = inline_data->Get(ref->index())->data();
      slot.blob = FreeableBuffer(bytes->data(), bytes->size(), nullptr, nullptr);
    } else if (ref->location() == fb::DataLocation::SEGMENT) {
      Result<FreeableBuffer> blob = program_->load_segment(ref->index(), SegmentType::Backend);
      if (!blob.ok()) return add_error_context(blob.error(), "delegate %u", i);
      slot.blob = std::move(*blob);
    } else {
      return fail(Error::InvalidProgram, "delegate %u: unknown data location %d", i,
                  static_cast<int>(ref->location()));
    }
    const auto* specs = d->compile_specs();
    const size_t num_specs = specs == nullptr ? 0 : specs->size();
    EMBER_ASSIGN_OR_RETURN(CompileSpec * spec_array, allocate<CompileSpec>(num_specs, "specs"));
    for (size_t k = 0; k < num_specs; ++k) {
      const fb::CompileSpec* s = specs->Get(static_cast<flatbuffers::uoffset_t>(k));
      EMBER_CHECK(s->key() != nullptr, Error::InvalidProgram,
                  "delegate %u: compile spec %zu has no key", i, k);
      spec_array[k].key = {s->key()->c_str(), s->key()->size()};
      if (s->value() != nullptr) spec_array[k].value = {s->value()->data(), s->value()->size()};
    }
    EMBER_ASSIGN_OR_RETURN(slot.named_data, allocate<MergedNamedDataMap>(1, "named data"));
    new (slot.named_data) MergedNamedDataMap(external_data, program_->named_data());
    BackendInitContext context{memory_->method_allocator, name(), slot.named_data};
    Result<DelegateHandle*> handle = backend->init(context, &slot.blob, {spec_array, num_specs});
    if (!handle.ok()) {
      return add_error_context(handle.error(), "delegate %u: backend '%s' failed to init", i,
                               d->id()->c_str());
    }
    slot.handle = *handle;
  }
  return Error::Ok;
}

Error Method::init_instructions() {
  const auto* chains = plan_->chains();
  EMBER_CHECK(chains->size() == 1, Error::NotSupported,
              "the plan has %u chains; Ember runs programs with exactly one", chains->size());
  const auto* instructions = chains->Get(0)->instructions();
  EMBER_CHECK(instructions != nullptr, Error::InvalidProgram, "the chain has no instructions");
  num_instructions_ = instructions->size();
  EMBER_ASSIGN_OR_RETURN(instructions_, allocate<Instruction>(num_instructions_, "instructions"));
  const auto* operators = plan_->operators();
  const auto* values = plan_->values();

  char missing[768] = {0};
  size_t missing_len = 0, num_missing = 0;
  auto check_index = [&](int32_t idx, size_t pc, const char* what) -> Error {
    EMBER_CHECK(idx >= 0 && static_cast<size_t>(idx) < num_values_, Error::InvalidProgram,
                "instruction %zu: %s refers to value %d of %zu", pc, what, idx, num_values_);
    return Error::Ok;
  };
  auto gather_args = [&](const flatbuffers::Vector<int32_t>* args, size_t pc,
                         Instruction& out) -> Error {
    EMBER_CHECK(args != nullptr, Error::InvalidProgram, "instruction %zu has no args", pc);
    EMBER_ASSIGN_OR_RETURN(out.args, allocate<EValue*>(args->size(), "instruction args"));
    out.num_args = args->size();
    for (flatbuffers::uoffset_t k = 0; k < args->size(); ++k) {
      EMBER_TRY(check_index(args->Get(k), pc, "an argument"));
      out.args[k] = &values_[args->Get(k)];
    }
    return Error::Ok;
  };

  for (size_t pc = 0; pc < num_instructions_; ++pc) {
    const fb::Instruction* ins = instructions->Get(static_cast<flatbuffers::uoffset_t>(pc));
    Instruction& out = instructions_[pc];
    out.reads_views = false;  // set below, once every et_view result is known
    out.et_view = false;
    EMBER_CHECK(ins->instr_args() != nullptr, Error::InvalidProgram,
                "instruction %zu has no arguments table", pc);
    switch (ins->instr_args_type()) {
      case fb::InstructionArguments::KernelCall: {
        const fb::KernelCall* call = ins->instr_args_as_KernelCall();
        EMBER_CHECK(operators != nullptr && call->op_index() >= 0 &&
                        static_cast<uint32_t>(call->op_index()) < operators->size(),
                    Error::InvalidProgram, "instruction %zu: operator %d does not exist", pc,
                    call->op_index());
        const fb::Operator* op =
            operators->Get(static_cast<flatbuffers::uoffset_t>(call->op_index()));
        EMBER_CHECK(op->name() != nullptr, Error::InvalidProgram,
                    "instruction %zu: operator %d has no name", pc, call->op_index());
        char name[kMaxOperatorNameLength];
        const bool has_overload = op->overload() != nullptr && op->overload()->size() > 0;
        const int len =
            std::snprintf(name, sizeof(name), "%s%s%s", op->name()->c_str(),
                          has_overload ? "." : "", has_overload ? op->overload()->c_str() : "");
        EMBER_CHECK(len > 0 && static_cast<size_t>(len) < sizeof(name), Error::InvalidProgram,
                    "instruction %zu: operator name '%.40s...' is %d characters (limit %zu)", pc,
                    op->name()->c_str(), len, kMaxOperatorNameLength - 1);
        out.kind = Instruction::Kind::Kernel;
        EMBER_TRY(gather_args(call->args(), pc, out));
        out.et_view = std::strcmp(name, kEtView) == 0 && out.num_args == 3;
        if (out.et_view) value_flags_[out.args[2] - values_] |= kView;
        out.kernel = find_kernel(name);
        if (out.kernel == nullptr) {
          if (std::strstr(missing, name) == nullptr &&
              missing_len + static_cast<size_t>(len) + 24 < sizeof(missing)) {
            missing_len += static_cast<size_t>(
                std::snprintf(missing + missing_len, sizeof(missing) - missing_len,
                              "%s%s (instruction %zu)", num_missing ? ", " : "", name, pc));
          }
          ++num_missing;
          break;
        }
        if (const char* sig = out.kernel->signature) {
          const size_t expected = std::strlen(sig);
          EMBER_CHECK(expected == out.num_args, Error::InvalidProgram,
                      "instruction %zu (%s): the kernel takes %zu arguments (schema arguments "
                      "then the out again), the program passes %u",
                      pc, name, expected, out.num_args);
          for (size_t k = 0; k < expected; ++k) {
            EMBER_CHECK(signature_admits(sig[k], *out.args[k]), Error::InvalidProgram,
                        "instruction %zu (%s): argument %zu is a %s, which the kernel does not "
                        "accept there (signature '%s')",
                        pc, name, k, to_string(out.args[k]->tag()), sig);
          }
        }
        // The out argument (last) must be writable: never a constant.
        if (out.num_args > 0) {
          const EValue* last = out.args[out.num_args - 1];
          auto writable = [&](const EValue* e) {
            return e == nullptr || !e->is_tensor() || (value_flags_[e - values_] & kConstant) == 0;
          };
          bool ok = writable(last);
          if (last->tag() == Tag::ListTensor) {
            for (Tensor* t : last->to_tensor_list()) {
              for (size_t v = 0; v < num_values_ && ok; ++v) {
                ok = values_[v].tensor_ptr() != t || (value_flags_[v] & kConstant) == 0;
              }
            }
          }
          EMBER_CHECK(ok, Error::InvalidProgram,
                      "instruction %zu (%s) writes its output into a constant", pc, name);
        }
        break;
      }
      case fb::InstructionArguments::DelegateCall: {
        const fb::DelegateCall* call = ins->instr_args_as_DelegateCall();
        EMBER_CHECK(call->delegate_index() >= 0 &&
                        static_cast<size_t>(call->delegate_index()) < num_delegates_,
                    Error::InvalidProgram, "instruction %zu: delegate %d does not exist", pc,
                    call->delegate_index());
        out.kind = Instruction::Kind::Delegate;
        out.delegate = static_cast<uint32_t>(call->delegate_index());
        EMBER_TRY(gather_args(call->args(), pc, out));
        break;
      }
      case fb::InstructionArguments::MoveCall: {
        const fb::MoveCall* call = ins->instr_args_as_MoveCall();
        EMBER_TRY(check_index(call->move_from(), pc, "move_from"));
        EMBER_TRY(check_index(call->move_to(), pc, "move_to"));
        EMBER_CHECK(values_[call->move_from()].tag() == values_[call->move_to()].tag(),
                    Error::InvalidProgram, "instruction %zu: moves a %s into a %s", pc,
                    to_string(values_[call->move_from()].tag()),
                    to_string(values_[call->move_to()].tag()));
        EMBER_CHECK((value_flags_[call->move_from()] & kConstant) == 0 ||
                        (value_flags_[call->move_to()] & kConstant) != 0,
                    Error::InvalidProgram,
                    "instruction %zu: moves constant value %d into non-constant value %d", pc,
                    call->move_from(), call->move_to());
        out.kind = Instruction::Kind::Move;
        out.a = call->move_from();
        out.b = call->move_to();
        break;
      }
      case fb::InstructionArguments::JumpFalseCall: {
        const fb::JumpFalseCall* call = ins->instr_args_as_JumpFalseCall();
        EMBER_TRY(check_index(call->cond_value_index(), pc, "the condition"));
        const EValue& cond = values_[call->cond_value_index()];
        EMBER_CHECK(
            cond.is_bool() || (cond.is_tensor() && cond.to_tensor().dtype() == ScalarType::Bool),
            Error::InvalidProgram,
            "instruction %zu: the jump condition is a %s, not a Bool or bool tensor", pc,
            to_string(cond.tag()));
        EMBER_CHECK(call->destination_instruction() >= 0, Error::InvalidProgram,
                    "instruction %zu: jump destination %d is negative", pc,
                    call->destination_instruction());
        out.kind = Instruction::Kind::JumpFalse;
        out.a = call->cond_value_index();
        out.b = call->destination_instruction();
        break;
      }
      case fb::InstructionArguments::FreeCall: {
        const fb::FreeCall* call = ins->instr_args_as_FreeCall();
        EMBER_TRY(check_index(call->value_index(), pc, "the freed value"));
        EMBER_CHECK(values_[call->value_index()].is_tensor(), Error::InvalidProgram,
                    "instruction %zu frees value %d, a %s, not a Tensor", pc, call->value_index(),
                    to_string(values_[call->value_index()].tag()));
        out.kind = Instruction::Kind::Free;
        out.a = call->value_index();
        break;
      }
      default:
        return fail(Error::InvalidProgram, "instruction %zu has unknown kind %d", pc,
                    static_cast<int>(ins->instr_args_type()));
    }
  }
  (void)values;
  EMBER_CHECK(num_missing == 0, Error::OperatorMissing,
              "no kernel is registered for %zu operator call(s): %s", num_missing, missing);
  // A move of an et_view result carries its (possibly unset) storage along.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t pc = 0; pc < num_instructions_; ++pc) {
      const Instruction& ins = instructions_[pc];
      if (ins.kind != Instruction::Kind::Move || (value_flags_[ins.a] & kView) == 0 ||
          (value_flags_[ins.b] & kView) != 0) {
        continue;
      }
      value_flags_[ins.b] |= kView;
      changed = true;
    }
  }
  // The et_view results, whose storage execute clears first (kept as a list: no scan of every
  // value on each execute).
  for (size_t v = 0; v < num_values_; ++v) {
    if ((value_flags_[v] & kView) != 0 && values_[v].is_tensor()) ++num_views_;
  }
  if (num_views_ > 0) {
    EMBER_ASSIGN_OR_RETURN(views_, allocate<Tensor*>(num_views_, "et_view results"));
    size_t k = 0;
    for (size_t v = 0; v < num_values_; ++v) {
      if ((value_flags_[v] & kView) != 0 && values_[v].is_tensor()) {
        views_[k++] = &values_[v].to_tensor();
      }
    }
  }
  // Calls that read an et_view result check, when they run, that its et_view ran first (a
  // program could read it before, or jump over the et_view).
  for (size_t pc = 0; pc < num_instructions_; ++pc) {
    Instruction& ins = instructions_[pc];
    if (ins.kind != Instruction::Kind::Kernel && ins.kind != Instruction::Kind::Delegate) continue;
    const size_t n = ins.et_view ? ins.num_args - 1 : ins.num_args;
    for (size_t k = 0; k < n; ++k) {
      ins.reads_views = ins.reads_views || (value_flags_[ins.args[k] - values_] & kView) != 0;
    }
  }
  return Error::Ok;
}

Error Method::check_view_args(const Instruction& ins, size_t pc) const {
  const size_t n = ins.et_view ? ins.num_args - 1 : ins.num_args;  // not the et_view's result
  for (size_t k = 0; k < n; ++k) {
    const EValue* e = ins.args[k];
    if ((value_flags_[e - values_] & kView) == 0 || !e->is_tensor()) continue;
    const Tensor& t = e->to_tensor();
    EMBER_CHECK(t.data() != nullptr || t.capacity_bytes() == 0, Error::InvalidProgram,
                "instruction %zu reads value %td, an et_view result, before its et_view ran", pc,
                e - values_);
  }
  return Error::Ok;
}

Error Method::set_input(const Tensor& tensor, size_t index) {
  return set_input(EValue::from_tensor(const_cast<Tensor*>(&tensor)), index);
}

Error Method::set_input(const EValue& value, size_t index) {
  EMBER_CHECK(initialized_, Error::InvalidState, "the method is not loaded");
  EMBER_CHECK(index < num_inputs_, Error::InvalidArgument,
              "input %zu does not exist: the method takes %zu inputs", index, num_inputs_);
  const int32_t vi = input_index_[index];
  EValue& dst = values_[vi];
  if (!dst.is_tensor()) {
    EMBER_CHECK(value.tag() == dst.tag(), Error::InvalidArgument,
                "input %zu expects a %s, got a %s", index, to_string(dst.tag()),
                to_string(value.tag()));
    bool same = true;
    switch (dst.tag()) {
      case Tag::Int:
        same = value.to_int() == dst.to_int();
        break;
      case Tag::Bool:
        same = value.to_bool() == dst.to_bool();
        break;
      case Tag::String:
        same = value.to_string() == dst.to_string();
        break;
      case Tag::Double: {
        const double a = value.to_double(), b = dst.to_double();
        same = std::fabs(a - b) <= 1e-4 + 1e-5 * std::fabs(b) || (std::isnan(a) && std::isnan(b));
        break;
      }
      default:
        break;
    }
    EMBER_CHECK(same, Error::InvalidArgument,
                "input %zu is a %s that must equal the value the program was exported with", index,
                to_string(dst.tag()));
    input_set_[index] = true;
    return Error::Ok;
  }
  EMBER_CHECK(value.is_tensor(), Error::InvalidArgument, "input %zu expects a Tensor, got a %s",
              index, to_string(value.tag()));
  Tensor& t = dst.to_tensor();
  const Tensor& src = value.to_tensor();
  EMBER_CHECK(src.dtype() == t.dtype(), Error::InvalidArgument,
              "input %zu: dtype is %s, the method expects %s", index, to_string(src.dtype()),
              to_string(t.dtype()));
  EMBER_CHECK(src.dim() == t.dim(), Error::InvalidArgument,
              "input %zu: rank is %d, the method expects %d", index, src.dim(), t.dim());
  const fb::Tensor* declared =
      plan_->values()->Get(static_cast<flatbuffers::uoffset_t>(vi))->val_as_Tensor();
  const bool dynamic = t.dynamism() != ShapeDynamism::Static;
  for (int d = 0; d < t.dim(); ++d) {
    const int32_t bound = declared->sizes()->Get(static_cast<flatbuffers::uoffset_t>(d));
    EMBER_CHECK(dynamic ? src.size(d) <= bound : src.size(d) == bound, Error::InvalidArgument,
                dynamic ? "input %zu: dim %d is %d, above its upper bound of %d"
                        : "input %zu: dim %d is %d, the method expects %d",
                index, d, src.size(d), bound);
    EMBER_CHECK(src.dim_order()[d] == t.dim_order()[d], Error::InvalidArgument,
                "input %zu: dim order differs from the method's", index);
  }
  EMBER_TRY(t.resize(src.sizes()));
  const size_t nbytes = src.nbytes();
  EMBER_CHECK(nbytes == 0 || src.data() != nullptr, Error::InvalidArgument,
              "input %zu: the tensor has no data", index);
  if ((value_flags_[vi] & kPlanned) != 0) {
    if (nbytes > 0 && src.data() != t.data()) std::memmove(t.mutable_data(), src.data(), nbytes);
  } else {
    EMBER_CHECK(reinterpret_cast<uintptr_t>(src.data()) % alignment_for(src.dtype()) == 0,
                Error::InvalidArgument, "input %zu: data is not aligned to its element size",
                index);
    t.set_data(src.mutable_data());
  }
  input_set_[index] = true;
  return Error::Ok;
}

Error Method::set_output_data_ptr(void* buffer, size_t size, size_t index) {
  EMBER_CHECK(initialized_, Error::InvalidState, "the method is not loaded");
  EMBER_CHECK(index < num_outputs_, Error::InvalidArgument,
              "output %zu does not exist: the method has %zu outputs", index, num_outputs_);
  const int32_t vi = output_index_[index];
  EMBER_CHECK(values_[vi].is_tensor(), Error::InvalidArgument, "output %zu is a %s, not a Tensor",
              index, to_string(values_[vi].tag()));
  EMBER_CHECK((value_flags_[vi] & kPlanned) == 0, Error::InvalidState,
              "output %zu is memory-planned and cannot take a caller buffer", index);
  Tensor& t = values_[vi].to_tensor();
  EMBER_CHECK(size >= t.capacity_bytes(), Error::InvalidArgument,
              "output %zu: the buffer holds %zu bytes but the output's upper-bound size needs %zu",
              index, size, t.capacity_bytes());
  EMBER_CHECK(buffer != nullptr || t.capacity_bytes() == 0, Error::InvalidArgument,
              "output %zu: the buffer is null", index);
  EMBER_CHECK(reinterpret_cast<uintptr_t>(buffer) % alignment_for(t.dtype()) == 0,
              Error::InvalidArgument, "output %zu: the buffer is not aligned to %zu bytes", index,
              alignment_for(t.dtype()));
  t.set_data(buffer);
  return Error::Ok;
}

Result<EValue> Method::get_input(size_t index) const {
  EMBER_CHECK(index < num_inputs_, Error::InvalidArgument,
              "input %zu does not exist: the method takes %zu inputs", index, num_inputs_);
  return values_[input_index_[index]];
}

Result<EValue> Method::get_output(size_t index) const {
  EMBER_CHECK(index < num_outputs_, Error::InvalidArgument,
              "output %zu does not exist: the method has %zu outputs", index, num_outputs_);
  return values_[output_index_[index]];
}

Error Method::execute() {
  EMBER_CHECK(initialized_, Error::InvalidState, "the method is not loaded");
  for (size_t i = 0; i < num_inputs_; ++i) {
    EMBER_CHECK(input_set_[i], Error::InvalidState, "input %zu has not been set", i);
  }
  for (size_t i = 0; i < num_outputs_; ++i) {
    const Tensor* t = values_[output_index_[i]].tensor_ptr();
    EMBER_CHECK(t == nullptr || t->data() != nullptr || t->capacity_bytes() == 0,
                Error::InvalidState,
                "output %zu has no buffer: the program does not plan it, so call "
                "set_output_data_ptr first",
                i);
  }
  // et_view results start each execute with no storage, so a call that reads one before its
  // et_view runs this time fails, instead of reading through last execute's pointer (an input
  // buffer the caller may have freed since).
  for (size_t k = 0; k < num_views_; ++k) views_[k]->set_data(nullptr);
  KernelContext kernel_context{memory_->temp_allocator, &ThreadPool::global()};
  BackendExecuteContext backend_context{memory_->temp_allocator};
  size_t pc = 0;
  size_t executed = 0;
  while (pc < num_instructions_) {
    EMBER_CHECK(++executed <= max_instructions_, Error::InvalidState,
                "execute stopped after %zu instructions (a jump that loops forever?)",
                max_instructions_);
    const Instruction& ins = instructions_[pc];
    switch (ins.kind) {
      case Instruction::Kind::Kernel: {
        if (ins.reads_views) EMBER_TRY(check_view_args(ins, pc));
        const Error e = ins.kernel->fn(kernel_context, {ins.args, ins.num_args});
        if (memory_->temp_allocator != nullptr) memory_->temp_allocator->reset();
        if (e != Error::Ok) {
          return add_error_context(e, "instruction %zu (%s)", pc, ins.kernel->name);
        }
        break;
      }
      case Instruction::Kind::Delegate: {
        if (ins.reads_views) EMBER_TRY(check_view_args(ins, pc));
        const Delegate& d = delegates_[ins.delegate];
        const Error e = d.backend->execute(backend_context, d.handle, {ins.args, ins.num_args});
        if (memory_->temp_allocator != nullptr) memory_->temp_allocator->reset();
        if (e != Error::Ok)
          return add_error_context(e, "instruction %zu (delegate %u)", pc, ins.delegate);
        break;
      }
      case Instruction::Kind::Move:
        values_[ins.b] = values_[ins.a];
        break;
      case Instruction::Kind::JumpFalse: {
        const EValue& cond = values_[ins.a];
        bool truth = true;
        if (cond.is_bool()) {
          truth = cond.to_bool();
        } else {
          const Tensor& t = cond.to_tensor();
          const uint8_t* p = t.data<uint8_t>();
          EMBER_CHECK(p != nullptr || t.numel() == 0, Error::InvalidProgram,
                      "instruction %zu: the condition tensor has no storage", pc);
          for (int64_t k = 0; k < t.numel() && truth; ++k) truth = p[k] != 0;
        }
        if (!truth) {
          pc = static_cast<size_t>(ins.b);
          continue;
        }
        break;
      }
      case Instruction::Kind::Free:
        // Ember plans all memory, so there is nothing to release; the tensor keeps its storage.
        break;
    }
    ++pc;
  }
  return Error::Ok;
}

}  // namespace ember
