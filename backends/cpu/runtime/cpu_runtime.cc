#include "backends/cpu/cpu_runtime.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <string_view>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/onednn/build.h"
#include "backends/cpu/onednn/delegate.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/platform/cpu_isa.h"
#include "runtime/platform/thread_pool.h"

namespace ember::cpu {
namespace {

using delegate::Build;
using delegate::CpuDelegate;
using delegate::DelegateOptions;
using delegate::SharedWeights;

int threads_from(std::span<const CompileSpec> specs) {
  for (const CompileSpec& s : specs) {
    if (s.key != "num_threads") continue;
    int n = 0;
    for (uint8_t c : s.value) {
      if (c < '0' || c > '9' || n > 1000) return -1;
      n = n * 10 + (c - '0');
    }
    return n >= 1 ? n : -1;
  }
  return ThreadPool::global().num_threads();
}

// An on/off compile spec ("fp32_winograd", off by default; "ember_kernels", on by default).
bool switch_from(std::span<const CompileSpec> specs, std::string_view key, bool by_default) {
  for (const CompileSpec& s : specs) {
    if (s.key == key) {
      return std::string_view(reinterpret_cast<const char*>(s.value.data()), s.value.size()) ==
             "on";
    }
  }
  return by_default;
}

// oneDNN's instruction set in force (the CPU's, capped by ONEDNN_MAX_CPU_ISA), by oneDNN's name.
const char* onednn_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx2_vnni:
      return "avx2_vnni";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "an instruction set below avx512_core";
  }
}

// oneDNN announces every JIT kernel it generates to VTune's JIT profiling API by default, whose
// loader, with no profiler named in the environment, looks for VTune's collector (libJitPI.so)
// along the whole library search path when the first kernel is made: some 40 failed opens and
// stats within the first load. Off, once per process, unless a profiler asks for it (VTune sets
// INTEL_JIT_PROFILER64; ONEDNN_JIT_PROFILE or DNNL_JIT_PROFILE choose oneDNN's profilers).
void disable_unrequested_jit_profiling() {
  static const bool done = [] {
    for (const char* v : {"INTEL_JIT_PROFILER64", "INTEL_JIT_PROFILER32", "VS_PROFILER",
                          "ONEDNN_JIT_PROFILE", "DNNL_JIT_PROFILE"}) {
      if (std::getenv(v) != nullptr) return false;
    }
    return dnnl_set_jit_profiling_flags(DNNL_JIT_PROFILE_NONE) == dnnl_success;
  }();
  (void)done;
}

// Builds a delegate for `g` with the thread count it will run with, what a call computes in
// `scratch` where there is one, its other buffers from `allocator` (null: the heap). The build
// returns its errors; the standard library's std::bad_alloc is the one exception that can reach
// here.
Result<std::unique_ptr<CpuDelegate>> make_delegate(
    CpuGraph g, int threads, const DelegateOptions& options, const NamedDataMap* named,
    MemoryAllocator* allocator, SharedWeights* shared, DelegateScratch* scratch) {
  disable_unrequested_jit_profiling();
  const int previous = omp_get_max_threads();
  // Primitives are created for the thread count they will run with.
  omp_set_num_threads(threads);
  Result<std::unique_ptr<CpuDelegate>> d = Error::Internal;
  try {
    d = Build(std::move(g), threads, options, allocator, shared, scratch).run(named);
  } catch (const std::bad_alloc&) {
    d = fail(Error::MemoryAllocationFailed, "out of memory");
  }
  omp_set_num_threads(previous);
  if (!d.ok()) return add_error_context(d.error(), "cpu delegate");
  return d;
}

