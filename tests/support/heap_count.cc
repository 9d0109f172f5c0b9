#include "tests/support/heap_count.h"

#include <execinfo.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

std::atomic<int> g_counting{0};
std::atomic<int64_t> g_allocations{0}, g_onednn_allocations{0};
// The executable segments of libdnnl (none where it is not loaded as a shared library).
uintptr_t g_dnnl_begin = 0, g_dnnl_end = 0;

int find_dnnl(dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libdnnl") == nullptr) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& h = info->dlpi_phdr[i];
    if (h.p_type != PT_LOAD || (h.p_flags & PF_X) == 0) continue;
    const uintptr_t begin = info->dlpi_addr + h.p_vaddr, end = begin + h.p_memsz;
    if (g_dnnl_begin == 0 || begin < g_dnnl_begin) g_dnnl_begin = begin;
    if (end > g_dnnl_end) g_dnnl_end = end;
  }
  return 1;
}

bool called_from_onednn() {
  void* frames[10];
  const int n = backtrace(frames, 10);
  for (int i = 1; i < n; ++i) {
    const auto pc = reinterpret_cast<uintptr_t>(frames[i]);
    if (pc >= g_dnnl_begin && pc < g_dnnl_end) return true;
  }
  return false;
}

// EMBER_HEAP_TRACE=1: the stack of each allocation counted as not oneDNN's, on stderr (raw
// addresses; addr2line -f -C -e BINARY turns them into names).
const bool g_trace = std::getenv("EMBER_HEAP_TRACE") != nullptr;

void trace() {
  void* frames[16];
  backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
  std::fputs("----\n", stderr);
}

void* allocate(std::size_t bytes, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed) > 0) {
    if (called_from_onednn()) {
      g_onednn_allocations.fetch_add(1, std::memory_order_relaxed);
    } else {
      g_allocations.fetch_add(1, std::memory_order_relaxed);
      if (g_trace) trace();
    }
  }
  if (bytes == 0) bytes = 1;
  return align <= alignof(std::max_align_t)
             ? std::malloc(bytes)
             : std::aligned_alloc(align, (bytes + align - 1) / align * align);
}

void* allocate_or_throw(std::size_t bytes, std::size_t align) {
  void* p = allocate(bytes, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace ember::testing {

HeapCount::HeapCount() {
  static const bool ready = [] {
    dl_iterate_phdr(find_dnnl, nullptr);
    void* frames[2];
    backtrace(frames, 2);  // its first call loads the unwinder, which allocates
    return true;
  }();
  (void)ready;
  start_ = g_allocations.load();
  start_onednn_ = g_onednn_allocations.load();
  g_counting.fetch_add(1);
}
HeapCount::~HeapCount() { g_counting.fetch_sub(1); }
int64_t HeapCount::count() const { return g_allocations.load() - start_; }
int64_t HeapCount::onednn() const { return g_onednn_allocations.load() - start_onednn_; }

}  // namespace ember::testing

// The replaceable global allocation functions ([new.delete]), all of them, so that every new and
// delete of the executable pairs with malloc and free.
void* operator new(std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
