#include "runtime/executor/backend.h"

#include <mutex>

namespace ember {
namespace {
struct Entry {
  const char* name;
  const Backend* backend;
};
constexpr size_t kMaxBackends = 64;
Entry g_backends[kMaxBackends];
size_t g_num_backends = 0;
std::mutex g_mutex;
}  // namespace

Error register_backend(const char* name, const Backend* backend) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_num_backends; ++i) {
    EMBER_CHECK(std::string_view(g_backends[i].name) != name, Error::InvalidArgument,
                "backend '%s' is already registered", name);
  }
  EMBER_CHECK(g_num_backends < kMaxBackends, Error::OutOfResources,
              "backend table full registering '%s'", name);
  g_backends[g_num_backends++] = {name, backend};
  return Error::Ok;
}

const Backend* find_backend(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_num_backends; ++i) {
    if (name == g_backends[i].name) return g_backends[i].backend;
  }
  return nullptr;
}

}  // namespace ember
