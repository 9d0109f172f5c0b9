#include "backends/builtin_compiler.h"

#include <string>

#include "backends/loopback/loopback_compiler.h"
#include "runtime/kernels/portable/portable.h"
#if EMBER_HAVE_CPU_BACKEND
#include "backends/cpu/cpu_compiler.h"
#endif

namespace ember::backends {

ir::Status register_builtin_compiler_backends() {
  static const ir::Status status = [] {
    // Constant folding runs the registered kernels (compiler/ops/kernel_eval.h).
    if (register_portable_kernels() != Error::Ok) {
      return ir::Status::error(std::string("cannot register the portable kernels: ") +
                               last_error_message());
    }
    ir::Status s = loopback::register_loopback_compiler_backend();
#if EMBER_HAVE_CPU_BACKEND
    if (s.ok()) s = cpu::register_compiler_backend();
#endif
    return s;
  }();
  return status;
}

}  // namespace ember::backends
