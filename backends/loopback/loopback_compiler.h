// The compile half of `loopback`, Ember's reference backend: it takes every node the portable
// kernels run and compiles each partition, with Ember's own passes, into a nested .pte program.
//
//   EMBER_IR_RETURN_IF_ERROR(ember::loopback::register_loopback_compiler_backend());
//   options.backends = {"loopback"};                     // compiler/lower/pipeline.h
//   // at run time: ember::loopback::register_loopback_backend() (loopback_runtime.h)
//
// It is the template for new backends (docs/writing-a-backend.md). Its blob is a complete .pte
// whose weights are External tensors keyed by partition::weight_key; the bytes go to named data,
// stored once per program (C19). Nothing it does writes a weight (C20).
#pragma once

#include "compiler/ir/status.h"
#include "compiler/partition/backend.h"

namespace ember::loopback {

inline constexpr const char* kBackendName = "loopback";

// The compiler backend object (never null; lives for the whole process).
const partition::CompilerBackend& loopback_compiler_backend();

// Registers it under "loopback"; a second call is a no-op. Explicit: no static initializer.
ir::Status register_loopback_compiler_backend();

}  // namespace ember::loopback
