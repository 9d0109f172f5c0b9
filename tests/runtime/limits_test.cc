// Resource limits: a method allocator that is too small fails with the size needed, the size
// MethodMeta reports is enough, and Module's cap on planned memory refuses a program before any
// allocation.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/executor/module.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

TEST(Limits, TooSmallMethodAllocatorNamesTheBytesNeeded) {
  EMBER_REQUIRE_FIXTURES();
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  AlignedBytes bytes(read_bytes(fixture_dir() + "/module_linear_no_constant_segment.pte"));
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  Result<MethodMeta> meta = program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  const size_t needed = meta->method_allocator_bytes();
  ASSERT_GT(needed, 0u);

  alignas(16) uint8_t arena[32];
  std::span<uint8_t> arenas[] = {{arena, sizeof(arena)}};
  HierarchicalAllocator planned(arenas);
  std::vector<uint8_t> pool(needed + 64);
  uint8_t* base = MethodMemory::align(pool.data());

  MemoryAllocator too_small(base, needed - 1);
  MemoryManager small{&too_small, &planned, nullptr};
  EXPECT_EQ(program->load_method("forward", &small).error(), Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find("needs " + std::to_string(needed) + " bytes"),
            std::string::npos)
      << last_error_message();
  EXPECT_EQ(too_small.used(), 0u) << "nothing is taken from a pool that is too small";

  MemoryAllocator exact(base, needed);
  MemoryManager enough{&exact, &planned, nullptr};
  Result<Method> method = program->load_method("forward", &enough);
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<float> x{1, 2, 3, 4};
  Tensor t = float_tensor(x, {2, 2});
  ASSERT_EQ(method->set_input(t, 0), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  EXPECT_EQ(method->get_output(0)->to_tensor().data<float>()[3], 14.0f);
}

TEST(Limits, ModuleCapOnPlannedMemoryRefusesBeforeAllocating) {
  EMBER_REQUIRE_FIXTURES();
  ModuleOptions capped;
  capped.max_planned_bytes = 47;  // add.pte plans 48
  Module module(fixture_dir() + "/add.pte", capped);
  EXPECT_EQ(module.load_method("forward"), Error::MemoryAllocationFailed);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("plans 48 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("limit of 47 bytes"), std::string::npos) << message;

  ModuleOptions enough;
  enough.max_planned_bytes = 48;
  Module ok(fixture_dir() + "/add.pte", enough);
  EXPECT_EQ(ok.load_method("forward"), Error::Ok) << last_error_message();
}

// Module's growing allocator: every request aligned as asked and apart from every other, small
// ones from the heap's blocks, those of 64 KiB or more from blocks of whole 2 MiB pages (zeroed);
// the bytes handed out counted; an impossible size refused; everything again after a reset.
TEST(Limits, HeapAllocatorHandsOutAlignedDisjointBlocks) {
  HeapAllocator heap;
  for (int round = 0; round < 2; ++round) {
    struct Piece {
      uint8_t* p;
      size_t size;
    };
    std::vector<Piece> pieces;
    size_t asked = 0;
    const size_t sizes[] = {1, 100, 4096, 65535, 65536, 300000, 3 << 20, 17, 40 << 20, 70000};
    const size_t alignments[] = {1, 8, 64, 4096, 64, 64, 128, 16, 64, 2048};
    for (size_t i = 0; i < std::size(sizes); ++i) {
      auto* p = static_cast<uint8_t*>(heap.allocate(sizes[i], alignments[i]));
      ASSERT_NE(p, nullptr) << sizes[i];
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignments[i], 0u) << sizes[i];
      if (sizes[i] >= HeapAllocator::kLargeRequest) {
        EXPECT_EQ(p[0], 0);  // fresh anonymous pages
        EXPECT_EQ(p[sizes[i] - 1], 0);
      }
      std::memset(p, static_cast<int>(i + 1), sizes[i]);
      pieces.push_back({p, sizes[i]});
      asked += sizes[i];
    }
    // The first large request opened a block on a huge page.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pieces[4].p) % HeapAllocator::kHugePage, 0u);
    for (size_t i = 0; i < pieces.size(); ++i) {
      for (size_t k = 0; k < pieces[i].size; k += 997) {
        ASSERT_EQ(pieces[i].p[k], static_cast<uint8_t>(i + 1)) << "piece " << i << " overwritten";
      }
    }
    EXPECT_GE(heap.handed_out(), asked);
    // The heap's share: the blocks of the small requests (at least one), not the huge pages.
    EXPECT_GE(heap.heap_bytes(), 1 + 100 + 4096 + 65535 + 17);
    EXPECT_LT(heap.heap_bytes(), size_t{1} << 20);
    EXPECT_EQ(heap.allocate(SIZE_MAX - 8, 64), nullptr);
    EXPECT_EQ(heap.allocate(SIZE_MAX - 8, 1), nullptr);
    heap.reset();
    EXPECT_EQ(heap.handed_out(), 0u);
    EXPECT_EQ(heap.heap_bytes(), 0u);
  }
  // Without huge pages (Module's temp allocator) a large request comes from the heap.
  HeapAllocator plain(/*huge_pages=*/false);
  auto* p = static_cast<uint8_t*>(plain.allocate(3 << 20, 64));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(p, 1, 3 << 20);
  EXPECT_GE(plain.handed_out(), size_t{3} << 20);
  EXPECT_GE(plain.heap_bytes(), size_t{3} << 20);
  uint8_t caller[64];
  MemoryAllocator fixed(caller, sizeof caller);
  EXPECT_NE(fixed.allocate(16), nullptr);
  EXPECT_EQ(fixed.heap_bytes(), 0u);
}

// DelegateScratch (Module's): its start never moves as it grows, what reserve returned is
// writable up to the bytes asked for, reserved() keeps the largest request, and a request past
// what it can hold is null (the delegate takes its own memory). Over a caller's buffer it holds
// that buffer's bytes and no more.
TEST(Limits, DelegateScratchGrowsInPlace) {
  DelegateScratch scratch;
  EXPECT_EQ(scratch.reserved(), 0u);
  uint8_t* base = scratch.reserve(100);
  ASSERT_NE(base, nullptr);  // a Linux machine grants address space
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % HeapAllocator::kHugePage, 0u);
  std::memset(base, 1, 100);
  uint8_t* again = scratch.reserve(size_t{5} << 20);  // past the first huge page
  EXPECT_EQ(again, base);
  std::memset(base, 2, size_t{5} << 20);
  EXPECT_EQ(base[(size_t{5} << 20) - 1], 2);
  EXPECT_EQ(scratch.reserve(64), base);  // a smaller request: the same start
  EXPECT_EQ(scratch.reserved(), size_t{5} << 20);
  EXPECT_GE(scratch.capacity(), size_t{256} << 20);
  EXPECT_EQ(scratch.reserve(scratch.capacity() + 1), nullptr);
  EXPECT_EQ(scratch.reserved(), size_t{5} << 20);

  alignas(64) uint8_t caller[256];
  DelegateScratch fixed(caller, sizeof caller);
  EXPECT_EQ(fixed.capacity(), sizeof caller);
  EXPECT_EQ(fixed.reserve(200), caller);
  EXPECT_EQ(fixed.reserve(257), nullptr);
  EXPECT_EQ(fixed.reserved(), 200u);
}

