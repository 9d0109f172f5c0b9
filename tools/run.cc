#include "tools/run.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <random>

#include "backends/builtin_runtime.h"
#include "runtime/executor/module.h"
#include "runtime/kernels/cortex_m/cortex_m.h"
#include "runtime/platform/clock.h"
#include "tools/npy.h"
#include "tools/profile.h"

namespace ember::tools {
namespace {

int report(Error e) {
  std::fprintf(stderr, "error: %s (%s)\n", last_error_message(), to_string(e));
  return 1;
}

Result<LoadMode> parse_load_mode(const std::string& s) {
  if (s == "file") return LoadMode::File;
  if (s == "mmap") return LoadMode::Mmap;
  if (s == "mlock") return LoadMode::MmapUseMlock;
  if (s == "mlock-ignore") return LoadMode::MmapUseMlockIgnoreErrors;
  return fail(Error::InvalidArgument,
              "--load-mode must be file, mmap, mlock or mlock-ignore, not '%s'", s.c_str());
}

// Random values of the declared shape: floats in [-1, 1), integers in [0, 10), bools.
void fill_random(Tensor& t, std::mt19937& rng) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  EMBER_SWITCH_ALL_TYPES(t.dtype(), T, (void)0, {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = small(rng) % 2 == 1;
      } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                           std::is_same_v<T, BFloat16>) {
        p[i] = T(real(rng));
      } else {
        p[i] = static_cast<T>(small(rng));
      }
    }
  });
}

void print_values(const Tensor& t) {
  const int64_t n = std::min<int64_t>(t.numel(), 8);
  std::printf("[");
  EMBER_SWITCH_ALL_TYPES(t.dtype(), T, (void)0, {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        std::printf("%s%s", i ? ", " : "", p[i] ? "True" : "False");
      } else if constexpr (std::is_integral_v<T>) {
        std::printf("%s%" PRId64, i ? ", " : "", static_cast<int64_t>(p[i]));
      } else {
        std::printf("%s%.6g", i ? ", " : "", static_cast<double>(static_cast<float>(p[i])));
      }
    }
  });
  std::printf("%s]", t.numel() > n ? ", ..." : "");
}

}  // namespace

Result<std::vector<OwnedTensor>> method_inputs(const MethodMeta& meta,
                                               const std::vector<std::string>& npy_files,
                                               unsigned seed) {
  std::vector<OwnedTensor> owned;
  std::mt19937 rng(seed);
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<Tag> tag = meta.input_tag(i);
    if (!tag.ok()) return tag.error();
    if (*tag != Tag::Tensor) {
      return fail(Error::NotSupported, "input %zu is a %s; only tensor inputs are bound", i,
                  to_string(*tag));
    }
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) return info.error();
    if (!npy_files.empty()) {
      // The file holds C order; the method may declare another layout (channels-last).
      Result<NpyArray> a = read_npy(npy_files[i]);
      if (!a.ok()) return a.error();
      Result<OwnedTensor> t = npy_in_layout(*a, info->dim_order);
      if (!t.ok()) return t.error();
      owned.push_back(std::move(*t));
    } else {
      Result<OwnedTensor> t =
          OwnedTensor::zeros(info->dtype, {info->sizes.begin(), info->sizes.end()},
                             {info->dim_order.begin(), info->dim_order.end()});
      if (!t.ok()) return t.error();
      fill_random(t->tensor(), rng);
      owned.push_back(std::move(*t));
    }
  }
  return owned;
}

Error register_runtime() {
  // The backends this runtime carries, registered before any method loads.
  if (Error e = backends::register_builtin_runtime_backends(); e != Error::Ok) return e;
  // The cortex_m:: kernels that ExecuTorch's Cortex-M flow writes (Module registers portable).
  return register_cortex_m_kernels();
}

