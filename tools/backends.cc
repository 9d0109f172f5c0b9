#include "tools/backends.h"

#include "backends/loopback/loopback_runtime.h"
#if EMBER_HAVE_CPU_BACKEND
#include "backends/cpu/cpu_runtime.h"
#endif

namespace ember::tools {

Error register_runtime_backends() {
  static const Error result = [] {
    if (Error e = loopback::register_loopback_backend(); e != Error::Ok) return e;
#if EMBER_HAVE_CPU_BACKEND
    if (Error e = cpu::register_runtime_backend(); e != Error::Ok) return e;
#endif
    return Error::Ok;
  }();
  return result;
}

}  // namespace ember::tools
