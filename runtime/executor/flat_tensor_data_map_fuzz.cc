// libFuzzer target: any bytes as a .ptd file -> FlatTensorDataMap::load, then every key's layout,
// data and load_data_into. Nothing may crash or read out of bounds.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/executor/flat_tensor_data_map.h"
#include "runtime/platform/loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t rounded = (size + 64) / 64 * 64;
  auto* bytes = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
  std::memset(bytes, 0, rounded);
  if (size > 0) std::memcpy(bytes, data, size);
  {
    ember::BufferDataLoader loader(bytes, size);
    ember::Result<ember::FlatTensorDataMap> map = ember::FlatTensorDataMap::load(&loader);
    if (map.ok()) {
      for (size_t k = 0; k < map->num_keys(); ++k) {
        ember::Result<std::string_view> key = map->key(k);
        if (!key.ok()) continue;
        ember::Result<ember::TensorLayout> layout = map->get_tensor_layout(*key);
        ember::Result<ember::FreeableBuffer> blob = map->get_data(*key);
        if (layout.ok() && layout->nbytes <= (1u << 20)) {
          std::vector<uint8_t> out(layout->nbytes);
          (void)map->load_data_into(*key, out.data(), out.size());
        }
        if (blob.ok()) {
          volatile uint8_t sink = 0;
          for (size_t i = 0; i < blob->size(); ++i)
            sink = static_cast<uint8_t>(sink ^ blob->bytes()[i]);
        }
      }
    }
  }
  std::free(bytes);
  return 0;
}
