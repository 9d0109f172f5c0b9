#include "runtime/kernels/cortex_m/cortex_m.h"

namespace ember {

namespace cortex_m {
#define EMBER_OP(name, fn, signature) Error fn(KernelContext&, std::span<EValue*>);
#include "runtime/kernels/cortex_m/ops.inc"
#undef EMBER_OP
}  // namespace cortex_m

namespace {
const Kernel kCortexMKernels[] = {
#define EMBER_OP(name, fn, signature) {name, cortex_m::fn, signature},
#include "runtime/kernels/cortex_m/ops.inc"
#undef EMBER_OP
};
}  // namespace

Error register_cortex_m_kernels() { return register_kernels(kCortexMKernels); }

std::span<const Kernel> cortex_m_kernels() { return kCortexMKernels; }

}  // namespace ember
