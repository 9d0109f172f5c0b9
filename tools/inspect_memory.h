// `ember inspect MODEL.pte --memory`: what each method takes once loaded.
//
//   Module module("model.pte", options);              // options.data_path: its .ptd, if any
//   Result<std::string> report = inspect_memory(module, /*json=*/false);
#pragma once

#include <string>

#include "runtime/executor/module.h"

namespace ember::tools {

// Loads every method of `module` (registering the built-in backends first), so its delegates
// init and read their weights, and reports per method: the method allocator's bytes (the method's
// own, which MethodMeta gives before loading, and what each delegate's init took, as the runtime
// measured it), the planned arenas, and per delegate what its backend says it holds
// (backends/builtin_runtime.h: the cpu backend's weights, activations, scratchpad, and the heap
// its init grew). The first error of a load is returned.
Result<std::string> inspect_memory(Module& module, bool json);

}  // namespace ember::tools
