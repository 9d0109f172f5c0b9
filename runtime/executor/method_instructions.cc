// Method load: backend delegates and the instruction list (kernels resolved, arguments checked).
#include <cstring>
#include <new>
#include <string_view>

#include "runtime/executor/method_internal.h"
#include "runtime/executor/program.h"

namespace ember {

using namespace method_internal;

namespace {

// One execute runs at most this many instructions (ExecuTorch's ET_MAX_INSTRUCTIONS): a program
// whose jumps loop forever fails instead of hanging.
// Operator names are built in a buffer of this size, as in ExecuTorch.
constexpr size_t kMaxOperatorNameLength = 100;

// The prim op whose result takes its operand's storage (a view without a copy).
constexpr std::string_view kEtView = "executorch_prim::et_view.default";

}  // namespace

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
    slot.backend_id = d->id()->c_str();
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
    BackendInitContext context{memory_->method_allocator, name(), slot.named_data,
                               memory_->delegate_scratch};
    const size_t before = memory_->method_allocator->handed_out();
    Result<DelegateHandle*> handle = backend->init(context, &slot.blob, {spec_array, num_specs});
    if (!handle.ok()) {
      return add_error_context(handle.error(), "delegate %u: backend '%s' failed to init", i,
                               d->id()->c_str());
    }
    slot.handle = *handle;
    slot.init_bytes = memory_->method_allocator->handed_out() - before;
  }
  return Error::Ok;
}

Result<Method::DelegateInfo> Method::delegate_info(size_t index) const {
  EMBER_CHECK(index < num_delegates_, Error::InvalidArgument,
              "delegate %zu of a method with %zu delegates", index, num_delegates_);
  const Delegate& d = delegates_[index];
  return DelegateInfo{d.backend_id, d.init_bytes, d.handle};
}

size_t Method::delegate_scratch_bytes() const {
  return memory_ != nullptr && memory_->delegate_scratch != nullptr
             ? memory_->delegate_scratch->reserved()
             : 0;
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

  char missing[768];
  missing[0] = '\0';
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
        // "name.overload" (or "name"), assembled by hand: this runs for every instruction.
        char name[kMaxOperatorNameLength];
        const size_t base = op->name()->size();
        const size_t extra = op->overload() == nullptr ? 0 : op->overload()->size();
        const size_t len = base + (extra > 0 ? 1 + extra : 0);
        EMBER_CHECK(base > 0 && len < sizeof(name), Error::InvalidProgram,
                    "instruction %zu: operator name '%.40s...' is %zu characters (limit %zu)", pc,
                    op->name()->c_str(), len, kMaxOperatorNameLength - 1);
        std::memcpy(name, op->name()->data(), base);
        if (extra > 0) {
          name[base] = '.';
          std::memcpy(name + base + 1, op->overload()->data(), extra);
        }
        name[len] = '\0';
        out.kind = Instruction::Kind::Kernel;
        EMBER_TRY(gather_args(call->args(), pc, out));
        out.et_view = std::string_view(name, len) == kEtView && out.num_args == 3;
        if (out.et_view) value_flags_[out.args[2] - values_] |= kView;
        out.kernel = find_kernel(std::string_view(name, len));
        if (out.kernel == nullptr) {
          if (std::strstr(missing, name) == nullptr && missing_len + len + 24 < sizeof(missing)) {
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

}  // namespace ember
