// The compile halves of every backend this build carries (the same list as builtin_runtime.h),
// and the portable kernels constant folding runs, registered in one call.
//
//   ir::Status s = ember::backends::register_builtin_compiler_backends();  // before compiling
//   // idempotent and thread-safe: later calls return the first call's result
#pragma once

#include "compiler/ir/status.h"

namespace ember::backends {

ir::Status register_builtin_compiler_backends();

}  // namespace ember::backends
