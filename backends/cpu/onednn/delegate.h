// A built cpu delegate: the steps one build (build.h) made of a step graph, the caller buffers
// they read and write, and the scratchpad they share. Internal to the backend's runtime half.
//
//   Build b(std::move(graph), threads, DelegateOptions{}, allocator);
//   EMBER_ASSIGN_OR_RETURN(std::unique_ptr<CpuDelegate> d, std::move(b).run(named_data));
//   Error e = d->execute(args);   // never throws, never allocates
//
// execute checks that every argument is the tensor the delegate was built for (dtype, sizes,
// strides), binds the caller's storage to the memories that stand for it, and runs the steps in
// order on the delegate's OpenMP threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_runtime.h"
#include "backends/cpu/onednn/layout.h"
#include "backends/cpu/onednn/step.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/executor/observer.h"
#include "runtime/platform/data_loader.h"

namespace ember::cpu::delegate {

// What a build leaves to run (Build::run fills it).
struct BuiltDelegate {
  size_t num_args = 0;  // delegate inputs, then outputs
  int threads = 1;
  dnnl::engine engine;
  dnnl::stream stream;
  std::vector<std::pair<memory, int>> bound;  // caller buffers: memory -> argument index
  std::vector<memory::desc> arg_md;           // per argument: the layout it must have
  std::vector<uint8_t> arg_is_tensor;         // per argument: whether a tensor is bound to it
  std::vector<std::unique_ptr<Step>> steps;
  memory scratchpad;            // oneDNN's scratchpad and the working memory of Ember's kernels
  std::vector<memory> storage;  // every buffer the steps' memories are views of
  std::vector<FreeableBuffer> mapped;  // named data a step reads in place (the program's file)
  std::vector<std::shared_ptr<void>> shared;  // weights shared with the graph's other builds
  DelegateSummary summary;                    // what the build made; the step counts are added here
};

class CpuDelegate {
 public:
  explicit CpuDelegate(BuiltDelegate built);
  // `observer` (may be null) is told each step's time (ExecutionObserver::on_delegate_step).
  Error execute(std::span<EValue*> args, ExecutionObserver* observer = nullptr);
  const DelegateSummary& summary() const { return built_.summary; }

 private:
  static bool same_layout(const Tensor& t, const memory::desc& md);

  BuiltDelegate built_;
  void* scratch_data_;
  bool verbose_;  // EMBER_CPU_VERBOSE: a line per own-kernel step executed (layer_report.py)
};

}  // namespace ember::cpu::delegate
