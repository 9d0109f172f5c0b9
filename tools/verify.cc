#include "tools/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <span>

#include "backends/builtin_runtime.h"
#include "runtime/executor/module.h"
#include "tools/run.h"

namespace ember::tools {
namespace {

// A method's outputs, copied out of the Module's memory as doubles (bools and integers too).
struct Outputs {
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int32_t>> shapes;
};

ir::Status runtime_error(const char* what) {
  return ir::Status::error(std::string(what) + ": " + last_error_message());
}

ir::StatusOr<Outputs> run_program(const std::vector<uint8_t>& pte, const VerifyOptions& verify,
                                  size_t* num_inputs) {
  Module module(std::span<const uint8_t>(pte.data(), pte.size()), {}, BufferMode::Copy);
  if (module.load() != Error::Ok) return runtime_error("loading the program");
  Result<MethodMeta> meta = module.method_meta("forward");
  if (!meta.ok()) return runtime_error("method 'forward'");
  if (!verify.inputs.empty() && verify.inputs.size() != meta->num_inputs()) {
    return ir::Status::error("the program takes " + std::to_string(meta->num_inputs()) +
                             " inputs; " + std::to_string(verify.inputs.size()) +
                             " --verify-input files were given");
  }
  *num_inputs = meta->num_inputs();
  // Fresh inputs for every run: a program may write its inputs in place.
  Result<std::vector<OwnedTensor>> owned = method_inputs(*meta, verify.inputs, verify.seed);
  if (!owned.ok()) return runtime_error("the inputs");
  std::vector<EValue> inputs;
  for (OwnedTensor& t : *owned) inputs.push_back(t.evalue());
  Result<std::vector<EValue>> out = module.execute("forward", inputs);
  if (!out.ok()) return runtime_error("running the program");
  Outputs result;
  for (const EValue& v : *out) {
    std::vector<double> values;
    std::vector<int32_t> shape;
    if (v.is_tensor()) {
      const Tensor& t = v.to_tensor();
      shape.assign(t.sizes().begin(), t.sizes().end());
      EMBER_SWITCH_ALL_TYPES(t.dtype(), T, (void)0, {
        const T* p = t.data<T>();
        for (int64_t i = 0; i < t.numel(); ++i) {
          if constexpr (std::is_same_v<T, bool>) {
            values.push_back(p[i] ? 1.0 : 0.0);
          } else if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
            values.push_back(static_cast<double>(p[i]));
          } else {  // Half, BFloat16
            values.push_back(static_cast<double>(static_cast<float>(p[i])));
          }
        }
      });
    } else if (v.is_int()) {
      values.push_back(static_cast<double>(v.to_int()));
    } else if (v.is_double()) {
      values.push_back(v.to_double());
    } else if (v.is_bool()) {
      values.push_back(v.to_bool() ? 1.0 : 0.0);
    }
    result.values.push_back(std::move(values));
    result.shapes.push_back(std::move(shape));
  }
  return result;
}

// The largest |got - want| over `want`'s scale (its largest finite magnitude, at least 1); NaN
// against a number, or infinities that differ, count as infinite.
double output_error(const std::vector<double>& want, const std::vector<double>& got) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (want.size() != got.size()) return kInf;
  double scale = 1;
  for (double w : want) {
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double w = want[i], g = got[i];
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) return kInf;
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (w != g) return kInf;
      continue;
    }
    worst = std::max(worst, std::fabs(g - w) / scale);
  }
  return worst;
}

// The worst output error of `got` against `want`, and where.
double program_error(const Outputs& want, const Outputs& got, size_t* at) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  *at = 0;
  if (want.values.size() != got.values.size()) return kInf;
  double worst = 0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    const double e =
        want.shapes[i] != got.shapes[i] ? kInf : output_error(want.values[i], got.values[i]);
    if (e > worst || (std::isnan(e) && !std::isnan(worst))) {
      worst = e;
      *at = i;
    }
  }
  return worst;
}

// `options` with backend `backend` limited to `partitions` (replacing any `partitions` spec).
lower::CompileOptions with_partitions(lower::CompileOptions options, const std::string& backend,
                                      const std::set<size_t>& partitions) {
  std::string list;
  for (size_t p : partitions) list += (list.empty() ? "" : ",") + std::to_string(p);
  auto& specs = options.compile_specs[backend];
  std::erase_if(specs, [](const partition::CompileSpecEntry& s) {
    return s.key == partition::kPartitionsSpecKey;
  });
  specs.push_back({partition::kPartitionsSpecKey, {list.begin(), list.end()}});
  return options;
}