// A delegate's graph and its builds. A static graph has one. With a dynamic batch, the first is
// built at init for the upper bounds (which checks the whole graph), and each call runs a build
// for its actual batch sizes: made on the first call with those sizes (oneDNN primitives are
// shape-specific) and kept, the kMaxBuilds most recently used at most besides the first.
// The first build's buffers come from the method allocator; those made during a call come from
// the heap (a call may not grow the caller's memory, which a fixed pool could not give back).
// Every build's activations and scratchpad come from the method's DelegateScratch where it has
// one: they share it with each other and with the method's other delegates.
// The builds share what they make of the weights (SharedWeights): a build for a new size reorders
// or packs no weight the first build did, so it costs what depends on the size alone (oneDNN's
// primitives, Ember's kernels' plans, the activations).
class CpuHandle {
 public:
  static constexpr size_t kMaxBuilds = 4;

  CpuHandle(CpuGraph g, int threads, const DelegateOptions& options, const NamedDataMap* named,
            DelegateScratch* scratch)
      : graph_(std::move(g)),
        bounds_(bounds_of(graph_)),
        sizes_(bounds_.size(), 0),
        threads_(threads),
        options_(options),
        named_(named),
        scratch_(scratch) {}

  Error init(MemoryAllocator* allocator) {
    Result<std::unique_ptr<CpuDelegate>> d =
        make_delegate(graph_, threads_, options_, named_, allocator,
                      graph_.num_symbols > 0 ? &shared_ : nullptr, scratch_);
    if (!d.ok()) return d.error();
    first_ = std::move(*d);
    return Error::Ok;
  }

