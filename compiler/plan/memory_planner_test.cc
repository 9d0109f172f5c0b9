#include "compiler/plan/memory_planner.h"

#include <gtest/gtest.h>

namespace ember::plan {
namespace {

bool overlaps(const std::vector<PlanBuffer>& b, const MemoryPlan& p, size_t i, size_t j) {
  const bool in_time = b[i].first <= b[j].last && b[j].first <= b[i].last;
  const bool in_space =
      p.offsets[i] < p.offsets[j] + b[j].bytes && p.offsets[j] < p.offsets[i] + b[i].bytes;
  return in_time && in_space;
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // a → b → c → d: only two tensors are alive at a time.
  std::vector<PlanBuffer> b = {{64, 0, 1}, {64, 1, 2}, {64, 2, 3}, {64, 3, 4}};
  MemoryPlan p = plan_memory(b);
  EXPECT_EQ(p.lower_bound, 128u);
  EXPECT_EQ(p.arena_bytes, 128u);
  EXPECT_EQ(p.total_bytes, 256u);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
}

TEST(MemoryPlanner, AlignsOffsetsAndNeverOverlapsLiveTensors) {
  std::vector<PlanBuffer> b = {{10, 0, 5},   {100, 1, 2}, {7, 2, 3}, {33, 3, 6},
                               {1000, 4, 4}, {1, 0, 6},   {64, 5, 6}};
  MemoryPlan p = plan_memory(b);
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % 16, 0u);
    EXPECT_LE(p.offsets[i] + b[i].bytes, p.arena_bytes);
    for (size_t j = i + 1; j < b.size(); ++j) EXPECT_FALSE(overlaps(b, p, i, j)) << i << " " << j;
  }
  EXPECT_GE(p.arena_bytes, p.lower_bound);
}

TEST(MemoryPlanner, LowerBoundIsTheLargestLiveSet) {
  std::vector<PlanBuffer> b = {{32, 0, 0}, {48, 1, 2}, {16, 2, 2}, {16, 3, 3}};
  MemoryPlan p = plan_memory(b);
  EXPECT_EQ(p.lower_bound, 64u);  // 48 + 16 at instruction 2
  EXPECT_EQ(p.arena_bytes, 64u);
}

TEST(MemoryPlanner, Empty) {
  MemoryPlan p = plan_memory({});
  EXPECT_EQ(p.arena_bytes, 0u);
  EXPECT_EQ(p.lower_bound, 0u);
}

}  // namespace
}  // namespace ember::plan
