#include "compiler/partition/backend.h"

#include <mutex>

#include "compiler/partition/sha256.h"

namespace ember::partition {

namespace {

// Registration happens once at start-up (explicit calls), lookups during compiles; a mutex keeps
// a compile on another thread from seeing a half-grown table.
struct Registry {
  std::mutex mutex;
  std::vector<const CompilerBackend*> backends;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

ir::Status register_compiler_backend(const CompilerBackend* backend) {
  if (backend == nullptr) return ir::Status::error("register_compiler_backend: null backend");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const CompilerBackend* b : r.backends) {
    if (b->name() == backend->name()) {
      return ir::Status::error("a compiler backend named '" + std::string(backend->name()) +
                               "' is already registered");
    }
  }
  r.backends.push_back(backend);
  return {};
}

const CompilerBackend* find_compiler_backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const CompilerBackend* b : r.backends) {
    if (b->name() == name) return b;
  }
  return nullptr;
}

std::vector<std::string> compiler_backend_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const CompilerBackend* b : r.backends) names.emplace_back(b->name());
  return names;
}

std::string weight_key(std::string_view fqn, std::span<const uint8_t> bytes) {
  return std::string(fqn) + ":sha256:" + sha256_hex(bytes);
}

}  // namespace ember::partition
