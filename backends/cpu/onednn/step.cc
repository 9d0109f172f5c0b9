#include "backends/cpu/onednn/step.h"

#include <chrono>
#include <cstdio>

#include "backends/cpu/kernels/nan_exact.h"
#include "oneapi/dnnl/dnnl_debug.h"

namespace ember::cpu::delegate {
namespace {

// oneDNN's name of the primitive's kind; a convolution or matmul in integers says so (its source
// is int8 or uint8).
std::string primitive_name(const dnnl::primitive& prim) {
  const auto kind = static_cast<dnnl_primitive_kind_t>(prim.get_kind());
  std::string name = dnnl_prim_kind2str(kind);
  const_dnnl_primitive_desc_t pd = nullptr;
  if ((kind == dnnl_convolution || kind == dnnl_matmul) &&
      dnnl_primitive_get_primitive_desc(prim.get(), &pd) == dnnl_success) {
    const dnnl_memory_desc_t* src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    if (src != nullptr && (src->data_type == dnnl_u8 || src->data_type == dnnl_s8)) {
      name += " int8";
    }
  }
  return name;
}

// Own steps describe themselves as oneDNN's verbose lines do ("kind,ember:impl,..."); their name
// is "ember:impl kind".
std::string kernel_name(const std::string& what) {
  const size_t kind_end = what.find(',');
  const size_t impl_end = what.find(',', kind_end == std::string::npos ? 0 : kind_end + 1);
  if (kind_end == std::string::npos || impl_end == std::string::npos) return "ember";
  return what.substr(kind_end + 1, impl_end - kind_end - 1) + " " + what.substr(0, kind_end);
}

void add_handles(const StepArgs& args, std::vector<void*>* out) {
  for (const auto& [arg, m] : args) out->push_back(m.get_data_handle());
}

}  // namespace

PrimitiveStep::PrimitiveStep(dnnl::primitive prim, StepArgs args, size_t scratch_bytes)
    : Step(primitive_name(prim), scratch_bytes), prim_(std::move(prim)), args_(std::move(args)) {}

void PrimitiveStep::bind(StepArgs& args, std::vector<dnnl_exec_arg_t>& c_args,
                         const dnnl::memory& scratchpad, bool uses_scratchpad) {
  if (uses_scratchpad) args.emplace_back(DNNL_ARG_SCRATCHPAD, scratchpad);
  c_args.clear();
  for (auto& [arg, m] : args) c_args.push_back({arg, m.get()});
}

void PrimitiveStep::finish(const dnnl::memory& scratchpad) {
  bind(args_, c_args_, scratchpad, scratch_bytes() > 0);
}

void PrimitiveStep::handles(std::vector<void*>* out) const { add_handles(args_, out); }

Error PrimitiveStep::execute(const RunContext& ctx, const dnnl::primitive& prim,
                             const std::vector<dnnl_exec_arg_t>& c_args) {
  const dnnl_status_t st = dnnl_primitive_execute(prim.get(), ctx.stream,
                                                  static_cast<int>(c_args.size()), c_args.data());
  if (st != dnnl_success) {
    return fail(Error::Internal, "cpu delegate: oneDNN execution failed (status %d)",
                static_cast<int>(st));
  }
  return Error::Ok;
}

Error PrimitiveStep::run(const RunContext& ctx) { return execute(ctx, prim_, c_args_); }

GuardedPrimitiveStep::GuardedPrimitiveStep(dnnl::primitive prim, StepArgs args, dnnl::primitive alt,
                                           StepArgs alt_args, size_t scratch_bytes,
                                           dnnl::memory guard, int64_t guard_floats, float bound)
    : PrimitiveStep(std::move(prim), std::move(args), scratch_bytes),
      alt_(std::move(alt)),
      alt_args_(std::move(alt_args)),
      guard_(std::move(guard)),
      guard_floats_(guard_floats),
      bound_(bound) {}

void GuardedPrimitiveStep::finish(const dnnl::memory& scratchpad) {
  PrimitiveStep::finish(scratchpad);
  bind(alt_args_, alt_c_args_, scratchpad, scratch_bytes() > 0);
}

void GuardedPrimitiveStep::handles(std::vector<void*>* out) const {
  PrimitiveStep::handles(out);
  add_handles(alt_args_, out);
}

Error GuardedPrimitiveStep::run(const RunContext& ctx) {
  void* p = nullptr;
  dnnl_memory_get_data_handle(guard_.get(), &p);
  const bool primary =
      p != nullptr && all_within(static_cast<const float*>(p), guard_floats_, bound_, ctx.threads);
  return primary ? execute(ctx, prim_, c_args_) : execute(ctx, alt_, alt_c_args_);
}

KernelStep::KernelStep(OwnStep step, std::vector<dnnl::memory> keep)
    : Step(kernel_name(step.what), step.scratch_bytes),
      kind_(step.kind),
      what_(std::move(step.what)),
      problem_(std::move(step.problem)),
      kernel_(std::move(step.run)),
      keep_(std::move(keep)) {}

void KernelStep::handles(std::vector<void*>* out) const {
  for (const dnnl::memory& m : keep_) out->push_back(m.get_data_handle());
}

Error KernelStep::run(const RunContext& ctx) {
  if (!ctx.verbose) {
    kernel_(ctx.scratch);
    return Error::Ok;
  }
  const auto t0 = std::chrono::steady_clock::now();
  kernel_(ctx.scratch);
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
  // oneDNN's verbose line shape, on stdout as oneDNN's, so that the two interleave in execution
  // order (bench/layer_report.py reads both).
  std::printf("ember_verbose,exec,cpu,%s,,%s,%.4f\n", what_.c_str(), problem_.c_str(), ms.count());
  return Error::Ok;
}

}  // namespace ember::cpu::delegate
