// The runtime's prim ops: scalar arithmetic on symbolic sizes, as ExecuTorch's runtime registers
// them (docs/pte-format.md §4.8), so programs with dynamic shapes run.
//
//   EMBER_TRY(ember::register_prim_ops());   // register_portable_kernels() also calls this
//
// Argument convention: the schema's arguments, then the result value (no repeat, unlike out
// variants): `executorch_prim::add.Scalar(a, b, out)`, `aten::sym_size.int(self, dim, out)`.
// Semantics are Python's (floor division and modulo round toward negative infinity, `round` rounds
// half to even). A result is written in the kind (Int, Double, Bool) the program declared for its
// value, so the kinds checked at method load stay true during execute. Division by zero, integer
// overflow and out-of-range conversions return InvalidArgument, never undefined behaviour.
#pragma once

#include <span>

#include "runtime/executor/kernel_registry.h"

namespace ember {

Error register_prim_ops();

// The prim op table (for tools and tests).
std::span<const Kernel> prim_kernels();

}  // namespace ember
