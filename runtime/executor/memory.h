// The memory a method runs in, all of it provided by the caller.
//
//   alignas(16) uint8_t method_pool[4096], arena[48], scratch[1024];
//   MemoryAllocator method_alloc(method_pool, sizeof method_pool), temp(scratch, sizeof scratch);
//   std::span<uint8_t> arenas[] = {{arena, sizeof arena}};
//   HierarchicalAllocator planned(arenas);
//   MemoryManager memory{&method_alloc, &planned, &temp};
//
// The method allocator holds everything a loaded method keeps (value table, tensors, instruction
// tables); planned arenas hold activations at the offsets the compiler chose; the temp allocator
// is scratch for kernels and is reset after every kernel call. Nothing here frees memory: the
// caller releases the backing buffers after the Method is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/platform/data_loader.h"

namespace ember {

// A bump allocator over a caller buffer. Subclasses may grow (Module's heap allocator does).
class MemoryAllocator {
 public:
  MemoryAllocator(void* base, size_t size) : base_(static_cast<uint8_t*>(base)), size_(size) {}
  virtual ~MemoryAllocator() = default;

  // Returns `size` bytes aligned to `alignment` (a power of two), or null when out of memory.
  virtual void* allocate(size_t size, size_t alignment = alignof(std::max_align_t));
  // Releases everything allocated so far.
  virtual void reset() {
    used_ = 0;
    handed_out_ = 0;
    heap_bytes_ = 0;
  }

  size_t used() const { return used_; }
  size_t capacity() const { return size_; }
  // Bytes handed out since construction or the last reset, alignment padding included, over
  // every block a growing subclass took: what a load cost (Method measures each delegate's init
  // with it; `ember inspect --memory` reports it).
  size_t handed_out() const { return handed_out_; }
  // Bytes of the blocks a growing subclass took from the C heap (malloc) since construction or
  // the last reset: what a caller that measures the heap's growth across a load (the cpu
  // backend's summary) tells apart from its own. 0 over a caller's buffer.
  size_t heap_bytes() const { return heap_bytes_; }

  // `count` default-constructed Ts, or null.
  template <typename T>
  T* allocate_array(size_t count) {
    size_t bytes = 0;
    if (__builtin_mul_overflow(count, sizeof(T), &bytes)) return nullptr;
    void* p = allocate(bytes == 0 ? 1 : bytes, alignof(T));
    if (p == nullptr) return nullptr;
    T* out = static_cast<T*>(p);
    for (size_t i = 0; i < count; ++i) new (&out[i]) T();
    return out;
  }

 protected:
  uint8_t* base_;
  size_t size_;
  size_t used_ = 0;
  size_t handed_out_ = 0;
  size_t heap_bytes_ = 0;
};

// `size` bytes of zeroed anonymous memory on whole 2 MiB pages, advised for transparent huge
// pages (HeapAllocator's large blocks), owned by the buffer (unmapped when it is freed); an empty
// buffer when the system has no memory for it.
FreeableBuffer huge_page_buffer(size_t size);

// A method or temp allocator that grows: it takes memory in blocks and frees it all on reset
// (Module's). Requests of 64 KiB or more (a delegate's weights, packed weights, activation
// buffers) come from blocks of whole 2 MiB pages advised for transparent huge pages where Linux
// has them (the "madvise" mode most distributions ship), 2 MiB at first and twice the last up to
// 32 MiB: a model's tens of MB, written once at load, fault in at 512 times fewer page faults
// (MobileNetV2: 10,900 to 1,800 faults from file to first output). Smaller requests share 64 KiB
// blocks of the heap. Pages of the large blocks come zeroed.
class HeapAllocator final : public MemoryAllocator {
 public:
  // `huge_pages` false: every request from the heap's blocks (a temp allocator, reset after each
  // instruction, would map and unmap its large blocks at every call).
  explicit HeapAllocator(bool huge_pages = true)
      : MemoryAllocator(nullptr, 0), huge_pages_(huge_pages) {}
  ~HeapAllocator() override { reset(); }
  HeapAllocator(const HeapAllocator&) = delete;
  HeapAllocator& operator=(const HeapAllocator&) = delete;

