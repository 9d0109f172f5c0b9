// The compile side of the `cpu` backend (oneDNN): which nodes it runs exactly, and how a partition
// becomes its processed blob (backends/cpu/graph/graph_format.h) and named data.
//
//   ember::cpu::register_compiler_backend();                   // once, before compiling
//   const partition::CompilerBackend* b = ember::cpu::compiler_backend();
//   ir::StatusOr<partition::PreprocessResult> r = b->preprocess(partition_program, specs);
//
// This half never links oneDNN. Preprocess folds inference batch norm into the convolution before
// it (new weight bytes; the program's weights are never written, C20), fuses element-wise ops and
// residual adds into the producing convolution or matmul, and folds shape-only ops on weights.
// Compile specs: "precision" = "fp32" (default) or "bf16" (convolution and matmul in bf16, fp32
// in and out); "num_threads" = decimal thread count for the runtime half (default: the runtime's
// thread pool size at init); "fp32_winograd" = "on" or "off" (default: 3x3 stride-1 fp32
// convolutions through oneDNN's Winograd kernel, or direct only); "ember_kernels" = "on"
// (default) or "off"; "int8" = "on" (default: convolutions of quantized values in integers
// where the CPU has VNNI) or "off". The backend object is a static with no state; it lives for
// the process.
#pragma once

#include "compiler/partition/backend.h"

namespace ember::cpu {

// The backend object (name "cpu").
const partition::CompilerBackend* compiler_backend();

// Registers compiler_backend() with the compiler's registry. Error when "cpu" is already taken.
ir::Status register_compiler_backend();

}  // namespace ember::cpu
