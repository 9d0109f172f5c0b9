#include "compiler/plan/memory_planner.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace ember::plan {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers, uint64_t alignment) {
  if (alignment == 0) alignment = 1;
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<uint64_t> sizes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    sizes[i] = align_up(buffers[i].bytes, alignment);
    plan.total_bytes += sizes[i];
  }
  // The lower bound: sweep lifetime events (a buffer is live from first to last, inclusive).
  std::map<int64_t, int64_t> delta;
  for (size_t i = 0; i < buffers.size(); ++i) {
    delta[buffers[i].first] += static_cast<int64_t>(sizes[i]);
    delta[buffers[i].last + 1] -= static_cast<int64_t>(sizes[i]);
  }
  int64_t live = 0;
  for (const auto& [t, d] : delta) {
    live += d;
    plan.lower_bound =
        std::max(plan.lower_bound, static_cast<uint64_t>(std::max<int64_t>(live, 0)));
  }
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    // Intervals of memory taken by placed buffers whose lifetimes overlap this one.
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (size_t j : placed) {
      if (buffers[j].first <= buffers[i].last && buffers[i].first <= buffers[j].last) {
        taken.emplace_back(plan.offsets[j], plan.offsets[j] + sizes[j]);
      }
    }
    std::sort(taken.begin(), taken.end());
    uint64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + sizes[i] <= begin) break;
      offset = std::max(offset, align_up(end, alignment));
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + sizes[i]);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace ember::plan
