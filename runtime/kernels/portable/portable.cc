#include "runtime/kernels/portable/portable.h"

#include "runtime/kernels/prim/prim_ops.h"

namespace ember {

#define EMBER_OP(name, fn, signature) Error fn(KernelContext&, std::span<EValue*>);
#include "runtime/kernels/portable/ops.inc"
#undef EMBER_OP

namespace {
const Kernel kPortableKernels[] = {
#define EMBER_OP(name, fn, signature) {name, fn, signature},
#include "runtime/kernels/portable/ops.inc"
#undef EMBER_OP
};
}  // namespace

Error register_portable_kernels() {
  EMBER_TRY(register_prim_ops());
  return register_kernels(kPortableKernels);
}

std::span<const Kernel> portable_kernels() { return kPortableKernels; }

}  // namespace ember
