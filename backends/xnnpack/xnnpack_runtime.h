// ExecuTorch's XNNPACK delegate, run by Ember's cpu engine: the backend registered under
// ExecuTorch's name "XnnpackBackend", so .pte files that ExecuTorch's XnnpackPartitioner wrote load
// unchanged.
//
//   EMBER_TRY(ember::xnn::register_runtime_backend());  // once, before loading methods
//   // then Program::load_method runs XnnpackBackend delegates through it
//
// init reads and verifies the payload (payload.h), translates it into the cpu engine's graph
// (translate.h; a node Ember cannot run exactly fails init with NotSupported naming the node's
// index and type) and builds it as the `cpu` backend builds its own blobs (cpu_runtime.h:
// threads, compile specs, memory from the method allocator). Constants come from the payload's
// constant data, or by key from the .ptd the caller passed, else the program's named data. The
// processed blob is kept until destroy: the constants are read from it in place.
//
// execute takes the tensors ExecuTorch's XNNPACK delegate takes (README.md, "The delegate's
// boundary"): each argument's storage in memory order (contiguous, or 4-D channels-last whose
// sizes in dim order are the payload's NHWC dims), float32, or int8 (Char) for qint8 values, or
// Half / BFloat16 for fp16 / bf16 values, converted to and from the engine's float32 in buffers
// allocated at init. Anything else is refused with InvalidArgument naming the argument and value.
#pragma once

#include "runtime/executor/backend.h"

namespace ember::xnn {

inline constexpr const char* kBackendName = "XnnpackBackend";

const Backend* runtime_backend();

// Registers runtime_backend() under "XnnpackBackend". InvalidArgument when the name is taken.
Error register_runtime_backend();

}  // namespace ember::xnn
