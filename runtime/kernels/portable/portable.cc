#include "runtime/kernels/portable/portable.h"

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

Error register_portable_kernels() { return register_kernels(kPortableKernels); }

std::span<const Kernel> portable_kernels() { return kPortableKernels; }

}  // namespace ember