// MmapDataLoader without mlock maps the file once: every load is a view of that one mapping,
// right where the file puts its bytes, and stays readable after the loader is gone. A freed
// buffer hands its pages back (MADV_DONTNEED); a view that shares them reads the same bytes
// again (faulted back in from the file). An empty file loads nothing.
TEST(Limits, MmapLoadsAreViewsOfOneMapping) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t size = 3 * page + 100;
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 251);
  const std::string path = ::testing::TempDir() + "/mmap_views.bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, size, f), size);
  std::fclose(f);
  auto same = [&](const FreeableBuffer& b, size_t offset) {
    return b.size() > 0 && std::memcmp(b.data(), bytes.data() + offset, b.size()) == 0;
  };

  Result<FreeableBuffer> whole = Error::Internal, inner = Error::Internal;
  {
    Result<MmapDataLoader> loader = MmapDataLoader::from(path.c_str());
    ASSERT_TRUE(loader.ok()) << last_error_message();
    whole = loader->load(0, size, SegmentType::Program);
    Result<FreeableBuffer> middle = loader->load(100, 2 * page + 50, SegmentType::Backend);
    inner = loader->load(page, page, SegmentType::Constant);
    ASSERT_TRUE(whole.ok() && middle.ok() && inner.ok());
    EXPECT_TRUE(same(*whole, 0));
    EXPECT_TRUE(same(*middle, 100));
    EXPECT_TRUE(same(*inner, page));
    EXPECT_EQ(static_cast<const uint8_t*>(inner->data()),
              static_cast<const uint8_t*>(whole->data()) + page);
    middle->free();  // gives back the page `inner` views
    EXPECT_TRUE(same(*inner, page));
  }
  EXPECT_TRUE(same(*whole, 0));  // the loader is gone, its buffers stay
  EXPECT_TRUE(same(*inner, page));
  whole->free();
  EXPECT_TRUE(same(*inner, page));
  inner->free();

  const std::string empty_path = ::testing::TempDir() + "/mmap_empty.bin";
  std::fclose(std::fopen(empty_path.c_str(), "wb"));
  Result<MmapDataLoader> empty = MmapDataLoader::from(empty_path.c_str());
  ASSERT_TRUE(empty.ok()) << last_error_message();
  EXPECT_EQ(empty->size(), 0u);
  Result<FreeableBuffer> nothing = empty->load(0, 0, SegmentType::Program);
  ASSERT_TRUE(nothing.ok());
  EXPECT_EQ(nothing->size(), 0u);
  EXPECT_FALSE(empty->load(0, 1, SegmentType::Program).ok());
  std::remove(path.c_str());
  std::remove(empty_path.c_str());
}

}  // namespace
}  // namespace ember::testing