  void* allocate(size_t size, size_t alignment = alignof(std::max_align_t)) override;
  void reset() override;

  static constexpr size_t kLargeRequest = size_t{64} << 10;
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kLargestBlock = 16 * kHugePage;

 private:
  void* allocate_large(size_t size, size_t alignment);

  std::vector<void*> blocks_;
  std::vector<std::pair<void*, size_t>> large_blocks_;
  size_t large_used_ = 0, large_size_ = 0;  // of the last large block
  size_t next_large_ = kHugePage;
  bool huge_pages_;
};

// The planned arenas, numbered from memory id 1 as in the program file.
class HierarchicalAllocator {
 public:
  explicit HierarchicalAllocator(std::span<const std::span<uint8_t>> arenas) : arenas_(arenas) {}

  size_t num_arenas() const { return arenas_.size(); }
  std::span<uint8_t> arena(size_t index) const { return arenas_[index]; }

  // The address of `nbytes` at `offset` in arena `memory_id` (1-based). InvalidProgram when the
  // id is 0 or unknown or the range leaves the arena.
  Result<void*> address(uint32_t memory_id, uint64_t offset, size_t nbytes) const;

 private:
  std::span<const std::span<uint8_t>> arenas_;
};

// Memory a method's delegates share for what lives only within one of their calls (the cpu
// backend's intermediates and scratchpad): a method runs one delegate at a time, so each uses
// the region from its start and the method needs the largest delegate's share, not the sum of
// them (an LLM's 25 delegates held 25 sets of activations: 1.3 GB, where one needs 70 MB). The
// region's address never changes as it grows: it reserves address space at construction (no
// memory; up to 64 GiB, less where the system refuses that) at the first request (a method
// without delegates takes none) and makes what delegates ask for
// accessible on demand; a page becomes memory when first written. Over a caller's buffer, it
// holds that buffer's bytes at most.
//
//   DelegateScratch scratch;                 // Module's: address space only
//   MemoryManager memory{&method_alloc, &planned, &temp, &scratch};
//   uint8_t* base = scratch.reserve(bytes);  // a delegate's build; null: it cannot hold them
//
// One method's delegates only: two methods running at once each need their own. Not thread-safe
// (a method loads and runs on one thread at a time).
class DelegateScratch {
 public:
  static constexpr size_t kReservation = size_t{64} << 30;
  DelegateScratch();
  DelegateScratch(void* buffer, size_t size);
  ~DelegateScratch();
  DelegateScratch(const DelegateScratch&) = delete;
  DelegateScratch& operator=(const DelegateScratch&) = delete;

  // The region's start, with `bytes` from it usable; null when it cannot hold them (the caller
  // then takes memory of its own).
  uint8_t* reserve(size_t bytes);
  // The most any caller of reserve asked for: what the method's delegates need of it.
  size_t reserved() const { return reserved_; }
  // The most it can hold (0: nothing; address space was refused).
  size_t capacity() const { return capacity_; }

 private:
  void reserve_address_space();

  bool unreserved_ = false;  // address space is reserved at the first reserve()
  uint8_t* base_ = nullptr;
  size_t capacity_ = 0;
  size_t accessible_ = 0;  // bytes from base_ readable and writable
  size_t reserved_ = 0;
  size_t mapped_ = 0;  // the reservation's length (0 over a caller's buffer)
};

struct MemoryManager {
  MemoryAllocator* method_allocator = nullptr;
  HierarchicalAllocator* planned_memory = nullptr;  // may be null for a method with no arenas
  MemoryAllocator* temp_allocator = nullptr;        // may be null when no kernel needs scratch
  // May be null: each delegate then keeps its own buffers for what a call computes.
  DelegateScratch* delegate_scratch = nullptr;
};

}  // namespace ember
