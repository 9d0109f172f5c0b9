// The backends Ember's programs carry: `loopback` always, `cpu` (oneDNN) when the build found
// oneDNN. One list for the ember command, the end-to-end runner and the benchmark runner.
//
//   if (ember::tools::register_runtime_backends() != ember::Error::Ok) { ... }  // before loading
//   ir::Status s = ember::tools::register_compiler_backends();  // before compiling (compiler side)
//   // both are idempotent and thread-safe; later calls return the first call's result
#pragma once

#include "runtime/core/error.h"

namespace ember::tools {

// Registers the runtime halves. Error (with last_error_message) when a name is already taken by
// another backend object.
Error register_runtime_backends();

}  // namespace ember::tools