  Error execute(std::span<EValue*> args, ExecutionObserver* observer) {
    if (graph_.num_symbols == 0) return first_->execute(args, observer);
    if (Error e = batch_sizes(args); e != Error::Ok) return e;
    const std::vector<int64_t>& sizes = sizes_;
    // An empty batch: nothing to compute (oneDNN takes no empty tensors); every output is empty.
    if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) {
      if (Error e = resize_outputs(args, sizes); e != Error::Ok) return e;
      for (size_t j = 0; j < graph_.outputs.size(); ++j) {
        if (graph_.tensors[graph_.outputs[j]].batch_symbol < 0) {
          return fail(Error::NotSupported,
                      "cpu delegate: an empty batch, and output %zu does not follow the batch "
                      "(its value would need computing over no rows); run batch 1 or more",
                      j);
        }
      }
      return Error::Ok;
    }
    if (sizes == bounds_) {
      if (Error e = resize_outputs(args, sizes); e != Error::Ok) return e;
      return first_->execute(args, observer);
    }
    auto it = std::find_if(builds_.begin(), builds_.end(),
                           [&](const auto& b) { return b.first == sizes; });
    if (it == builds_.end()) {
      Result<std::unique_ptr<CpuDelegate>> d = make_delegate(
          with_batch_sizes(graph_, sizes), threads_, options_, named_, nullptr, &shared_, scratch_);
      if (!d.ok()) return d.error();
      if (builds_.size() == kMaxBuilds) builds_.pop_back();
      builds_.insert(builds_.begin(), {sizes, std::move(*d)});
      it = builds_.begin();
    } else if (it != builds_.begin()) {
      std::rotate(builds_.begin(), it, it + 1);  // most recently used first
      it = builds_.begin();
    }
    if (Error e = resize_outputs(args, sizes); e != Error::Ok) return e;
    return it->second->execute(args, observer);
  }

  DelegateSummary summary() const { return first_->summary(); }

 private:
  // Each symbol's upper bound: dim 0 of the tensors that carry it.
  static std::vector<int64_t> bounds_of(const CpuGraph& g) {
    std::vector<int64_t> b(g.num_symbols, 0);
    for (const TensorDesc& t : g.tensors) {
      if (t.batch_symbol >= 0) b[static_cast<size_t>(t.batch_symbol)] = t.dims[0];
    }
    return b;
  }

  // The outputs were planned at the upper bounds: they take this call's sizes.
  Error resize_outputs(std::span<EValue*> args, const std::vector<int64_t>& sizes) const {
    if (args.size() != graph_.num_inputs + graph_.outputs.size()) {
      return fail(Error::InvalidArgument, "cpu delegate: %zu arguments, expected %zu", args.size(),
                  static_cast<size_t>(graph_.num_inputs + graph_.outputs.size()));
    }
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      const TensorDesc& t = graph_.tensors[graph_.outputs[j]];
      EValue* out = args[graph_.num_inputs + j];
      if (t.batch_symbol < 0 || out == nullptr || !out->is_tensor()) continue;
      int32_t want[kMaxRank];
      if (t.dims.empty() || t.dims.size() > static_cast<size_t>(kMaxRank)) {
        return fail(Error::InvalidProgram, "cpu delegate: output %zu has rank %zu", j,
                    t.dims.size());
      }
      for (size_t d = 1; d < t.dims.size(); ++d) want[d] = static_cast<int32_t>(t.dims[d]);
      want[0] = static_cast<int32_t>(sizes[static_cast<size_t>(t.batch_symbol)]);
      const std::span<const int32_t> dims(want, t.dims.size());
      if (Error e = out->to_tensor().resize(dims); e != Error::Ok) return e;
    }
    return Error::Ok;
  }

  // Each symbol's value into sizes_: dim 0 of the inputs that carry it, which must agree and lie
  // in [0, upper bound].
  Error batch_sizes(std::span<EValue*> args) {
    std::vector<int64_t>& v = sizes_;
    std::fill(v.begin(), v.end(), -1);
    for (const TensorDesc& t : graph_.tensors) {
      if (t.kind != TensorKind::Input || t.batch_symbol < 0) continue;
      const EValue* a = t.index < args.size() ? args[t.index] : nullptr;
      if (a == nullptr || !a->is_tensor() ||
          a->to_tensor().dim() != static_cast<int>(t.dims.size())) {
        return fail(Error::InvalidArgument, "cpu delegate: argument %u is not a tensor of rank %zu",
                    t.index, t.dims.size());
      }
      const int64_t n = a->to_tensor().size(0);
      int64_t& value = v[static_cast<size_t>(t.batch_symbol)];
      if (n < 0 || n > t.dims[0] || (value >= 0 && value != n)) {
        return fail(Error::InvalidArgument,
                    "cpu delegate: argument %u has batch %lld; the program takes 0 to %lld%s",
                    t.index, static_cast<long long>(n), static_cast<long long>(t.dims[0]),
                    value >= 0 && value != n ? ", the same for every input sharing it" : "");
      }
      value = n;
    }
    return Error::Ok;
  }

  CpuGraph graph_;
  std::vector<int64_t> bounds_;  // the symbols' upper bounds: the first build's batch sizes
  std::vector<int64_t> sizes_;   // this call's (batch_sizes): kept, so that a call allocates none
  int threads_;
  DelegateOptions options_;
  const NamedDataMap* named_;  // outlives the method (docs/runtime.md), so every build reads it
  DelegateScratch* scratch_;   // the method's, or null; outlives the method
  SharedWeights shared_;       // the weights as the builds' steps read them (a static graph: none)
  std::unique_ptr<CpuDelegate> first_;  // at the upper bounds, built at init
  // Builds for other batch sizes, most recently used first.
  std::vector<std::pair<std::vector<int64_t>, std::unique_ptr<CpuDelegate>>> builds_;
};

