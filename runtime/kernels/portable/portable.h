// Ember's portable kernels: ATen's semantics for the core op set, in plain C++.
//
//   EMBER_TRY(ember::register_portable_kernels());   // once, before loading methods
//
// The op list is runtime/kernels/portable/ops.inc.
#pragma once

#include <span>

#include "runtime/executor/kernel_registry.h"

namespace ember {

// Registers every portable kernel, and the runtime's prim ops (runtime/kernels/prim/prim_ops.h)
// that programs with symbolic sizes call. Safe to call more than once.
Error register_portable_kernels();

// The portable kernel table (for tools and tests).
std::span<const Kernel> portable_kernels();

}  // namespace ember
