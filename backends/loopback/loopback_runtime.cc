#include "backends/loopback/loopback_runtime.h"

#include <cstring>
#include <mutex>
#include <new>

#include "ember/schema/program_generated.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/platform/loaders.h"

namespace ember::loopback {

namespace fb = executorch_flatbuffer;

namespace {

constexpr const char* kName = "loopback";

// Named data as the nested program needs it: the outer map answers bytes, and layouts where it
// has them (a .ptd). A program's own named data has no layouts (docs/pte-format.md §4.7), so
// there the nested program's declared layout of that key stands in; Method still checks the
// stored byte size against it.
class NestedDataMap final : public NamedDataMap {
 public:
  NestedDataMap(const NamedDataMap* outer, const fb::ExecutionPlan* plan)
      : outer_(outer), plan_(plan) {}

  Result<TensorLayout> get_tensor_layout(std::string_view key) const override {
    EMBER_CHECK(outer_ != nullptr, Error::NotFound,
                "'%.*s' is missing from named data: loopback was given none",
                static_cast<int>(key.size()), key.data());
    Result<TensorLayout> stored = outer_->get_tensor_layout(key);
    if (stored.ok()) return stored;
    // Only a key the outer map holds gets a stand-in layout.
    Result<FreeableBuffer> bytes = outer_->get_data(key);
    if (!bytes.ok()) return bytes.error();
    const auto* values = plan_->values();
    for (flatbuffers::uoffset_t i = 0; values != nullptr && i < values->size(); ++i) {
      const fb::Tensor* t = values->Get(i)->val_as_Tensor();
      if (t == nullptr || t->extra_tensor_info() == nullptr ||
          t->extra_tensor_info()->fully_qualified_name() == nullptr || t->sizes() == nullptr ||
          t->dim_order() == nullptr) {
        continue;
      }
      const flatbuffers::String* fqn = t->extra_tensor_info()->fully_qualified_name();
      if (key != std::string_view(fqn->c_str(), fqn->size())) continue;
      const auto dtype = static_cast<ScalarType>(t->scalar_type());
      std::span<const int32_t> sizes(t->sizes()->data(), t->sizes()->size());
      Result<size_t> nbytes = checked_nbytes(dtype, sizes);
      if (!nbytes.ok()) return nbytes.error();
      return TensorLayout{dtype, sizes, {t->dim_order()->data(), t->dim_order()->size()}, *nbytes};
    }
    return fail(Error::NotFound, "no tensor of the nested program is named '%.*s'",
                static_cast<int>(key.size()), key.data());
  }
  Result<FreeableBuffer> get_data(std::string_view key) const override {
    EMBER_CHECK(outer_ != nullptr, Error::NotFound, "'%.*s' is missing from named data",
                static_cast<int>(key.size()), key.data());
    return outer_->get_data(key);
  }
  Error load_data_into(std::string_view key, void* buffer, size_t size) const override {
    EMBER_CHECK(outer_ != nullptr, Error::NotFound, "'%.*s' is missing from named data",
                static_cast<int>(key.size()), key.data());
    return outer_->load_data_into(key, buffer, size);
  }
  size_t num_keys() const override { return outer_ == nullptr ? 0 : outer_->num_keys(); }
  Result<std::string_view> key(size_t index) const override {
    EMBER_CHECK(outer_ != nullptr, Error::InvalidArgument, "no named data");
    return outer_->key(index);
  }

 private:
  const NamedDataMap* outer_;
  const fb::ExecutionPlan* plan_;
};

// Scratch for the nested kernels: whatever temp allocator the current call was given.
class ForwardingAllocator final : public MemoryAllocator {
 public:
  ForwardingAllocator() : MemoryAllocator(nullptr, 0) {}
  void* allocate(size_t size, size_t alignment) override {
    return target_ == nullptr ? nullptr : target_->allocate(size, alignment);
  }
  void reset() override {
    if (target_ != nullptr) target_->reset();
  }
  void set_target(MemoryAllocator* target) { target_ = target; }

