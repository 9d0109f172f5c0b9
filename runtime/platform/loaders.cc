#include "runtime/platform/loaders.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ember {
namespace {

constexpr size_t kAlignment = alignof(std::max_align_t);

Result<std::pair<int, size_t>> open_file(const char* path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return fail(Error::AccessFailed, "cannot open '%s': %s", path, std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)                          ? "a directory"
                       : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                    : "not a regular file";
    return fail(Error::AccessFailed, "'%s' is %s, not a file Ember can read", path, what);
  }
  return std::make_pair(fd, static_cast<size_t>(st.st_size));
}

void free_heap(void* /*context*/, const void* data, size_t /*size*/) {
  std::free(const_cast<void*>(data));
}

struct MmapRegion {
  void* base;
  size_t length;
  bool locked;
};

void free_mapping(void* context, const void* /*data*/, size_t /*size*/) {
  auto* region = static_cast<MmapRegion*>(context);
  if (region->locked) ::munlock(region->base, region->length);
  ::munmap(region->base, region->length);
  delete region;
}

}  // namespace

// The whole file, mapped once, read-only and private, for MlockMode::NoMlock: held by the loader
// and by every buffer it handed out, unmapped when the last of them lets go. A buffer gives its
// whole pages back when it is freed (MADV_DONTNEED: out of the process's resident set, as the
// munmap of a mapping of its own did; a page another buffer still reads faults back in from the
// file, the same bytes, since nothing ever writes to the mapping).
struct MmapDataLoader::Mapping {
  void* base = nullptr;
  size_t length = 0;
  std::atomic<size_t> holders{1};

  void release() {
    if (holders.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    ::munmap(base, length);
    delete this;
  }

  static void free_view(void* context, const void* data, size_t size) {
    auto* m = static_cast<Mapping*>(context);
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    m->release();
  }
};

Result<FreeableBuffer> BufferDataLoader::load(size_t offset, size_t size, SegmentType) const {
  EMBER_TRY(check_range(offset, size, size_, "buffer load"));
  return FreeableBuffer(static_cast<const uint8_t*>(data_) + offset, size, nullptr, nullptr);
}

Result<size_t> regular_file_size(const char* path) {
  auto opened = open_file(path);
  if (!opened.ok()) return opened.error();
  ::close(opened->first);
  return opened->second;
}

Result<FileDataLoader> FileDataLoader::from(const char* path) {
  auto opened = open_file(path);
  if (!opened.ok()) return opened.error();
  return FileDataLoader(opened->first, opened->second, path);
}

FileDataLoader::FileDataLoader(FileDataLoader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), path_(std::move(other.path_)) {}

FileDataLoader::~FileDataLoader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FreeableBuffer> FileDataLoader::load(size_t offset, size_t size, SegmentType) const {
  EMBER_TRY(check_range(offset, size, size_, path_.c_str()));
  if (size == 0) return FreeableBuffer();
  // aligned_alloc wants a multiple of the alignment.
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* buffer = std::aligned_alloc(kAlignment, rounded);
  if (buffer == nullptr) {
    return fail(Error::MemoryAllocationFailed, "cannot allocate %zu bytes to read '%s'", size,
                path_.c_str());
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, static_cast<uint8_t*>(buffer) + done, size - done,
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::free(buffer);
      return fail(Error::AccessFailed, "reading %zu bytes at offset %zu of '%s' failed: %s", size,
                  offset, path_.c_str(), n < 0 ? std::strerror(errno) : "unexpected end of file");
    }
    done += static_cast<size_t>(n);
  }
  return FreeableBuffer(buffer, size, free_heap, nullptr);
}

Result<MmapDataLoader> MmapDataLoader::from(const char* path, MlockMode mode) {
  auto opened = open_file(path);
  if (!opened.ok()) return opened.error();
  MmapDataLoader loader(opened->first, opened->second, mode, path);
  // One mapping for every load: a mapping a load (an mmap, and a munmap when the buffer goes,
  // one a weight and one a delegate) was a tenth of the load of ExecuTorch's XNNPACK programs.
  if (mode == MlockMode::NoMlock && loader.size_ > 0) {
    void* base = ::mmap(nullptr, loader.size_, PROT_READ, MAP_PRIVATE, loader.fd_, 0);
    if (base == MAP_FAILED) {
      return fail(Error::AccessFailed, "mmap of the %zu bytes of '%s' failed: %s", loader.size_,
                  path, std::strerror(errno));
    }
    loader.mapping_ = new Mapping{base, loader.size_};
  }
  return loader;
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      mode_(other.mode_),
      path_(std::move(other.path_)),
      mapping_(std::exchange(other.mapping_, nullptr)) {}

MmapDataLoader::~MmapDataLoader() {
  if (mapping_ != nullptr) mapping_->release();
  if (fd_ >= 0) ::close(fd_);
}

Result<FreeableBuffer> MmapDataLoader::load(size_t offset, size_t size, SegmentType) const {
  EMBER_TRY(check_range(offset, size, size_, path_.c_str()));
  if (size == 0) return FreeableBuffer();
  if (mapping_ != nullptr) {
    mapping_->holders.fetch_add(1, std::memory_order_relaxed);
    return FreeableBuffer(static_cast<const uint8_t*>(mapping_->base) + offset, size,
                          Mapping::free_view, mapping_);
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t start = offset / page * page;
  const size_t length = offset + size - start;
  void* base = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd_, static_cast<off_t>(start));
  if (base == MAP_FAILED) {
    return fail(Error::AccessFailed, "mmap of %zu bytes at offset %zu of '%s' failed: %s", size,
                offset, path_.c_str(), std::strerror(errno));
  }
  bool locked = false;
  if (mode_ != MlockMode::NoMlock) {
    if (::mlock(base, length) == 0) {
      locked = true;
    } else if (mode_ == MlockMode::UseMlock) {
      const int err = errno;
      ::munmap(base, length);
      return fail(Error::AccessFailed, "mlock of %zu bytes of '%s' failed: %s", length,
                  path_.c_str(), std::strerror(err));
    }
  }
  auto* region = new MmapRegion{base, length, locked};
  return FreeableBuffer(static_cast<const uint8_t*>(base) + (offset - start), size, free_mapping,
                        region);
}

}  // namespace ember
