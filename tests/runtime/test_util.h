// Helpers shared by the runtime tests: fixture paths, file bytes, and a Method loaded over owned
// memory.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/loaders.h"

namespace ember::testing {

// ../shared/fixtures/executorch beside the checkout, or empty when absent (a user's clone).
inline std::string fixture_dir() {
  const std::string dir = EMBER_SHARED_DIR "/fixtures/executorch";
  std::ifstream probe(dir + "/add.pte");
  return probe.good() ? dir : std::string();
}

#define EMBER_REQUIRE_FIXTURES()                                                      \
  if (::ember::testing::fixture_dir().empty()) {                                      \
    GTEST_SKIP() << "../shared/fixtures/executorch is absent: fixture tests skipped"; \
  }

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A 16-byte-aligned copy of some bytes, as program data must be.
struct AlignedBytes {
  explicit AlignedBytes(const std::vector<uint8_t>& bytes)
      : size(bytes.size()),
        data(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 64) / 64 * 64))) {
    if (!bytes.empty()) std::memcpy(data.get(), bytes.data(), bytes.size());
  }
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  size_t size;
  std::unique_ptr<uint8_t, Free> data;
};

// Owns the memory a method runs in: a method pool, planned arenas sized from the program, scratch.
struct MethodMemory {
  explicit MethodMemory(const MethodMeta& meta, size_t method_pool_bytes = 1 << 16) {
    pool.resize(method_pool_bytes + 64);
    method_allocator = std::make_unique<MemoryAllocator>(align(pool.data()), method_pool_bytes);
    for (size_t i = 0; i < meta.num_memory_planned_buffers(); ++i) {
      Result<int64_t> size = meta.memory_planned_buffer_size(i);
      arena_storage.emplace_back(static_cast<size_t>(size.ok() ? *size : 0) + 64);
    }
    for (auto& a : arena_storage) arenas.emplace_back(align(a.data()), a.size() - 64);
    planned = std::make_unique<HierarchicalAllocator>(arenas);
    temp.resize(4096 + 64);
    temp_allocator = std::make_unique<MemoryAllocator>(align(temp.data()), 4096);
    manager = MemoryManager{method_allocator.get(), planned.get(), temp_allocator.get()};
  }
  static uint8_t* align(uint8_t* p) {
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
  }
  std::vector<uint8_t> pool, temp;
  std::vector<std::vector<uint8_t>> arena_storage;
  std::vector<std::span<uint8_t>> arenas;
  std::unique_ptr<MemoryAllocator> method_allocator, temp_allocator;
  std::unique_ptr<HierarchicalAllocator> planned;
  MemoryManager manager;
};

inline Tensor float_tensor(std::vector<float>& data, std::vector<int32_t> sizes) {
  Result<Tensor> t = Tensor::make(ScalarType::Float, sizes, {}, data.data());
  EXPECT_TRUE(t.ok()) << last_error_message();
  return t.ok() ? *t : Tensor();
}

}  // namespace ember::testing
