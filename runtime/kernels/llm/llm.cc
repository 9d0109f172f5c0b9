#include "runtime/kernels/llm/llm.h"

namespace ember {

namespace llm {
#define EMBER_OP(name, fn, signature) Error fn(KernelContext&, std::span<EValue*>);
#include "runtime/kernels/llm/ops.inc"
#undef EMBER_OP
}  // namespace llm

namespace {
const Kernel kLlmKernels[] = {
#define EMBER_OP(name, fn, signature) {name, llm::fn, signature},
#include "runtime/kernels/llm/ops.inc"
#undef EMBER_OP
};
}  // namespace

Error register_llm_kernels() { return register_kernels(kLlmKernels); }

std::span<const Kernel> llm_kernels() { return kLlmKernels; }

}  // namespace ember
