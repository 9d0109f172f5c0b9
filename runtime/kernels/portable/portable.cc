#include "runtime/kernels/portable/portable.h"

#include "runtime/kernels/prim/prim_ops.h"

// The op list: ops.inc, or a selective build's subset of it (EMBER_SELECT_OPS_FROM, written by
// tools/select_ops.cc). Only the kernels listed here are referenced, so a static link leaves out
// the others.
#ifndef EMBER_PORTABLE_OPS_INC
#define EMBER_PORTABLE_OPS_INC "runtime/kernels/portable/ops.inc"
#endif

namespace ember {

#define EMBER_OP(name, fn, signature) Error fn(KernelContext&, std::span<EValue*>);
#include EMBER_PORTABLE_OPS_INC
#undef EMBER_OP

namespace {
const Kernel kPortableKernels[] = {
#define EMBER_OP(name, fn, signature) {name, fn, signature},
#include EMBER_PORTABLE_OPS_INC
#undef EMBER_OP
};
}  // namespace

Error register_portable_kernels() {
  EMBER_TRY(register_prim_ops());
  return register_kernels(kPortableKernels);
}

std::span<const Kernel> portable_kernels() { return kPortableKernels; }

}  // namespace ember
