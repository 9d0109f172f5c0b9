// One step of a cpu delegate's build: prepared once, when the delegate is built (a oneDNN
// primitive created, weights reordered or packed, buffers chosen), then run at every call over the
// buffers bound for that call, with no allocation and no validation.
//
//   steps.push_back(std::make_unique<PrimitiveStep>(dnnl::reorder(pd), args, scratch_bytes(pd)));
//   for (auto& s : steps) s->finish(scratchpad);  // once, when the whole build is done
//   Error e = steps[i]->run(ctx);                  // at every call
//
// Three kinds: a oneDNN primitive (PrimitiveStep); a convolution by Winograd guarded by its direct
// form for inputs Winograd cannot take exactly (GuardedPrimitiveStep); one of Ember's own kernels
// (KernelStep, own_steps.h). Each reports its name for the profiler (`ember run --profile`), the
// scratchpad bytes it needs while it runs (the delegate's one scratchpad is the largest), and the
// memories it holds (so the build keeps the storage of views that a step reads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/onednn/own_steps.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/core/error.h"

namespace ember::cpu::delegate {

// What every step runs with at a call.
struct RunContext {
  dnnl_stream_t stream = nullptr;
  void* scratch = nullptr;  // the scratchpad the delegate's steps share (they run in turn)
  int threads = 1;
  bool verbose = false;  // EMBER_CPU_VERBOSE: own kernels print a line per run
};

// A primitive's arguments: (DNNL_ARG_*, memory) pairs, kept alive by the step.
using StepArgs = std::vector<std::pair<int, dnnl::memory>>;

class Step {
 public:
  virtual ~Step() = default;
  // Runs the step; Internal where oneDNN's execution fails. Never allocates.
  [[nodiscard]] virtual Error run(const RunContext& ctx) = 0;
  // Once, after the last step was built: `scratchpad` is the buffer all steps share.
  virtual void finish(const dnnl::memory& scratchpad) = 0;
  // The data handles of the memories the step reads or writes.
  virtual void handles(std::vector<void*>* out) const = 0;
  // Which of Ember's kernels this is (summarize()), or nullopt for a oneDNN primitive.
  virtual std::optional<OwnKind> own_kind() const { return std::nullopt; }

  // What a profile calls the step: oneDNN's primitive kind ("convolution", "matmul int8"), or
  // Ember's kernel with its kind ("ember:depthwise convolution").
  const std::string& name() const { return name_; }
  // Bytes of the shared scratchpad the step needs while it runs.
  size_t scratch_bytes() const { return scratch_bytes_; }

 protected:
  Step(std::string name, size_t scratch_bytes)
      : name_(std::move(name)), scratch_bytes_(scratch_bytes) {}

 private:
  std::string name_;
  size_t scratch_bytes_;
};

// A oneDNN primitive over `args`; `scratch_bytes` > 0 gives it the shared scratchpad.
class PrimitiveStep : public Step {
 public:
  PrimitiveStep(dnnl::primitive prim, StepArgs args, size_t scratch_bytes);
  Error run(const RunContext& ctx) override;
  void finish(const dnnl::memory& scratchpad) override;
  void handles(std::vector<void*>* out) const override;

 protected:
  // Runs `prim` over `c_args` (made by finish from `args`).
  static Error execute(const RunContext& ctx, const dnnl::primitive& prim,
                       const std::vector<dnnl_exec_arg_t>& c_args);
  static void bind(StepArgs& args, std::vector<dnnl_exec_arg_t>& c_args,
                   const dnnl::memory& scratchpad, bool uses_scratchpad);

  dnnl::primitive prim_;
  StepArgs args_;
  std::vector<dnnl_exec_arg_t> c_args_;
};

// A 3x3 convolution by oneDNN's Winograd (`prim`), which runs only when every float of `guard`
// (its source, `guard_floats` of them) is at most `bound` in magnitude; otherwise `alt`, the
// direct convolution over the same source and destination with weights of its own (`alt_args`).
// layout.h (kWinogradMaxInput) says why the bound makes Winograd exact.
class GuardedPrimitiveStep : public PrimitiveStep {
 public:
  GuardedPrimitiveStep(dnnl::primitive prim, StepArgs args, dnnl::primitive alt, StepArgs alt_args,
                       size_t scratch_bytes, dnnl::memory guard, int64_t guard_floats, float bound);
  Error run(const RunContext& ctx) override;
  void finish(const dnnl::memory& scratchpad) override;
  void handles(std::vector<void*>* out) const override;

 private:
  dnnl::primitive alt_;
  StepArgs alt_args_;
  std::vector<dnnl_exec_arg_t> alt_c_args_;
  dnnl::memory guard_;
  int64_t guard_floats_;
  float bound_;
};

// One of Ember's own kernels (own_steps.h), holding `keep`: the memories it reads through its
// closure, whose storage the build must keep.
class KernelStep : public Step {
 public:
  KernelStep(OwnStep step, std::vector<dnnl::memory> keep);
  Error run(const RunContext& ctx) override;
  void finish(const dnnl::memory&) override {}
  void handles(std::vector<void*>* out) const override;
  std::optional<OwnKind> own_kind() const override { return kind_; }

 private:
  OwnKind kind_;
  std::string what_;     // "KIND,IMPL,PROP,MDS,ATTRS" as oneDNN's verbose lines print them
  std::string problem_;  // the problem, as oneDNN's verbose lines print it
  std::function<void(void*)> kernel_;
  std::vector<dnnl::memory> keep_;
};

}  // namespace ember::cpu::delegate
