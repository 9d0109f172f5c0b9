// The .ptd reader: a NamedDataMap over an ExecuTorch FlatTensor file (identifier FT01).
//
//   Result<MmapDataLoader> file = MmapDataLoader::from("model.ptd");
//   Result<FlatTensorDataMap> map = FlatTensorDataMap::load(&*file);
//   Result<TensorLayout> layout = map->get_tensor_layout("linear.weight");
//
// load() verifies the header, the whole FlatBuffer, every key, segment index and segment range,
// and every tensor layout, so lookups afterwards cannot read outside the file. The loader must
// outlive the map.
#pragma once

#include "runtime/executor/named_data_map.h"

namespace flat_tensor_flatbuffer {
struct FlatTensor;
}

namespace ember {

class FlatTensorDataMap final : public NamedDataMap {
 public:
  // Errors: InvalidExternalData for anything malformed (message names the check and value).
  static Result<FlatTensorDataMap> load(const DataLoader* loader);

  Result<TensorLayout> get_tensor_layout(std::string_view key) const override;
  Result<FreeableBuffer> get_data(std::string_view key) const override;
  Error load_data_into(std::string_view key, void* buffer, size_t size) const override;
  size_t num_keys() const override;
  Result<std::string_view> key(size_t index) const override;

 private:
  FlatTensorDataMap(const DataLoader* loader, FreeableBuffer flatbuffer, uint64_t segment_base)
      : loader_(loader), flatbuffer_(std::move(flatbuffer)), segment_base_(segment_base) {}
  const flat_tensor_flatbuffer::FlatTensor* root() const;
  Result<size_t> find(std::string_view key) const;

  const DataLoader* loader_;
  FreeableBuffer flatbuffer_;
  uint64_t segment_base_;
};

}  // namespace ember
