// Where program and data bytes come from: a DataLoader hands out FreeableBuffers.
//
//   Result<MmapDataLoader> loader = MmapDataLoader::from("model.pte");
//   Result<FreeableBuffer> head = loader->load(0, 64);
//   // head->data() stays valid until head is destroyed or head->free() is called.
//
// Every loader checks offset + size against the source's size: a file that lies about its own
// length gets an error, never a read past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/core/result.h"

namespace ember {

// A read-only byte range plus the way to release it. Move-only; releases on destruction.
class FreeableBuffer {
 public:
  using FreeFn = void (*)(void* context, const void* data, size_t size);

  FreeableBuffer() = default;
  // `free_fn` may be null when nothing needs releasing (a view of caller memory).
  FreeableBuffer(const void* data, size_t size, FreeFn free_fn, void* context)
      : data_(data), size_(size), free_fn_(free_fn), context_(context) {}
  FreeableBuffer(FreeableBuffer&& other) noexcept { *this = std::move(other); }
  FreeableBuffer& operator=(FreeableBuffer&& other) noexcept {
    if (this != &other) {
      free();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      free_fn_ = std::exchange(other.free_fn_, nullptr);
      context_ = std::exchange(other.context_, nullptr);
    }
    return *this;
  }
  FreeableBuffer(const FreeableBuffer&) = delete;
  FreeableBuffer& operator=(const FreeableBuffer&) = delete;
  ~FreeableBuffer() { free(); }

  const void* data() const { return data_; }
  const uint8_t* bytes() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }
  void free() {
    if (free_fn_ != nullptr) free_fn_(context_, data_, size_);
    free_fn_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }

 private:
  const void* data_ = nullptr;
  size_t size_ = 0;
  FreeFn free_fn_ = nullptr;
  void* context_ = nullptr;
};

// What a load is for; loaders may use it to choose placement. Purely advisory.
enum class SegmentType : uint8_t { Program, Constant, Backend, Mutable, External };

class DataLoader {
 public:
  virtual ~DataLoader() = default;
  // Loads `size` bytes at `offset`. The data starts at an address aligned to at least
  // alignof(std::max_align_t) whenever `offset` is. Errors: InvalidArgument for a range past the
  // end; AccessFailed for an I/O error; MemoryAllocationFailed.
  virtual Result<FreeableBuffer> load(size_t offset, size_t size, SegmentType type) const = 0;
  // Total size of the source in bytes.
  virtual size_t size() const = 0;
};

// Checks that [offset, offset + size) lies inside [0, total), with overflow checking.
inline Error check_range(size_t offset, size_t size, size_t total, const char* what) {
  size_t end = 0;
  if (__builtin_add_overflow(offset, size, &end) || end > total) {
    return fail(Error::InvalidArgument,
                "%s: range [%zu, %zu + %zu) lies outside the %zu bytes available", what, offset,
                offset, size, total);
  }
  return Error::Ok;
}

}  // namespace ember