int run_command(const RunOptions& o) {
  if (register_runtime() != Error::Ok) {
    std::fprintf(stderr, "error: %s\n", last_error_message());
    return 1;
  }
  Result<LoadMode> mode = parse_load_mode(o.load_mode);
  if (!mode.ok()) return report(mode.error());
  ModuleOptions options;
  options.load_mode = *mode;
  options.data_path = o.ptd;
  options.num_threads = o.threads;
  Module module(o.model, options);
  if (Error e = module.load(); e != Error::Ok) return report(e);
  Result<MethodMeta> meta = module.method_meta(o.method);
  if (!meta.ok()) return report(meta.error());
  if (!o.inputs.empty() && o.inputs.size() != meta->num_inputs()) {
    return report(fail(Error::InvalidArgument,
                       "method '%s' takes %zu inputs; %zu --input files were given",
                       o.method.c_str(), meta->num_inputs(), o.inputs.size()));
  }

  Result<std::vector<OwnedTensor>> owned = method_inputs(*meta, o.inputs, o.seed);
  if (!owned.ok()) return report(owned.error());
  std::vector<EValue> inputs;
  for (OwnedTensor& t : *owned) inputs.push_back(t.evalue());

  // Exactly max(repeat, 1) calls: a stateful program (a KV cache, a counter buffer) ends as after
  // that many, and the outputs printed are the last call's.
  // The profile (--profile, --trace) covers the calls the latency median covers: all but the
  // first when there are several.
  Result<Method*> method = module.method(o.method);
  if (!method.ok()) return report(method.error());
  Profile profile;
  const bool profiling = o.profile || !o.trace.empty();
  const int calls = std::max(o.repeat, 1);
  std::vector<EValue> outputs;  // the last call's
  std::vector<double> times_ms;
  for (int r = 0; r < calls; ++r) {
    const bool observed = profiling && (r > 0 || calls == 1);
    (*method)->set_observer(observed ? &profile : nullptr);
    const uint64_t t0 = now_ns();
    Result<std::vector<EValue>> out = module.execute(o.method, inputs);
    const uint64_t t1 = now_ns();
    (*method)->set_observer(nullptr);
    if (!out.ok()) return report(out.error());
    outputs = std::move(*out);
    if (observed) profile.end_call();
    times_ms.push_back(static_cast<double>(t1 - t0) / 1e6);
  }

  if (!o.output_dir.empty()) {
    std::error_code ec;  // nested directories are created; a failure is reported below
    std::filesystem::create_directories(o.output_dir, ec);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const EValue& v = outputs[i];
    std::printf("output %zu: ", i);
    if (!v.is_tensor()) {  // a constant method's value, or a scalar output
      std::printf("%s", to_string(v.tag()));
      if (v.is_int()) std::printf(" %lld", static_cast<long long>(v.to_int()));
      if (v.is_double()) std::printf(" %.17g", v.to_double());
      if (v.is_bool()) std::printf(" %s", v.to_bool() ? "true" : "false");
      if (v.is_string())
        std::printf(" \"%.*s\"", static_cast<int>(v.to_string().size()), v.to_string().data());
      std::printf("\n");
      continue;
    }
    const Tensor& t = v.to_tensor();
    std::printf("%s [", to_string(t.dtype()));
    for (int d = 0; d < t.dim(); ++d) std::printf("%s%d", d ? ", " : "", t.size(d));
    std::printf("] ");
    print_values(t);
    std::printf("\n");
    if (!o.output_dir.empty()) {
      const std::string path = o.output_dir + "/output_" + std::to_string(i) + ".npy";
      if (Error e = write_npy(path, t); e != Error::Ok) return report(e);
    }
  }
  // The first call pays for first-touch page faults and cold caches: reported on its own.
  if (o.repeat == 1) std::printf("latency: one run, %.4f ms\n", times_ms[0]);
  if (o.repeat > 1) {
    std::vector<double> sorted(times_ms.begin() + 1, times_ms.end());
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    std::printf("latency: median %.4f ms, min %.4f ms over %zu runs after the first (%.4f ms)\n",
                median, sorted[0], n, times_ms[0]);
  }
  if (o.profile) {
    std::printf("\n");
    profile.print_table(stdout);
  }
  if (!o.trace.empty()) {
    if (Error e = profile.write_chrome_trace(o.trace); e != Error::Ok) return report(e);
    std::printf("trace: %zu events written to %s\n", profile.events().size(), o.trace.c_str());
  }
  return 0;
}

}  // namespace ember::tools
