// The runtime half of `loopback`: its blob is a nested .pte program, loaded at init and run with
// the portable kernels at every call.
//
//   EMBER_TRY(ember::loopback::register_loopback_backend());   // before loading methods
//   Result<Method> m = program->load_method("forward", &memory, &ptd);  // delegates init here
//   // compile half: backends/loopback/loopback_compiler.h
//
// Ownership: everything a delegate keeps (the nested Program and Method, its arenas and tables)
// comes from the method allocator of BackendInitContext and lives until destroy(). The nested
// Program reads its flatbuffer in place, so the delegate keeps pointers into its processed blob
// and leaves the blob to the runtime, which keeps it alive until destroy() (C25); a blob that is
// not aligned for loading is copied into the allocator and freed instead. Weights come from the
// init context's named data (the caller's .ptd, then the program's own named data). execute()
// allocates nothing: inputs are bound by pointer, outputs copied into the delegate's out tensors.
#pragma once

#include "runtime/core/error.h"
#include "runtime/executor/backend.h"

namespace ember::loopback {

// The runtime backend object (lives for the whole process).
const Backend& loopback_backend();

// Registers it under "loopback"; a second call is a no-op. Explicit: no static initializer.
Error register_loopback_backend();

}  // namespace ember::loopback
