// Ember's llm kernels: the custom operators (llama::*) that ExecuTorch's LLM export
// (examples/models/llama/export_llama) writes into .pte programs, registered under ExecuTorch's
// names and schemas: the KV-cache update and the scaled dot-product attention over the cache.
//
//   EMBER_TRY(ember::register_portable_kernels());  // the aten:: ops (Module does this)
//   EMBER_TRY(ember::register_llm_kernels());       // once, before loading an LLM program
//   ember::Module module("llama.pte");                // runs llama::custom_sdpa.out, ...
//
// The op list is runtime/kernels/llm/ops.inc and the semantics are in README.md beside it. The
// kernels allocate nothing and reject a bad argument (dtype, rank, size, position) with
// InvalidArgument or NotSupported and a message naming it.
#pragma once

#include <span>

#include "runtime/executor/kernel_registry.h"

namespace ember {

// Registers every llm kernel (and only those). Safe to call more than once.
Error register_llm_kernels();

// The llm kernel table (for tools and tests).
std::span<const Kernel> llm_kernels();

}  // namespace ember
