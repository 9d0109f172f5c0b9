// Named data: bytes looked up by key, from a .ptd file or from a program's own named_data.
//
//   Result<FlatTensorDataMap> weights = FlatTensorDataMap::load(&ptd_loader);
//   Result<Method> m = program->load_method("forward", &memory, &*weights);
//
// External tensors of a program (location EXTERNAL) are resolved through the map passed to
// load_method, by fully qualified name; a key that is absent fails the load with NotFound and a
// message "'<key>' is missing from named data".
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "runtime/core/scalar_type.h"
#include "runtime/platform/data_loader.h"

namespace ember {

struct TensorLayout {
  ScalarType dtype;
  std::span<const int32_t> sizes;
  std::span<const uint8_t> dim_order;
  size_t nbytes;
};

class NamedDataMap {
 public:
  virtual ~NamedDataMap() = default;
  // The layout stored for `key`. NotFound when the key is absent or has no layout.
  virtual Result<TensorLayout> get_tensor_layout(std::string_view key) const = 0;
  // The bytes stored for `key` (the whole segment). NotFound when absent.
  virtual Result<FreeableBuffer> get_data(std::string_view key) const = 0;
  // Copies exactly `size` bytes of `key` into `buffer`. NotFound; InvalidArgument when the
  // stored data is shorter than `size`.
  virtual Error load_data_into(std::string_view key, void* buffer, size_t size) const = 0;
  virtual size_t num_keys() const = 0;
  virtual Result<std::string_view> key(size_t index) const = 0;
};

}  // namespace ember

namespace ember {

// Looks keys up in `first`, then in `second` (either may be null): how delegates see the caller's
// .ptd ahead of the program's own named data, as in ExecuTorch.
class MergedNamedDataMap final : public NamedDataMap {
 public:
  MergedNamedDataMap(const NamedDataMap* first = nullptr, const NamedDataMap* second = nullptr)
      : first_(first), second_(second) {}
  Result<TensorLayout> get_tensor_layout(std::string_view key) const override;
  Result<FreeableBuffer> get_data(std::string_view key) const override;
  Error load_data_into(std::string_view key, void* buffer, size_t size) const override;
  size_t num_keys() const override;
  Result<std::string_view> key(size_t index) const override;

 private:
  const NamedDataMap* first_;
  const NamedDataMap* second_;
};

}  // namespace ember
