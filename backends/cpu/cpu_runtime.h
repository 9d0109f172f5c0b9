// The runtime side of the `cpu` backend: runs the processed blob of backends/cpu/cpu_compiler.h
// on oneDNN (AVX-512 / bf16 where the CPU has them).
//
//   EMBER_TRY(ember::cpu::register_runtime_backend());    // once, before loading methods
//   const ember::Backend* b = ember::cpu::runtime_backend();
//   Result<DelegateHandle*> h = b->init(ctx, &blob, specs); // then execute(), destroy()
//
// init validates the whole blob (graph/graph_format.h), reads the weights from the context's named
// data (every key must be there with its exact size), creates the oneDNN primitives with the
// layouts oneDNN prefers (blocked activations stay blocked between ops; weights are reordered once,
// here), and allocates every buffer, the scratchpad included: those it keeps (weights in their
// final layouts, activations, scratchpad) from the context's method allocator, the rest from
// the heap; summarize() reports both (`ember inspect MODEL.pte --memory` prints it). A method
// allocator that runs out fails init with MemoryAllocationFailed, naming the bytes. execute binds
// the caller's input and output storage, runs the primitives and allocates nothing itself. The
// handle owns all of it; destroy frees it. The processed blob is copied at init and released
// (processed->free()). Threads: the "num_threads" compile spec, else the size of
// ThreadPool::global() when init runs; oneDNN's OpenMP runtime uses that count for this delegate's
// primitives at every call. Where they beat oneDNN 2.6 on fp32, Ember's own AVX-512 kernels run
// instead (compile spec "ember_kernels" = "on" (default) | "off"): MobileNet's inverted residual
// blocks whose expanded tensor outgrows a core's L2 cache, fused into one pass
// (kernels/inverted_residual.h), the other 3x3 depthwise convolutions (kernels/depthwise.h), 1x1
// convolutions of channels-last tensors and one-row matmuls by a constant matrix (packed_gemm.h).
// EMBER_CPU_VERBOSE=1 prints a line per execution of one, in the shape of oneDNN's ONEDNN_VERBOSE
// lines. A bf16 program (compile spec "precision" = "bf16") on a CPU where bf16_supported() is
// false is refused at init with NotSupported and a message that names the CPU's instruction set. A
// handle must not be executed from two threads at once.
#pragma once

#include "runtime/executor/backend.h"

namespace ember::cpu {

struct CpuGraph;  // graph/graph_format.h (not installed: init_graph is for Ember's own front doors)

// The backend object (name "cpu").
const Backend* runtime_backend();

// Registers runtime_backend() under "cpu". InvalidArgument when the name is taken.
Error register_runtime_backend();

// A handle of runtime_backend() (execute and destroy it there) for a graph already in hand: what
// init does after it parses its blob, for another front door to the same engine (ExecuTorch's
// XNNPACK payload, backends/xnnpack/). `weights` resolves the graph's weight keys, at init and
// whenever a dynamic batch needs a new build, so it must outlive the handle; compile specs as
// init's.
Result<DelegateHandle*> init_graph(CpuGraph&& graph, BackendInitContext& context,
                                   std::span<const CompileSpec> specs, const NamedDataMap* weights);

// Whether this CPU runs bf16 programs: oneDNN's instruction set in force (ONEDNN_MAX_CPU_ISA caps
// it) reaches avx512_core, and Ember's (cpu_isa(), EMBER_CPU_ISA caps it) reaches Avx512.
bool bf16_supported();

// Whether quantized convolutions run in integers here (the "int8" spec, on by default), for any
// int8 weights: oneDNN's instruction set in force reaches avx512_core_vnni, and Ember's reaches
// Avx512. int8_7bit_supported(): for weights within [-64, 63] (int8_config(reduce_range=True)),
// from AVX2 up. Elsewhere they run as the float convolution of the dequantized weight.
bool int8_supported();
bool int8_7bit_supported();

// What a delegate runs, chosen at init (tests and tools): oneDNN primitives, and Ember's own
// kernels (the "ember_kernels" compile spec, on by default, fp32 on AVX-512 CPUs).
struct DelegateSummary {
  int onednn_steps = 0;  // primitives and reorders
  int inverted_residual_blocks =
      0;                        // fused 1x1 -> 3x3 depthwise -> 1x1 (kernels/inverted_residual.h)
  int depthwise_steps = 0;      // 3x3 depthwise convolutions (kernels/depthwise.h)
  int pointwise_steps = 0;      // 1x1 convolutions of channels-last tensors (packed_gemm.h)
  int gathered_conv_steps = 0;  // int8 convolutions of gathered rows (kernels/quant_conv_gemm.h)
  int matvec_steps = 0;         // one-row matmuls by a constant matrix (packed_gemm.h)
  int small_matmul_steps = 0;   // small products of two activations (runtime/kernels/gemm)
  int exact_steps = 0;  // relu/hardtanh clamps, max pooling, softmax NaN rows (kernels/nan_exact.h)
  int pad_steps = 0;    // constant paddings (kernels/pad.h)
  int int8_convolutions = 0;  // quantized convolutions computed in integers (onednn/quant_conv.cc)
  int int8_chained = 0;       // tensors handed from step to step as uint8 (int8 + 128)
  int int8_elementwise = 0;   // quantizes to uint8 and adds of uint8 values (onednn/quant_conv.cc)
  int int8_lookups = 0;  // unary ops of uint8 values requantized, as tables (onednn/quant_chain.cc)
  int int8_matmuls = 0;  // quantized linear layers computed in integers
  int grouped_matmuls = 0;  // linear layers by int8/int4 weights in groups (kernels/quant_gemm.h)
  int dot_matmuls = 0;      // of which in integers, of dynamically quantized inputs (8da4w)
  // Memory, in bytes. The buffers the build keeps, by use, taken from the method allocator of
  // BackendInitContext (from the heap where the context has none): weights reordered into the
  // layouts oneDNN's primitives read (and the int8 steps' rescaled biases), activations (the
  // intermediates, a buffer reused once its tensor is dead), and the one scratchpad of oneDNN's
  // primitives and Ember's kernels.
  size_t weight_bytes = 0;
  size_t activation_bytes = 0;
  size_t scratchpad_bytes = 0;
  bool from_method_allocator = false;
  // Of the activations and scratchpad, the bytes taken from the method's DelegateScratch (shared
  // with its other delegates; not from the method allocator), alignment included.
  size_t shared_scratch_bytes = 0;
  // What the build left on the heap besides: weights read as stored (biases, norms' parameters),
  // oneDNN's primitives and JIT code. (Ember's kernels' weights count as weights, their working
  // memory as scratchpad.)
  // Measured as the growth of the heap in use across the build, less what the method allocator
  // took from it (glibc's mallinfo2; 0 elsewhere, and under a sanitizer, whose allocator glibc
  // does not see), so it includes anything another thread allocated meanwhile.
  size_t heap_bytes = 0;
};
// The summary of a handle this backend's init returned (null: all zero).
DelegateSummary summarize(const DelegateHandle* handle);

}  // namespace ember::cpu
