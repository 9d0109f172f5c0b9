// Memory planning: given each tensor's byte size and lifetime, place tensors in one arena so that
// tensors alive at the same time never overlap, reusing memory otherwise.
//
//   std::vector<PlanBuffer> b = {{64, 0, 1}, {64, 1, 2}, {64, 2, 3}};   // size, first, last use
//   MemoryPlan p = plan_memory(b);   // p.offsets = {0, 64, 0}; p.arena_bytes = 128
//   p.lower_bound;                   // 128: the most bytes alive at one time
//
// Placement is greedy by size: largest tensors first, each at the lowest 16-aligned offset free
// over its whole lifetime. Lifetimes are inclusive instruction indices; a kernel's outputs never
// share memory with its inputs because both are alive at that instruction.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::plan {

struct PlanBuffer {
  uint64_t bytes = 0;
  int64_t first = 0;  // the instruction that writes it first
  int64_t last = 0;   // the last instruction that reads it (>= first)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // one per buffer, multiples of `alignment`
  uint64_t arena_bytes = 0;       // the planned arena
  uint64_t total_bytes = 0;       // every buffer side by side (no reuse)
  uint64_t lower_bound = 0;       // the largest sum of simultaneously live (aligned) sizes
};

MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers, uint64_t alignment = 16);

}  // namespace ember::plan
