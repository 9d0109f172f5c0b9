// libFuzzer target: any bytes as the cpu backend's processed blob -> parse (graph/graph_format.h).
// Nothing may crash, leak or read out of bounds; a blob parse accepts must come back the same
// through serialize and parse (the same bytes again), and its dynamic batches must resize.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/graph/graph_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::cpu;
  std::string why;
  std::optional<CpuGraph> g = parse(std::span<const uint8_t>(data, size), &why);
  if (!g) {
    if (why.empty()) std::abort();  // refused without a reason
    return 0;
  }
  const std::vector<uint8_t> once = serialize(*g);
  std::optional<CpuGraph> again = parse(once, &why);
  if (!again || serialize(*again) != once) std::abort();  // serialize lost or changed something
  const std::vector<int64_t> ones(g->num_symbols, 1);
  const CpuGraph resized = with_batch_sizes(*g, ones);
  for (const TensorDesc& t : resized.tensors) {
    if (checked_numel(t.dims) < 0) std::abort();  // a batch of 1 cannot overflow what parse took
  }
  return 0;
}