ir::StatusOr<Outputs> compile_and_run(const std::string& model, lower::CompileOptions options,
                                      const VerifyOptions& verify, size_t* num_inputs) {
  options.external_weights = false;  // run from memory: the weights in the program
  options.keep_ir = false;
  ir::StatusOr<lower::CompileResult> r = lower::compile_file(model, options);
  if (!r.ok()) return r.status();
  return run_program(r->files.pte, verify, num_inputs);
}

std::string error_text(double e) {
  if (std::isinf(e)) return "inf (NaN or inf where the reference differs)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", e);
  return buf;
}

}  // namespace

ir::StatusOr<VerifyReport> verify_delegates(const std::string& model,
                                            const lower::CompileOptions& options,
                                            const lower::CompileResult& compiled,
                                            const VerifyOptions& verify) {
  // The runtime halves of the backends, to run what the compiler halves wrote.
  if (backends::register_builtin_runtime_backends() != Error::Ok) {
    return runtime_error("registering the backends");
  }
  VerifyReport report;
  report.random_inputs = verify.inputs.empty();
  lower::CompileOptions portable = options;
  portable.backends.clear();
  portable.compile_specs.clear();
  ir::StatusOr<Outputs> reference = compile_and_run(model, portable, verify, &report.inputs);
  if (!reference.ok()) {
    return ir::Status::error("the portable reference: " + reference.status().message());
  }
  for (size_t i = 0; i < compiled.delegates.size(); ++i) {
    const lower::CompileResult::Delegate& d = compiled.delegates[i];
    size_t inputs = 0;
    ir::StatusOr<Outputs> alone =
        compile_and_run(model, with_partitions(options, d.backend, {d.partition}), verify, &inputs);
    if (!alone.ok()) {
      return ir::Status::error("delegate " + std::to_string(i) + " (backend '" + d.backend +
                               "', partition " + std::to_string(d.partition) +
                               ") alone: " + alone.status().message());
    }
    VerifyReport::Row row{i, d.backend, d.partition, d.nodes.size(), 0, 0};
    row.error = program_error(*reference, *alone, &row.output);
    report.delegates.push_back(row);
  }
  size_t inputs = 0;
  ir::StatusOr<Outputs> whole = compile_and_run(model, options, verify, &inputs);
  if (!whole.ok()) return ir::Status::error("the delegated program: " + whole.status().message());
  report.whole = program_error(*reference, *whole, &report.whole_output);
  return report;
}

std::string format_report(const VerifyReport& report, const VerifyOptions& verify) {
  std::string s =
      "verify: against the portable kernels on " +
      std::string(report.random_inputs ? "random inputs (seed " + std::to_string(verify.seed) + ")"
                                       : "the given inputs") +
      ", tolerance " + error_text(verify.tolerance) +
      " (largest |delegated - portable| over the output's scale)\n";
  for (const VerifyReport::Row& r : report.delegates) {
    const bool ok = r.error <= verify.tolerance;
    s += "  delegate " + std::to_string(r.delegate) + " (" + r.backend + ", partition " +
         std::to_string(r.partition) + ", " + std::to_string(r.nodes) + " nodes): error " +
         error_text(r.error) + " at output " + std::to_string(r.output) +
         (ok ? "" : "  BEYOND TOLERANCE") + "\n";
  }
  s += "  whole program (" + std::to_string(report.delegates.size()) + " delegates): error " +
       error_text(report.whole) + " at output " + std::to_string(report.whole_output) +
       (report.whole <= verify.tolerance ? "" : "  BEYOND TOLERANCE") + "\n";
  return s;
}

lower::CompileOptions without_failing(const lower::CompileOptions& options,
                                      const lower::CompileResult& compiled,
                                      const VerifyReport& report, double tolerance,
                                      size_t* failed) {
  std::map<std::string, std::set<size_t>> keep;
  for (const std::string& b : options.backends) keep[b];
  *failed = 0;
  for (const VerifyReport::Row& r : report.delegates) {
    if (r.error <= tolerance) {
      keep[r.backend].insert(compiled.delegates[r.delegate].partition);
    } else {
      ++*failed;
    }
  }
  lower::CompileOptions out = options;
  for (const auto& [backend, partitions] : keep) out = with_partitions(out, backend, partitions);
  return out;
}

}  // namespace ember::tools
