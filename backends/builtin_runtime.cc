#include "backends/builtin_runtime.h"

#include "backends/loopback/loopback_runtime.h"
#if EMBER_HAVE_CPU_BACKEND
#include "backends/cpu/cpu_runtime.h"
#endif
#if EMBER_HAVE_XNNPACK_BACKEND
#include "backends/xnnpack/xnnpack_runtime.h"
#endif

namespace ember::backends {

const std::vector<std::string>& builtin_backend_names() {
  static const std::vector<std::string> names = {
    "loopback",
#if EMBER_HAVE_CPU_BACKEND
    "cpu",
#endif
  };
  return names;
}

Error register_builtin_runtime_backends() {
  static const Error result = [] {
    if (Error e = loopback::register_loopback_backend(); e != Error::Ok) return e;
#if EMBER_HAVE_CPU_BACKEND
    if (Error e = cpu::register_runtime_backend(); e != Error::Ok) return e;
#endif
#if EMBER_HAVE_XNNPACK_BACKEND
    if (Error e = xnn::register_runtime_backend(); e != Error::Ok) return e;
#endif
    return Error::Ok;
  }();
  return result;
}

DelegateMemory delegate_memory(std::string_view backend, const DelegateHandle* handle) {
  DelegateMemory m;
#if EMBER_HAVE_CPU_BACKEND
  if (backend == "cpu" && handle != nullptr) {
    const cpu::DelegateSummary s = cpu::summarize(handle);
    m = {true,
         s.from_method_allocator,
         s.weight_bytes,
         s.activation_bytes,
         s.scratchpad_bytes,
         s.heap_bytes,
         s.shared_scratch_bytes};
  }
#else
  (void)backend;
  (void)handle;
#endif
  return m;
}

}  // namespace ember::backends
