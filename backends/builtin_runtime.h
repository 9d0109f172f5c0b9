// The runtime halves of every backend this build carries, registered in one call: `loopback`
// always, `cpu` (oneDNN) when the build found it. The one list the ember command, the Python
// runtime, the benchmarks and the tests use; a new backend adds its line to builtin_runtime.cc.
//
//   if (ember::backends::register_builtin_runtime_backends() != ember::Error::Ok) { ... }
//   // before loading a method that delegates; idempotent and thread-safe: later calls return
//   // the first call's result
#pragma once

#include <string>
#include <vector>

#include "runtime/core/error.h"

namespace ember::backends {

// Error (with last_error_message) when a name is already taken by another backend object.
Error register_builtin_runtime_backends();

// The names the built-in backends register under, in the order they are registered.
const std::vector<std::string>& builtin_backend_names();

}  // namespace ember::backends
