#include "runtime/executor/memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <cstring>

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

namespace {

// Anonymous, zeroed, 2 MiB aligned; advised for huge pages (a hint the kernel may not take).
void* map_huge_block(size_t size) {
  constexpr size_t huge = HeapAllocator::kHugePage;
#if defined(__linux__)
  void* raw =
      ::mmap(nullptr, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + huge - 1) & ~(huge - 1);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  if (const size_t tail = begin + size + huge - (aligned + size); tail > 0) {
    ::munmap(reinterpret_cast<void*>(aligned + size), tail);
  }
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
#else
  void* p = std::aligned_alloc(huge, size);
  if (p != nullptr) std::memset(p, 0, size);
  return p;
#endif
}

void unmap_huge_block(void* p, size_t size) {
#if defined(__linux__)
  ::munmap(p, size);
#else
  (void)size;
  std::free(p);
#endif
}

}  // namespace

FreeableBuffer huge_page_buffer(size_t size) {
  if (size == 0 || size > SIZE_MAX - 2 * HeapAllocator::kHugePage) return FreeableBuffer();
  const size_t rounded =
      (size + HeapAllocator::kHugePage - 1) / HeapAllocator::kHugePage * HeapAllocator::kHugePage;
  void* p = map_huge_block(rounded);
  if (p == nullptr) return FreeableBuffer();
  // The context carries the mapped length (the buffer's size is what was asked for).
  return FreeableBuffer(
      p, size,
      [](void* length, const void* data, size_t) {
        unmap_huge_block(const_cast<void*>(data), reinterpret_cast<uintptr_t>(length));
      },
      reinterpret_cast<void*>(static_cast<uintptr_t>(rounded)));
}

void* HeapAllocator::allocate(size_t size, size_t alignment) {
  if (huge_pages_ && size >= kLargeRequest && alignment <= kHugePage) {
    return allocate_large(size, alignment);
  }
  void* p = MemoryAllocator::allocate(size, alignment);
  if (p != nullptr) return p;
  if (size > SIZE_MAX - alignment) return nullptr;
  const size_t block = std::max<size_t>(size + alignment, 64 * 1024);
  void* mem = std::malloc(block);
  if (mem == nullptr) return nullptr;
  blocks_.push_back(mem);
  heap_bytes_ += block;
  base_ = static_cast<uint8_t*>(mem);
  size_ = block;
  used_ = 0;
  return MemoryAllocator::allocate(size, alignment);
}

void* HeapAllocator::allocate_large(size_t size, size_t alignment) {
  // Blocks start on a huge page, so an offset's alignment is the address's.
  size_t padding = (alignment - large_used_ % alignment) % alignment;
  if (large_blocks_.empty() || padding > large_size_ - large_used_ ||
      size > large_size_ - large_used_ - padding) {
    if (size > SIZE_MAX - kHugePage) return nullptr;
    const size_t block = (std::max(size, next_large_) + kHugePage - 1) / kHugePage * kHugePage;
    void* mem = map_huge_block(block);
    if (mem == nullptr) return nullptr;
    large_blocks_.emplace_back(mem, block);
    large_size_ = block;
    large_used_ = padding = 0;
    next_large_ = std::min(next_large_ * 2, kLargestBlock);
  }
  void* p = static_cast<uint8_t*>(large_blocks_.back().first) + large_used_ + padding;
  large_used_ += padding + size;
  handed_out_ += padding + size;
  return p;
}

void HeapAllocator::reset() {
  for (void* b : blocks_) std::free(b);
  blocks_.clear();
  for (const auto& [p, n] : large_blocks_) unmap_huge_block(p, n);
  large_blocks_.clear();
  large_used_ = large_size_ = 0;
  next_large_ = kHugePage;
  base_ = nullptr;
  size_ = 0;
  MemoryAllocator::reset();
}

DelegateScratch::DelegateScratch() : unreserved_(true) {}

void DelegateScratch::reserve_address_space() {
  unreserved_ = false;
#if defined(__linux__)
  // Address space only (PROT_NONE, no commit charge), on a 2 MiB boundary for huge pages; a
  // system that caps address space (ulimit -v) gets a smaller reservation, or none.
  constexpr size_t huge = HeapAllocator::kHugePage;
  for (size_t want = kReservation; want >= (size_t{256} << 20); want /= 2) {
    void* raw =
        ::mmap(nullptr, want + huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) continue;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (begin + huge - 1) & ~(huge - 1);
    if (aligned > begin) ::munmap(raw, aligned - begin);
    if (const size_t tail = begin + want + huge - (aligned + want); tail > 0) {
      ::munmap(reinterpret_cast<void*>(aligned + want), tail);
    }
    base_ = reinterpret_cast<uint8_t*>(aligned);
    capacity_ = mapped_ = want;
    return;
  }
#endif
}

DelegateScratch::DelegateScratch(void* buffer, size_t size)
    : base_(static_cast<uint8_t*>(buffer)),
      capacity_(buffer != nullptr ? size : 0),
      accessible_(capacity_) {}

DelegateScratch::~DelegateScratch() {
#if defined(__linux__)
  if (mapped_ > 0) ::munmap(base_, mapped_);
#endif
}

uint8_t* DelegateScratch::reserve(size_t bytes) {
  if (unreserved_) reserve_address_space();
  if (bytes > capacity_) return nullptr;
  if (bytes > accessible_) {
#if defined(__linux__)
    // Whole huge pages at a time: a few calls to mprotect per load, and pages the kernel may
    // back with huge ones.
    constexpr size_t huge = HeapAllocator::kHugePage;
    const size_t end = std::min(capacity_, (bytes + huge - 1) / huge * huge);
    if (::mprotect(base_ + accessible_, end - accessible_, PROT_READ | PROT_WRITE) != 0) {
      return nullptr;
    }
    ::madvise(base_ + accessible_, end - accessible_, MADV_HUGEPAGE);
    accessible_ = end;
#else
    return nullptr;
#endif
  }
  reserved_ = std::max(reserved_, bytes);
  return base_;
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
