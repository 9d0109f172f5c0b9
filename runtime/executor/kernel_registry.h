// Kernels are found by operator name, as ExecuTorch's runtime finds them.
//
//   Error add_out(KernelContext& ctx, std::span<EValue*> args);
//   const Kernel kKernels[] = {{"aten::add.out", add_out, "ttstt"}};
//   EMBER_TRY(register_kernels(kKernels));
//
// Registration is explicit: a library exposes a `register_*` function that the application calls
// (no static initializers the linker can drop). A later registration of a name replaces the earlier
// one, so an optimized library registered after the portable one takes over the ops it has.
#pragma once

#include <span>
#include <string_view>

#include "runtime/core/evalue.h"
#include "runtime/executor/memory.h"

namespace ember {

class ThreadPool;

// What a kernel may use besides its arguments.
struct KernelContext {
  MemoryAllocator* temp = nullptr;  // scratch, reset after the call; may be null
  ThreadPool* threads = nullptr;    // never null during execute
};

// Arguments follow the out-variant convention: every schema argument in order, then the out
// tensor(s) again (docs/pte-format.md §4.8). Returns Ok, or an error with a message.
using KernelFn = Error (*)(KernelContext& context, std::span<EValue*> args);

// The argument kinds a signature letter admits, checked once at method load so kernels can read
// their arguments without checking tags:
//   t Tensor   T Tensor or None   s Scalar (Int, Double, Bool)   S Scalar or None
//   i Int      I Int or None      d Double or Int                D Double, Int or None
//   b Bool     B Bool or None     l int list                     L int list or None
//   f double list    g bool list  v tensor list                  o optional-tensor list
//   n String   N String or None   ? anything
struct Kernel {
  const char* name;  // "namespace::op.overload", e.g. "aten::add.out"
  KernelFn fn;
  const char* signature;  // one letter per argument (above); null skips the check
};

// Registers `kernels` (the array must outlive every method that uses them). OutOfResources when
// the table (2048 entries) is full.
Error register_kernels(std::span<const Kernel> kernels);

// The kernel registered under `name`, or null.
const Kernel* find_kernel(std::string_view name);

// Every registered kernel, in registration order (for `ember inspect` and tests).
std::span<const Kernel* const> registered_kernels();

// True when `value` is admitted by signature letter `letter`.
bool signature_admits(char letter, const EValue& value);

}  // namespace ember
