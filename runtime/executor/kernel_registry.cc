#include "runtime/executor/kernel_registry.h"

#include <cstdint>
#include <cstring>
#include <mutex>

namespace ember {
namespace {
constexpr size_t kMaxKernels = 2048;
// An open-addressing index over the table, at most half full: a lookup hashes the name once and
// compares one or two entries, where a scan compared every name before it (method load looks up
// each operator of a program).
constexpr size_t kSlots = 2 * kMaxKernels;
const Kernel* g_kernels[kMaxKernels];
uint64_t g_hashes[kMaxKernels];
uint32_t g_lengths[kMaxKernels];  // of the names: compared before the bytes, no strlen
uint16_t g_slots[kSlots];         // index + 1 into g_kernels; 0 is empty
size_t g_num_kernels = 0;
std::mutex g_mutex;

uint64_t hash_of(std::string_view name) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

// The slot holding `name` (hash `h`), or the empty slot where it would go.
size_t slot_of(std::string_view name, uint64_t h) {
  size_t s = h & (kSlots - 1);
  while (g_slots[s] != 0) {
    const size_t i = g_slots[s] - 1u;
    if (g_hashes[i] == h && g_lengths[i] == name.size() &&
        std::memcmp(name.data(), g_kernels[i]->name, name.size()) == 0) {
      return s;
    }
    s = (s + 1) & (kSlots - 1);
  }
  return s;
}
}  // namespace

Error register_kernels(std::span<const Kernel> kernels) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Kernel& k : kernels) {
    const uint64_t h = hash_of(k.name);
    const size_t s = slot_of(k.name, h);
    if (g_slots[s] != 0) {
      g_kernels[g_slots[s] - 1u] = &k;  // a later registration replaces the earlier one
      continue;
    }
    EMBER_CHECK(g_num_kernels < kMaxKernels, Error::OutOfResources,
                "kernel table full (%zu entries) registering '%s'", kMaxKernels, k.name);
    g_kernels[g_num_kernels] = &k;
    g_hashes[g_num_kernels] = h;
    g_lengths[g_num_kernels] = static_cast<uint32_t>(std::strlen(k.name));
    g_slots[s] = static_cast<uint16_t>(++g_num_kernels);
  }
  return Error::Ok;
}

const Kernel* find_kernel(std::string_view name) {
  const uint64_t h = hash_of(name);
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t s = slot_of(name, h);
  return g_slots[s] == 0 ? nullptr : g_kernels[g_slots[s] - 1u];
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
