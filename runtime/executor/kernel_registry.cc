#include "runtime/executor/kernel_registry.h"

#include <cstring>
#include <mutex>

namespace ember {
namespace {
constexpr size_t kMaxKernels = 2048;
const Kernel* g_kernels[kMaxKernels];
size_t g_num_kernels = 0;
std::mutex g_mutex;
}  // namespace

Error register_kernels(std::span<const Kernel> kernels) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Kernel& k : kernels) {
    bool replaced = false;
    for (size_t i = 0; i < g_num_kernels; ++i) {
      if (std::strcmp(g_kernels[i]->name, k.name) == 0) {
        g_kernels[i] = &k;
        replaced = true;
        break;
      }
    }
    if (replaced) continue;
    EMBER_CHECK(g_num_kernels < kMaxKernels, Error::OutOfResources,
                "kernel table full (%zu entries) registering '%s'", kMaxKernels, k.name);
    g_kernels[g_num_kernels++] = &k;
  }
  return Error::Ok;
}

const Kernel* find_kernel(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_num_kernels; ++i) {
    if (name == g_kernels[i]->name) return g_kernels[i];
  }
  return nullptr;
}

std::span<const Kernel* const> registered_kernels() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return {g_kernels, g_num_kernels};
}

bool signature_admits(char letter, const EValue& v) {
  switch (letter) {
    case 't':
      return v.is_tensor();
    case 'T':
      return v.is_tensor() || v.is_none();
    case 's':
      return v.is_scalar();
    case 'S':
      return v.is_scalar() || v.is_none();
    case 'i':
      return v.is_int();
    case 'I':
      return v.is_int() || v.is_none();
    case 'd':
      return v.is_double() || v.is_int();
    case 'D':
      return v.is_double() || v.is_int() || v.is_none();
    case 'b':
      return v.is_bool();
    case 'B':
      return v.is_bool() || v.is_none();
    case 'l':
      return v.tag() == Tag::ListInt;
    case 'L':
      return v.tag() == Tag::ListInt || v.is_none();
    case 'f':
      return v.tag() == Tag::ListDouble;
    case 'g':
      return v.tag() == Tag::ListBool;
    case 'v':
      return v.tag() == Tag::ListTensor;
    case 'o':
      return v.tag() == Tag::ListOptionalTensor;
    case 'n':
      return v.is_string();
    case 'N':
      return v.is_string() || v.is_none();
    case '?':
      return true;
    default:
      return false;
  }
}

}  // namespace ember
