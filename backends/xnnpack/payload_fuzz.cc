// libFuzzer target: any bytes as an XNNPACK delegate payload -> read_payload (payload.h) ->
// translate (translate.h). Nothing may crash, leak or read out of bounds; a refusal carries a
// message; and a graph translate returns must pass the cpu engine's own verifier (serialized and
// parsed back, as the cpu backend's blobs are), since the engine is handed it without one.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/xnnpack/payload.h"
#include "backends/xnnpack/translate.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  // Cleared first, so that a refusal's message is this call's, not one left by an earlier input.
  clear_error_message();
  Result<xnn::Payload> p = xnn::read_payload(std::span<const uint8_t>(data, size));
  if (!p.ok()) {
    // Refused as anything but a bad program, or without a reason.
    if (p.error() != Error::InvalidProgram || *last_error_message() == '\0') std::abort();
    return 0;
  }
  clear_error_message();
  Result<xnn::Translation> t = xnn::translate(*p, /*named=*/nullptr);
  if (!t.ok()) {
    if (*last_error_message() == '\0') std::abort();
    return 0;
  }
  const std::vector<uint8_t> blob = cpu::serialize(t->graph);
  Result<cpu::CpuGraph> again = cpu::parse(blob);
  if (!again.ok()) {
    std::fprintf(stderr, "translate made a graph the cpu verifier refuses: %s\n",
                 last_error_message());
    std::abort();
  }
  return 0;
}