 private:
  MemoryAllocator* target_ = nullptr;
};

// One delegate: every member lives in the outer method allocator.
struct Delegate {
  BufferDataLoader* loader = nullptr;
  Program* program = nullptr;
  Method* method = nullptr;
  NestedDataMap* named_data = nullptr;
  HierarchicalAllocator* planned = nullptr;
  ForwardingAllocator temp;
  MemoryManager memory;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
};

template <typename T, typename... Args>
Result<T*> make(MemoryAllocator* a, Args&&... args) {
  void* p = a->allocate(sizeof(T), alignof(T));
  EMBER_CHECK(p != nullptr, Error::MemoryAllocationFailed,
              "loopback: the method allocator is out of memory (%zu bytes)", sizeof(T));
  return new (p) T(std::forward<Args>(args)...);
}

class LoopbackBackend final : public Backend {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec>) const override {
    MemoryAllocator* a = context.allocator;
    EMBER_CHECK(a != nullptr, Error::InvalidArgument, "loopback: init without an allocator");
    EMBER_ASSIGN_OR_RETURN(Delegate * d, make<Delegate>(a));
    // Program::load reads the flatbuffer in place and needs it aligned; a blob that is not (a
    // loader that packs segments tighter) is copied, and then the runtime may free it.
    const void* blob = processed->data();
    const size_t size = processed->size();
    if (reinterpret_cast<uintptr_t>(blob) % alignof(std::max_align_t) != 0) {
      void* copy = a->allocate(size == 0 ? 1 : size, alignof(std::max_align_t));
      EMBER_CHECK(copy != nullptr, Error::MemoryAllocationFailed,
                  "loopback: no memory to copy a %zu-byte blob", size);
      std::memcpy(copy, blob, size);
      blob = copy;
      processed->free();
    }
    EMBER_ASSIGN_OR_RETURN(d->loader, make<BufferDataLoader>(a, blob, size));
    Result<Program> program = Program::load(d->loader);
    if (!program.ok()) return add_error_context(program.error(), "loopback: the nested program");
    EMBER_ASSIGN_OR_RETURN(d->program, make<Program>(a, std::move(*program)));
    EMBER_CHECK(d->program->num_methods() == 1, Error::InvalidProgram,
                "loopback: the nested program has %zu methods, not 1", d->program->num_methods());
    Result<std::string_view> name = d->program->get_method_name(0);
    if (!name.ok()) return name.error();
    Result<MethodMeta> meta = d->program->method_meta(*name);
    if (!meta.ok()) return meta.error();
    // Arenas at the sizes the nested plan asks for.
    const size_t n = meta->num_memory_planned_buffers();
    if (n > 0) {
      auto* arenas = static_cast<std::span<uint8_t>*>(
          a->allocate(sizeof(std::span<uint8_t>) * n, alignof(std::span<uint8_t>)));
      EMBER_CHECK(arenas != nullptr, Error::MemoryAllocationFailed, "loopback: arena table");
      for (size_t i = 0; i < n; ++i) {
        Result<int64_t> bytes = meta->memory_planned_buffer_size(i);
        if (!bytes.ok()) return bytes.error();
        const size_t sz = static_cast<size_t>(*bytes);
        void* arena = a->allocate(sz == 0 ? 1 : sz, 64);
        EMBER_CHECK(arena != nullptr, Error::MemoryAllocationFailed,
                    "loopback: no memory for a %zu-byte arena", sz);
        new (&arenas[i]) std::span<uint8_t>(static_cast<uint8_t*>(arena), sz);
      }
      EMBER_ASSIGN_OR_RETURN(d->planned, make<HierarchicalAllocator>(
                                             a, std::span<const std::span<uint8_t>>(arenas, n)));
    }
    d->memory = MemoryManager{a, d->planned, &d->temp};
    const fb::ExecutionPlan* plan = d->program->flatbuffer()->execution_plan()->Get(0);
    EMBER_ASSIGN_OR_RETURN(d->named_data, make<NestedDataMap>(a, context.named_data, plan));
    Result<Method> method = d->program->load_method(*name, &d->memory, d->named_data);
    if (!method.ok()) return add_error_context(method.error(), "loopback: the nested method");
    EMBER_ASSIGN_OR_RETURN(d->method, make<Method>(a, std::move(*method)));
    d->num_inputs = d->method->num_inputs();
    d->num_outputs = d->method->num_outputs();
    return reinterpret_cast<DelegateHandle*>(d);
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                std::span<EValue*> args) const override {
    auto* d = reinterpret_cast<Delegate*>(handle);
    EMBER_CHECK(args.size() == d->num_inputs + d->num_outputs, Error::InvalidProgram,
                "loopback: the call passes %zu values, the nested method takes %zu inputs and "
                "%zu outputs",
                args.size(), d->num_inputs, d->num_outputs);
    d->temp.set_target(context.temp);
    for (size_t i = 0; i < d->num_inputs; ++i) {
      const Error e = d->method->set_input(*args[i], i);
      if (e != Error::Ok) return add_error_context(e, "loopback: argument %zu", i);
    }
    const Error e = d->method->execute();
    d->temp.set_target(nullptr);
    if (e != Error::Ok) return add_error_context(e, "loopback: the nested method");
    for (size_t i = 0; i < d->num_outputs; ++i) {
      Result<EValue> out = d->method->get_output(i);
      if (!out.ok()) return out.error();
      EValue* dst_value = args[d->num_inputs + i];
      EMBER_CHECK(out->is_tensor() && dst_value->is_tensor(), Error::InvalidProgram,
                  "loopback: output %zu is not a tensor", i);
      const Tensor& src = out->to_tensor();
      Tensor& dst = dst_value->to_tensor();
      EMBER_CHECK(src.dtype() == dst.dtype(), Error::InvalidProgram,
                  "loopback: output %zu is %s, the call expects %s", i, to_string(src.dtype()),
                  to_string(dst.dtype()));
      const auto same_sizes = [&] {
        if (src.sizes().size() != dst.sizes().size()) return false;
        for (size_t k = 0; k < src.sizes().size(); ++k) {
          if (src.sizes()[k] != dst.sizes()[k]) return false;
        }
        return true;
      };
      if (!same_sizes()) EMBER_TRY(dst.resize(src.sizes()));
      EMBER_CHECK(src.is_contiguous() && dst.is_contiguous(), Error::NotSupported,
                  "loopback: output %zu is not contiguous", i);
      if (src.nbytes() > 0 && src.data() != dst.data()) {
        std::memcpy(dst.mutable_data(), src.data(), src.nbytes());
      }
    }
    return Error::Ok;
  }

  void destroy(DelegateHandle* handle) const override {
    auto* d = reinterpret_cast<Delegate*>(handle);
    // The memory is the method allocator's; only the destructors run here.
    if (d->method != nullptr) d->method->~Method();
    if (d->program != nullptr) d->program->~Program();
    d->~Delegate();
  }
};

}  // namespace

const Backend& loopback_backend() {
  static const LoopbackBackend backend;
  return backend;
}

Error register_loopback_backend() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (find_backend(kName) == &loopback_backend()) return Error::Ok;
  return register_backend(kName, &loopback_backend());
}

}  // namespace ember::loopback
