// The DataLoaders: caller memory, a file read into memory, and a memory-mapped file.
//
//   BufferDataLoader from_memory(bytes, n);                   // zero-copy view; caller keeps bytes
//   Result<FileDataLoader> f = FileDataLoader::from(path);   // read with pread into aligned heap
//   Result<MmapDataLoader> m = MmapDataLoader::from(path, MlockMode::UseMlockIgnoreErrors);
//
// Loaders own their file descriptor; the buffers they hand out may outlive neither the loader
// (for mmap, they may: the mapping they view stays until the last of them and the loader are
// gone, but keep the loader alive for clarity).
#pragma once

#include <string>

#include "runtime/platform/data_loader.h"

namespace ember {

class BufferDataLoader final : public DataLoader {
 public:
  // The caller owns `data` and keeps it alive and unchanged while any buffer from here is in use.
  BufferDataLoader(const void* data, size_t size) : data_(data), size_(size) {}
  Result<FreeableBuffer> load(size_t offset, size_t size, SegmentType type) const override;
  size_t size() const override { return size_; }

 private:
  const void* data_;
  size_t size_;
};

// The size of `path` when it is a regular file, for host tools that then read it whole (the
// compiler's importers, `ember run`'s .npy inputs). What is not a regular file (a directory, a
// FIFO, a device such as /dev/zero) is refused with AccessFailed naming the path and the reason,
// without blocking or reading, so no reader waits on a FIFO or reads without end.
Result<size_t> regular_file_size(const char* path);

class FileDataLoader final : public DataLoader {
 public:
  // Opens `path`. Errors: AccessFailed naming the path and the OS reason.
  static Result<FileDataLoader> from(const char* path);
  FileDataLoader(FileDataLoader&& other) noexcept;
  FileDataLoader& operator=(FileDataLoader&&) = delete;
  ~FileDataLoader() override;
  Result<FreeableBuffer> load(size_t offset, size_t size, SegmentType type) const override;
  size_t size() const override { return size_; }

 private:
  FileDataLoader(int fd, size_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  int fd_;
  size_t size_;
  std::string path_;
};

enum class MlockMode : uint8_t {
  NoMlock,               // plain mmap
  UseMlock,              // mlock every mapping; a failure to lock is an error
  UseMlockIgnoreErrors,  // mlock every mapping; a failure to lock is ignored
};

// Without mlock, the whole file is mapped once (read-only, private) when the loader is made, and
// a load is a view of that mapping: no system call; a freed buffer hands its whole pages back to
// the system. With mlock, each load maps (and locks) its own range, unmapped when freed.
class MmapDataLoader final : public DataLoader {
 public:
  // Opens `path` (and maps it, without mlock). Errors: AccessFailed naming the path and the OS
  // reason.
  static Result<MmapDataLoader> from(const char* path, MlockMode mode = MlockMode::NoMlock);
  MmapDataLoader(MmapDataLoader&& other) noexcept;
  MmapDataLoader& operator=(MmapDataLoader&&) = delete;
  ~MmapDataLoader() override;
  Result<FreeableBuffer> load(size_t offset, size_t size, SegmentType type) const override;
  size_t size() const override { return size_; }

 private:
  struct Mapping;
  MmapDataLoader(int fd, size_t size, MlockMode mode, std::string path)
      : fd_(fd), size_(size), mode_(mode), path_(std::move(path)) {}
  int fd_;
  size_t size_;
  MlockMode mode_;
  std::string path_;
  Mapping* mapping_ = nullptr;  // the whole file (MlockMode::NoMlock), shared with its buffers
};

}  // namespace ember
