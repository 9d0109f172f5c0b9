// `ember inspect`'s view of an XnnpackBackend delegate (ExecuTorch's XNNPACK payload,
// backends/xnnpack/payload.h): each node with its values' shapes, datatypes and quantization and
// its fused clamp, and whether Ember runs it (backends/xnnpack/translate.h: ok, or its refusal).
//
//   std::string text = xnnpack_delegate_text(blob, program.named_data(), "      ");
//   std::string json = xnnpack_delegate_json(blob, program.named_data());
//
// Built only where the payload reader is (CMake target ember_backend_xnnpack_format, with the
// cpu engine): inspect.cc calls it under EMBER_HAVE_XNNPACK_FORMAT.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "runtime/executor/named_data_map.h"

namespace ember::tools {

// Lines, each starting with `indent`: the payload's identifier and node count (or why it cannot
// be read), one line per node, and Ember's verdict. `named` (the program's named data, may be
// null) resolves constants stored under keys; neither it nor `blob` is kept.
std::string xnnpack_delegate_text(std::span<const uint8_t> blob, const NamedDataMap* named,
                                  const std::string& indent);

// The same as one JSON object: {"identifier", "version", "read_error" (null when read),
// "nodes": [{"index", "type", "debug_handle", "inputs": [value...], "outputs": [value...],
// "output_min_max": [min, max] | null}], "ember": {"runs": bool, "reason": string}}, each value
// {"id", "dtype", "shape", "constant", "quant": null | {"kind", ...its parameters}}.
std::string xnnpack_delegate_json(std::span<const uint8_t> blob, const NamedDataMap* named);

}  // namespace ember::tools
