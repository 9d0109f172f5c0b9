// The memory-plan picture of `ember inspect MODEL.pte --plan plan.svg`: every planned tensor of a
// method as a box over the instructions it lives through (x) and the bytes it occupies in its
// arena (y), colored by the operator that first references it, with the planned total and the
// lower bound (the peak of live bytes) written and marked on it.
//
//   std::vector<PlannedBuffer> buffers = ...;   // tools/inspect.cc: plan_lifetimes()
//   Error e = write_plan_svg(picture, "plan.svg");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/error.h"

namespace ember::tools {

struct PlannedBuffer {
  int64_t value = 0;   // index in the method's value table
  int32_t arena = 0;   // the mem_id (1-based, as in the file)
  int64_t offset = 0;  // bytes from the arena's start
  int64_t bytes = 0;   // rounded up to 16, as the planner does
  int64_t begin = 0;   // first instruction it is live at
  int64_t end = 0;     // last instruction it is live at (num_instructions: the outputs' "after")
  std::string op;      // the operator that first references it ("input", "state", ...)
};

struct PlanPicture {
  std::string method;
  int64_t instructions = 0;
  std::vector<int64_t> arena_bytes;  // planned size of each arena (mem_id 1, 2, ...)
  std::vector<PlannedBuffer> buffers;
};

// The most bytes live at one instruction (no placement can use less), and the first instruction
// where that many are live.
struct LiveBytesPeak {
  int64_t bytes = 0;
  int64_t at = 0;
};
LiveBytesPeak live_bytes_peak(const std::vector<PlannedBuffer>& buffers);

// Writes the picture as SVG. AccessFailed naming the path when it cannot be written.
Error write_plan_svg(const PlanPicture& picture, const std::string& path);

}  // namespace ember::tools
