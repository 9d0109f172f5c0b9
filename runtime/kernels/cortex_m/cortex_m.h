// Ember's cortex_m kernels: the int8 operators (cortex_m::*) that ExecuTorch's Cortex-M (CMSIS-NN)
// flow writes into .pte programs, registered under ExecuTorch's names and bit-exact to the
// integer rules of ../shared/docs/cortex-m-ops.md (docs/kernels-cortex-m.md).
//
//   EMBER_TRY(ember::register_portable_kernels());   // the aten:: and dim_order_ops:: ops
//   EMBER_TRY(ember::register_cortex_m_kernels());   // once, before loading a Cortex-M program
//   ember::Module module("kws.pte");                  // runs cortex_m::quantized_conv2d.out, ...
//
// The op list is runtime/kernels/cortex_m/ops.inc. The kernels allocate nothing and reject a bad
// argument (dtype, rank, size, value) with InvalidArgument and a message naming it.
#pragma once

#include <span>

#include "runtime/executor/kernel_registry.h"

namespace ember {

// Registers every cortex_m kernel (and only those: the aten:: ops a Cortex-M program also calls
// come from register_portable_kernels). Safe to call more than once.
Error register_cortex_m_kernels();

// The cortex_m kernel table (for tools and tests).
std::span<const Kernel> cortex_m_kernels();

}  // namespace ember
