// The runtime halves of every backend this build carries, registered in one call: `loopback`
// always, `cpu` (oneDNN) when the build found it, and with it `XnnpackBackend` (ExecuTorch's
// XNNPACK payload run by the same engine, backends/xnnpack/). The one list the ember command, the
// Python runtime, the benchmarks and the tests use; a new backend adds its line to
// builtin_runtime.cc.
//
//   if (ember::backends::register_builtin_runtime_backends() != ember::Error::Ok) { ... }
//   // before loading a method that delegates; idempotent and thread-safe: later calls return
//   // the first call's result
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/executor/backend.h"

namespace ember::backends {

// Error (with last_error_message) when a name is already taken by another backend object.
Error register_builtin_runtime_backends();

// The names of the built-in backends that Ember's compiler also targets (each has a compile half),
// in the order they are registered; XnnpackBackend, a runtime front door only, is not among them.
const std::vector<std::string>& builtin_backend_names();

// What a delegate of a built-in backend says it holds, in bytes (`ember inspect --memory`):
// `known` is false for a backend that reports nothing beyond what the runtime measures
// (Method::DelegateInfo). The cpu backend's DelegateSummary (backends/cpu/cpu_runtime.h) explains
// each field.
struct DelegateMemory {
  bool known = false;
  bool from_method_allocator = false;
  size_t weights = 0, activations = 0, scratchpad = 0, heap = 0;
  // Of activations and scratchpad, what the method's DelegateScratch holds (shared by its
  // delegates; not the method allocator's).
  size_t shared_scratch = 0;
};
DelegateMemory delegate_memory(std::string_view backend, const DelegateHandle* handle);

}  // namespace ember::backends
