#include "runtime/executor/module.h"

#include <cinttypes>
#include <cstdlib>
#include <cstring>

#include "runtime/kernels/llm/llm.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/thread_pool.h"

namespace ember {
namespace {

constexpr size_t kAlign = 64;

void* aligned_zeroed(size_t size) {
  const size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (p != nullptr) std::memset(p, 0, rounded == 0 ? kAlign : rounded);
  return p;
}

}  // namespace

void OwnedTensor::FreeDeleter::operator()(void* p) const { std::free(p); }

Result<OwnedTensor> OwnedTensor::zeros(ScalarType dtype, std::vector<int32_t> sizes,
                                       std::vector<uint8_t> dim_order) {
  Result<Tensor> t = Tensor::make(dtype, sizes, dim_order, nullptr);
  if (!t.ok()) return t.error();
  OwnedTensor out;
  out.storage_.reset(aligned_zeroed(t->capacity_bytes()));
  EMBER_CHECK(out.storage_ != nullptr, Error::MemoryAllocationFailed,
              "cannot allocate %zu bytes for a tensor", t->capacity_bytes());
  t->set_data(out.storage_.get());
  out.tensor_ = std::make_unique<Tensor>(*t);
  return out;
}

struct Module::LoadedMethod {
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<void, FreeDeleter>> buffers;
  std::vector<std::span<uint8_t>> arenas;
  std::unique_ptr<HierarchicalAllocator> planned;
  HeapAllocator method_allocator;
  HeapAllocator temp_allocator{/*huge_pages=*/false};
  DelegateScratch delegate_scratch;  // outlives the method's delegates
  MemoryManager memory;
  std::unique_ptr<Method> method;
};

void Module::FreeDeleter::operator()(void* p) const { std::free(p); }

Module::Module(std::string path, ModuleOptions options)
    : path_(std::move(path)), options_(std::move(options)) {}

Module::Module(std::span<const uint8_t> pte, ModuleOptions options, BufferMode mode)
    : from_buffer_(true), options_(std::move(options)) {
  if (mode == BufferMode::Borrow) {
    buffer_ = pte;
    return;
  }
  // Aligned as a mapped file is, so that the program's segments keep the alignment the writer
  // gave them relative to the start. A failure is reported by load(): constructors cannot fail.
  buffer_copy_.reset(static_cast<uint8_t*>(aligned_zeroed(pte.size())));
  copy_failed_ = buffer_copy_ == nullptr;
  if (copy_failed_) return;
  if (!pte.empty()) std::memcpy(buffer_copy_.get(), pte.data(), pte.size());
  buffer_ = {buffer_copy_.get(), pte.size()};
}

Module::~Module() {
  methods_.clear();  // methods before the program and loaders they point into
}

Error Module::load() {
  if (program_ != nullptr) return Error::Ok;
  EMBER_TRY(register_portable_kernels());
  EMBER_TRY(register_llm_kernels());  // the llama:: ops of ExecuTorch's LLM programs
  if (options_.num_threads > 0) ThreadPool::global(options_.num_threads);
  auto open = [&](const std::string& p) -> Result<std::unique_ptr<DataLoader>> {
    if (options_.load_mode == LoadMode::File) {
      Result<FileDataLoader> l = FileDataLoader::from(p.c_str());
      if (!l.ok()) return l.error();
      return std::unique_ptr<DataLoader>(new FileDataLoader(std::move(*l)));
    }
    const MlockMode mlock = options_.load_mode == LoadMode::MmapUseMlock ? MlockMode::UseMlock
                            : options_.load_mode == LoadMode::MmapUseMlockIgnoreErrors
                                ? MlockMode::UseMlockIgnoreErrors
                                : MlockMode::NoMlock;
    Result<MmapDataLoader> l = MmapDataLoader::from(p.c_str(), mlock);
    if (!l.ok()) return l.error();
    return std::unique_ptr<DataLoader>(new MmapDataLoader(std::move(*l)));
  };
  if (from_buffer_) {
    EMBER_CHECK(!copy_failed_, Error::MemoryAllocationFailed,
                "cannot allocate %zu bytes for the copy of the program buffer", buffer_.size());
    loader_ = std::make_unique<BufferDataLoader>(buffer_.data(), buffer_.size());
  } else {
    EMBER_ASSIGN_OR_RETURN(loader_, open(path_));
  }
  Result<Program> program = Program::load(loader_.get());
  if (!program.ok()) {
    return from_buffer_ ? add_error_context(program.error(), "the program buffer (%zu bytes)",
                                            buffer_.size())
                        : add_error_context(program.error(), "%s", path_.c_str());
  }
  program_ = std::make_unique<Program>(std::move(*program));
  if (!options_.data_path.empty()) {
    EMBER_ASSIGN_OR_RETURN(data_loader_, open(options_.data_path));
    Result<FlatTensorDataMap> map = FlatTensorDataMap::load(data_loader_.get());
    if (!map.ok()) return add_error_context(map.error(), "%s", options_.data_path.c_str());
    data_map_ = std::make_unique<FlatTensorDataMap>(std::move(*map));
  }
  return Error::Ok;
}

Result<std::vector<std::string>> Module::method_names() {
  EMBER_TRY(load());
  std::vector<std::string> names;
  for (size_t i = 0; i < program_->num_methods(); ++i) {
    Result<std::string_view> name = program_->get_method_name(i);
    if (!name.ok()) return name.error();
    names.emplace_back(*name);
  }
  return names;
}

Result<MethodMeta> Module::method_meta(const std::string& name) {
  EMBER_TRY(load());
  return program_->method_meta(name);
}

Error Module::load_method(const std::string& name) {
  EMBER_TRY(load());
  if (methods_.count(name) != 0) return Error::Ok;
  Result<MethodMeta> meta = program_->method_meta(name);
  if (!meta.ok()) return meta.error();
  if (options_.max_planned_bytes > 0) {
    uint64_t planned = 0;
    for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
      Result<int64_t> size = meta->memory_planned_buffer_size(i);
      if (!size.ok()) return size.error();
      EMBER_CHECK(*size >= 0, Error::InvalidProgram, "planned arena %zu has negative size", i + 1);
      planned += static_cast<uint64_t>(*size);
    }
    EMBER_CHECK(planned <= options_.max_planned_bytes, Error::MemoryAllocationFailed,
                "method '%s' plans %" PRIu64
                " bytes of memory, above the limit of %zu bytes "
                "(ModuleOptions::max_planned_bytes)",
                name.c_str(), planned, options_.max_planned_bytes);
  }
  auto lm = std::make_unique<LoadedMethod>();
  for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    Result<int64_t> size = meta->memory_planned_buffer_size(i);
    if (!size.ok()) return size.error();
    EMBER_CHECK(*size >= 0, Error::InvalidProgram, "planned arena %zu has negative size", i + 1);
    void* p = aligned_zeroed(static_cast<size_t>(*size));
    EMBER_CHECK(p != nullptr, Error::MemoryAllocationFailed,
                "cannot allocate planned arena %zu of %" PRId64 " bytes", i + 1, *size);
    lm->buffers.emplace_back(p);
    lm->arenas.emplace_back(static_cast<uint8_t*>(p), static_cast<size_t>(*size));
  }
  lm->planned = std::make_unique<HierarchicalAllocator>(lm->arenas);
  lm->memory = MemoryManager{&lm->method_allocator, lm->planned.get(), &lm->temp_allocator,
                             &lm->delegate_scratch};
  Result<Method> method = program_->load_method(name, &lm->memory, data_map_.get());
  if (!method.ok()) return method.error();
  lm->method = std::make_unique<Method>(std::move(*method));
  // Outputs the program did not plan get a buffer of their upper-bound size.
  for (size_t i = 0; i < meta->num_outputs(); ++i) {
    Result<Tag> tag = meta->output_tag(i);
    if (!tag.ok() || *tag != Tag::Tensor) continue;
    Result<TensorInfo> info = meta->output_tensor_info(i);
    if (!info.ok()) return info.error();
    if (info->memory_planned || info->nbytes == 0) continue;
    void* p = aligned_zeroed(info->nbytes);
    EMBER_CHECK(p != nullptr, Error::MemoryAllocationFailed,
                "cannot allocate %zu bytes for output %zu", info->nbytes, i);
    lm->buffers.emplace_back(p);
    EMBER_TRY(lm->method->set_output_data_ptr(p, info->nbytes, i));
  }
  methods_[name] = std::move(lm);
  return Error::Ok;
}

Result<Method*> Module::method(const std::string& name) {
  EMBER_TRY(load_method(name));
  return methods_[name]->method.get();
}

Result<std::vector<EValue>> Module::execute(const std::string& name,
                                            const std::vector<EValue>& inputs) {
  Result<Method*> m = method(name);
  if (!m.ok()) return m.error();
  Method& method = **m;
  EMBER_CHECK(inputs.size() == method.num_inputs(), Error::InvalidArgument,
              "method '%s' takes %zu inputs, %zu were given", name.c_str(), method.num_inputs(),
              inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) EMBER_TRY(method.set_input(inputs[i], i));
  EMBER_TRY(method.execute());
  std::vector<EValue> outputs;
  outputs.reserve(method.num_outputs());
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    Result<EValue> out = method.get_output(i);
    if (!out.ok()) return out.error();
    outputs.push_back(*out);
  }
  return outputs;
}

}  // namespace ember
