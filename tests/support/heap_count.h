// Counts the C++ heap allocations (operator new, any thread) made while a HeapCount lives, for the
// tests of runtime rule 3: no heap allocation inside execute. The test executable that links
// heap_count.cc has its global operator new and delete replaced (they keep malloc's semantics).
// An allocation made inside oneDNN (a return address in libdnnl within its caller's first frames:
// dnnl_primitive_execute builds its arguments' map on the heap at every call) is counted apart,
// since Ember cannot avoid it. EMBER_HEAP_TRACE=1 prints the stack of each of the others.
#pragma once

#include <cstdint>

namespace ember::testing {

class HeapCount {
 public:
  HeapCount();
  ~HeapCount();
  HeapCount(const HeapCount&) = delete;
  HeapCount& operator=(const HeapCount&) = delete;
  // Allocations since construction: made by anything but oneDNN, and made inside oneDNN.
  int64_t count() const;
  int64_t onednn() const;

 private:
  int64_t start_, start_onednn_;
};

}  // namespace ember::testing
