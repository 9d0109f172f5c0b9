// libFuzzer target: any bytes as the cpu backend's processed blob -> parse (graph/graph_format.h).
// Nothing may crash, leak or read out of bounds; a blob parse accepts must come back the same
// through serialize and parse (the same bytes again), and its dynamic batches must resize.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::cpu;
  // Cleared first, so that a refusal's message is this call's, not one left by an earlier input.
  ember::clear_error_message();
  ember::Result<CpuGraph> g = parse(std::span<const uint8_t>(data, size));
  if (!g.ok()) {
    // Refused as anything but a bad blob, or without a reason.
    if (g.error() != ember::Error::InvalidProgram || *ember::last_error_message() == '\0') {
      std::abort();
    }
    return 0;
  }
  const std::vector<uint8_t> once = serialize(*g);
  ember::Result<CpuGraph> again = parse(once);
  if (!again.ok() || serialize(*again) != once)
    std::abort();  // serialize lost or changed something
  const std::vector<int64_t> ones(g->num_symbols, 1);
  const CpuGraph resized = with_batch_sizes(*g, ones);
  for (const TensorDesc& t : resized.tensors) {
    if (checked_numel(t.dims) < 0) std::abort();  // a batch of 1 cannot overflow what parse took
  }
  return 0;
}
