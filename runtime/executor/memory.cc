#include "runtime/executor/memory.h"

#include <cinttypes>

namespace ember {

void* MemoryAllocator::allocate(size_t size, size_t alignment) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(base_) + used_;
  const uintptr_t aligned = (start + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
  const size_t padding = aligned - start;
  if (padding > size_ - used_ || size > size_ - used_ - padding) return nullptr;
  used_ += padding + size;
  handed_out_ += padding + size;
  return reinterpret_cast<void*>(aligned);
}

Result<void*> HierarchicalAllocator::address(uint32_t memory_id, uint64_t offset,
                                             size_t nbytes) const {
  EMBER_CHECK(memory_id >= 1 && memory_id <= arenas_.size(), Error::InvalidProgram,
              "memory id %u is not one of the %zu planned arenas (ids start at 1)", memory_id,
              arenas_.size());
  const std::span<uint8_t> arena = arenas_[memory_id - 1];
  uint64_t end = 0;
  EMBER_CHECK(!__builtin_add_overflow(offset, nbytes, &end) && end <= arena.size(),
              Error::InvalidProgram, "%zu bytes at offset %" PRIu64 " leave arena %u of %zu bytes",
              nbytes, offset, memory_id, arena.size());
  return static_cast<void*>(arena.data() + offset);
}

}  // namespace ember
