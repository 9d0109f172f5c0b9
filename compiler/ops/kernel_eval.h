// Runs one portable kernel at compile time on constant inputs (constant folding).
//
//   auto data = [&](ir::Value* v) -> const Bytes* { return weight_bytes(v); };
//   ir::StatusOr<std::vector<Bytes>> outs = eval_kernel("aten::mul.Scalar_out", args, types, data);
//   // outs->at(0) holds the result, dense row-major
//
// Arguments are converted exactly as the emitter writes them (docs/pte-format.md §4.8), so a folded
// value equals what the runtime would have computed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "runtime/core/scalar_type.h"

namespace ember::ops {

using Bytes = std::vector<uint8_t>;

ScalarType to_scalar_type(ir::DType dtype);
// The runtime's code of a memory format name ("contiguous_format" → 0, "preserve_format" → 1).
int64_t memory_format_code(const std::string& name);

// Kernels come from the runtime's kernel registry of this process (runtime/executor/
// kernel_registry.h): the compiler links no kernel library, so whoever embeds it registers one
// (the `ember` tool registers the portable kernels); an unregistered kernel is an error, which
// constant folding reports as a note and leaves the node to run at run time.
//
// Calls kernel `name` with `args` then the outputs (of `out_types`, static, contiguous) and the
// repeated out. `data` gives the bytes of each tensor Value argument (null: not constant, an
// error). Returns the outputs' bytes.
ir::StatusOr<std::vector<Bytes>> eval_kernel(const std::string& name,
                                             const std::vector<ir::NamedArg>& args,
                                             const std::vector<ir::TensorType>& out_types,
                                             const std::function<const Bytes*(ir::Value*)>& data);

}  // namespace ember::ops
