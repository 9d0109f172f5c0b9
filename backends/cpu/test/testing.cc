#include "backends/cpu/test/testing.h"

#include <cstring>

#include "backends/cpu/cpu_compiler.h"
#include "backends/cpu/cpu_runtime.h"
#include "compiler/import/exported_program.h"
#include "compiler/passes/passes.h"
#include "runtime/kernels/portable/portable.h"

namespace ember::cpu::testing {

const partition::NamedBlob* BlobMap::find(std::string_view key) const {
  for (const auto& b : *blobs_) {
    if (b.key == key) return &b;
  }
  return nullptr;
}

Result<TensorLayout> BlobMap::get_tensor_layout(std::string_view key) const {
  return fail(Error::NotFound, "'%.*s' has no layout", static_cast<int>(key.size()), key.data());
}

Result<FreeableBuffer> BlobMap::get_data(std::string_view key) const {
  const auto* b = find(key);
  if (b == nullptr) {
    return fail(Error::NotFound, "'%.*s' is missing", static_cast<int>(key.size()), key.data());
  }
  return FreeableBuffer(b->data.data(), b->data.size(), nullptr, nullptr);
}

Error BlobMap::load_data_into(std::string_view key, void* buffer, size_t size) const {
  const auto* b = find(key);
  if (b == nullptr) {
    return fail(Error::NotFound, "'%.*s' is missing from named data", static_cast<int>(key.size()),
                key.data());
  }
  if (b->data.size() < size) return fail(Error::InvalidArgument, "named data too short");
  std::memcpy(buffer, b->data.data(), size);
  return Error::Ok;
}

Result<std::string_view> BlobMap::key(size_t index) const {
  if (index >= blobs_->size()) return fail(Error::InvalidArgument, "key index out of range");
  return std::string_view((*blobs_)[index].key);
}

ir::StatusOr<partition::PreprocessResult> preprocess_exported_file(
    const std::string& path, const std::vector<partition::CompileSpecEntry>& specs) {
  // Constant folding runs registered kernels (compiler/ops/kernel_eval.h).
  if (register_portable_kernels() != Error::Ok) return ir::Status::error(last_error_message());
  auto p = importer::import_exported_program_file(path);
  if (!p.ok()) return p.status();
  ir::Program& prog = **p;
  passes::PassContext ctx;
  EMBER_IR_RETURN_IF_ERROR(passes::remove_aliases(prog, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::drop_assertions(prog, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::fold_constants(prog, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::functionalize(prog, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::eliminate_dead_code(prog, ctx));
  std::string unsupported;
  for (const ir::Node* n : prog.graph().nodes()) {
    partition::Support s = compiler_backend()->support().check(*n);
    if (!s.supported) unsupported += "\n  " + n->describe() + ": " + s.reason;
  }
  if (!unsupported.empty()) {
    return ir::Status::error("nodes the cpu backend does not take:" + unsupported);
  }
  return compiler_backend()->preprocess(prog, specs);
}

Delegate::~Delegate() {
  if (handle_ != nullptr) runtime_backend()->destroy(handle_);
}

Error Delegate::init(const partition::PreprocessResult& r, const std::vector<CompileSpec>& specs) {
  map_ = std::make_unique<BlobMap>(&r.named_data);
  blob_ = r.processed;
  BackendInitContext ctx{nullptr, "forward", map_.get()};
  FreeableBuffer buf(blob_.data(), blob_.size(), nullptr, nullptr);
  Result<DelegateHandle*> h = runtime_backend()->init(ctx, &buf, specs);
  if (!h.ok()) return h.error();
  handle_ = *h;
  return Error::Ok;
}

Error Delegate::run(const std::vector<std::pair<float*, std::vector<int32_t>>>& inputs,
                    const std::vector<std::pair<float*, std::vector<int32_t>>>& outputs) {
  std::vector<Tensor> tensors;
  for (const auto* list : {&inputs, &outputs}) {
    for (const auto& [data, sizes] : *list) {
      Result<Tensor> t = Tensor::make(ScalarType::Float, sizes, {}, data);
      if (!t.ok()) return t.error();
      tensors.push_back(*t);
    }
  }
  std::vector<EValue> values;
  for (auto& t : tensors) values.push_back(EValue::from_tensor(&t));
  std::vector<EValue*> args;
  for (auto& v : values) args.push_back(&v);
  BackendExecuteContext ctx{nullptr};
  return runtime_backend()->execute(ctx, handle_, args);
}

}  // namespace ember::cpu::testing
