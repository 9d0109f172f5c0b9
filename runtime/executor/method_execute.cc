// Method run: inputs, outputs and execute.
#include <cmath>
#include <cstring>

#include "runtime/executor/method_internal.h"
#include "runtime/platform/clock.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

using namespace method_internal;

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
    EMBER_CHECK(is_aligned_for(src.data(), src.dtype()), Error::InvalidArgument,
                "input %zu: data is not aligned to its element size", index);
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
  EMBER_CHECK(is_aligned_for(buffer, t.dtype()), Error::InvalidArgument,
              "output %zu: the buffer is not aligned to %zu bytes", index,
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
  BackendExecuteContext backend_context{memory_->temp_allocator, observer_};
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
        const uint64_t start = observer_ != nullptr ? now_ns() : 0;
        const Error e = ins.kernel->fn(kernel_context, {ins.args, ins.num_args});
        if (observer_ != nullptr)
          observer_->on_instruction(pc, ins.kernel->name, -1, start, now_ns());
        if (memory_->temp_allocator != nullptr) memory_->temp_allocator->reset();
        if (e != Error::Ok) {
          return add_error_context(e, "instruction %zu (%s)", pc, ins.kernel->name);
        }
        break;
      }
      case Instruction::Kind::Delegate: {
        if (ins.reads_views) EMBER_TRY(check_view_args(ins, pc));
        const Delegate& d = delegates_[ins.delegate];
        const uint64_t start = observer_ != nullptr ? now_ns() : 0;
        const Error e = d.backend->execute(backend_context, d.handle, {ins.args, ins.num_args});
        if (observer_ != nullptr) {
          observer_->on_instruction(pc, d.backend_id, static_cast<int>(ins.delegate), start,
                                    now_ns());
        }
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
