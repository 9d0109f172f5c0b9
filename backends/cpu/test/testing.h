// Test and benchmark support for the cpu backend, used before lowering wires it in: a whole
// exported program run through the functional passes and handed to preprocess as one partition,
// named data over preprocess's blobs, and a delegate over float buffers.
//
//   auto r = ember::cpu::testing::preprocess_exported_file("resnet18.ep", {});
//   ember::cpu::testing::Delegate d;  d.init(*r, {});
//   d.run({input}, {output});          // float buffers the caller owns
//
// Not part of the backend: links the compiler's importer and passes.
#pragma once

#include <string>
#include <vector>

#include "compiler/partition/backend.h"
#include "runtime/executor/backend.h"

namespace ember::cpu::testing {

// Named data over `blobs` (which must outlive the map).
class BlobMap final : public NamedDataMap {
 public:
  explicit BlobMap(const std::vector<partition::NamedBlob>* blobs) : blobs_(blobs) {}
  Result<TensorLayout> get_tensor_layout(std::string_view key) const override;
  Result<FreeableBuffer> get_data(std::string_view key) const override;
  Error load_data_into(std::string_view key, void* buffer, size_t size) const override;
  size_t num_keys() const override { return blobs_->size(); }
  Result<std::string_view> key(size_t index) const override;

 private:
  const partition::NamedBlob* find(std::string_view key) const;
  const std::vector<partition::NamedBlob>* blobs_;
};

// Imports `path`, runs the functional passes (the form lowering hands to preprocess), checks that
// the cpu backend supports every node (an error lists the ones it does not) and preprocesses the
// whole graph as one partition.
ir::StatusOr<partition::PreprocessResult> preprocess_exported_file(
    const std::string& path, const std::vector<partition::CompileSpecEntry>& specs);

// One initialized delegate over contiguous float32 buffers.
class Delegate {
 public:
  Delegate() = default;
  ~Delegate();
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;

  // Inits the runtime half on `r` (kept by reference: it must outlive the delegate).
  Error init(const partition::PreprocessResult& r, const std::vector<CompileSpec>& specs);
  // Executes with `inputs` then `outputs`, each a float buffer of the given sizes.
  Error run(const std::vector<std::pair<float*, std::vector<int32_t>>>& inputs,
            const std::vector<std::pair<float*, std::vector<int32_t>>>& outputs);

 private:
  std::unique_ptr<BlobMap> map_;
  std::vector<uint8_t> blob_;
  DelegateHandle* handle_ = nullptr;
};

}  // namespace ember::cpu::testing