class CpuBackend final : public Backend {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec> specs) const override {
    if (processed == nullptr || processed->data() == nullptr) {
      return fail(Error::InvalidArgument, "cpu delegate: no processed blob");
    }
    Result<CpuGraph> g = parse(std::span<const uint8_t>(processed->bytes(), processed->size()));
    // parse's message is what is wrong; the user reads "cpu delegate: invalid blob: <that>".
    if (!g.ok()) return add_error_context(g.error(), "cpu delegate: invalid blob");
    processed->free();  // everything needed is copied
    return init_graph(std::move(*g), context, specs, context.named_data);
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                std::span<EValue*> args) const override {
    if (handle == nullptr) return fail(Error::DelegateInvalidHandle, "cpu delegate: no handle");
    try {
      return reinterpret_cast<CpuHandle*>(handle)->execute(args, context.observer);
    } catch (const std::bad_alloc&) {
      return fail(Error::MemoryAllocationFailed, "cpu delegate: out of memory");
    }
  }

  void destroy(DelegateHandle* handle) const override {
    delete reinterpret_cast<CpuHandle*>(handle);
  }
};

}  // namespace

Result<DelegateHandle*> init_graph(CpuGraph&& g, BackendInitContext& context,
                                   std::span<const CompileSpec> specs,
                                   const NamedDataMap* weights) {
  if (g.precision == Precision::Bf16 && !bf16_supported()) {
    return fail(Error::NotSupported,
                "cpu delegate: this program computes convolutions and matmuls in bf16 (compiled "
                "with --precision bf16), which oneDNN runs only on CPUs with AVX-512 (avx512_core "
                "or later); this CPU offers %s to oneDNN and %s to Ember. Compile the model with "
                "--precision fp32 (the default) to run it here",
                onednn_isa_name(), cpu_isa_name(cpu_isa()));
  }
  const int threads = threads_from(specs);
  if (threads < 1) return fail(Error::InvalidArgument, "cpu delegate: bad num_threads spec");
  std::unique_ptr<CpuHandle> h;
  try {
    h = std::make_unique<CpuHandle>(std::move(g), threads,
                                    DelegateOptions{switch_from(specs, "fp32_winograd", false),
                                                    switch_from(specs, "ember_kernels", true),
                                                    switch_from(specs, "int8", true)},
                                    weights, context.scratch);
  } catch (const std::bad_alloc&) {
    return fail(Error::MemoryAllocationFailed, "cpu delegate: out of memory");
  }
  if (Error e = h->init(context.allocator); e != Error::Ok) return e;
  // DelegateHandle is opaque: the runtime only hands the pointer back.
  return reinterpret_cast<DelegateHandle*>(h.release());
}

// Whether bf16 convolutions and matmuls can run: oneDNN implements them from avx512_core up
// (emulated there, native from avx512_core_bf16), and EMBER_CPU_ISA, when it caps Ember below
// AVX-512, stands for a CPU without them too.
bool bf16_supported() {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (have & need) == need && cpu_isa() >= CpuIsa::Avx512;
}

// Integer convolutions are exact on any weights only with VNNI's dot products (vpdpbusd), which
// accumulate u8 x s8 products in 32 bits. Before VNNI, oneDNN adds pairs of them in 16 bits
// (vpmaddubsw), which saturate unless the weights keep to [-64, 63]: 255 * 64 * 2 < 2^15.
// Measured with oneDNN 2.6 on a 64-channel 3x3 convolution of sources near 255: weights of +-127
// made every output wrong on its avx2 and avx512_core kernels, [-64, 63] none. EMBER_CPU_ISA caps
// Ember's side as for bf16.
bool int8_supported() {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto vnni = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_vnni);
  return (have & vnni) == vnni && cpu_isa() >= CpuIsa::Avx512;
}

bool int8_7bit_supported() {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx2 = static_cast<unsigned>(dnnl::cpu_isa::avx2);
  return (have & avx2) == avx2 && cpu_isa() >= CpuIsa::Avx2;
}

DelegateSummary summarize(const DelegateHandle* handle) {
  if (handle == nullptr) return {};
  return reinterpret_cast<const CpuHandle*>(handle)->summary();
}

const Backend* runtime_backend() {
  static const CpuBackend backend;
  return &backend;
}

Error register_runtime_backend() { return register_backend("cpu", runtime_backend()); }

}  // namespace ember::cpu