// The Ember side of the side-by-side benchmark (bench/run_bench.py): a long-lived worker that
// loads one program once, then times executes on request, so the driver can interleave systems.
//
//   ember_bench_runner model.pte --ptd model.ptd --threads 2 --input x.npy --out-dir d --warmup 3
//   stdin "run 5" -> stdout "times 12.1 12.3 12.0 12.2 12.4" (ms per execute); "quit" ends it.
//
// On start it executes once, prints "first_output MS KB" (load to the first execute's return, and
// the peak RSS before the load), writes the outputs to --out-dir/output_<i>.npy (the driver checks
// them against eager PyTorch), runs the warm-up executes and prints "ready". Any failure prints
// one line "error: ..." and exits with 1.
//
//   ember_bench_runner --fma-peak   -> "fma_peak_gflops 118.4": one core's float32 FMA peak,
//   measured (the probe of the portable GEMM), the yardstick of bench/layer_report.py. The Module
//   owns the program, weights and buffers; the
// input arrays are owned here and outlive every execute.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "backends/builtin_runtime.h"
#include "runtime/executor/module.h"
#include "runtime/kernels/gemm/gemm.h"
#include "runtime/platform/clock.h"
#include "tools/npy.h"

namespace {

using ember::Error;
using ember::EValue;
using ember::Result;

// The process's peak resident set (VmHWM of /proc/self/status) in kB, or -1 where unreadable.
long peak_rss_kb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::strtol(line + 6, nullptr, 10);
  }
  std::fclose(f);
  return kb;
}

int report(Error e) {
  std::printf("error: %s (%s)\n", ember::last_error_message(), ember::to_string(e));
  std::fflush(stdout);
  return 1;
}

int usage() {
  std::printf(
      "error: usage: ember_bench_runner MODEL.pte [--ptd F] [--method M] [--threads N] "
      "[--input F.npy]... [--out-dir D] [--warmup N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  if (std::strcmp(argv[1], "--fma-peak") == 0) {
    // The best of five short probes: a probe that loses its core to another process reads low.
    double best = 0;
    for (int k = 0; k < 5; ++k) best = std::max(best, ember::measure_fma_peak_flops(0.2));
    std::printf("fma_peak_gflops %.2f\n", best / 1e9);
    return 0;
  }
  std::string model = argv[1], ptd, method = "forward", out_dir;
  std::vector<std::string> input_paths;
  int threads = 0, warmup = 3;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string v = argv[++i];
    if (a == "--ptd") {
      ptd = v;
    } else if (a == "--method") {
      method = v;
    } else if (a == "--threads") {
      threads = std::atoi(v.c_str());
    } else if (a == "--input") {
      input_paths.push_back(v);
    } else if (a == "--out-dir") {
      out_dir = v;
    } else if (a == "--warmup") {
      warmup = std::atoi(v.c_str());
    } else {
      return usage();
    }
  }

  if (Error e = ember::backends::register_builtin_runtime_backends(); e != Error::Ok)
    return report(e);
  std::vector<ember::tools::NpyArray> arrays;
  std::vector<ember::Tensor> views(input_paths.size());
  std::vector<EValue> inputs;
  arrays.reserve(input_paths.size());
  for (size_t i = 0; i < input_paths.size(); ++i) {
    Result<ember::tools::NpyArray> a = ember::tools::read_npy(input_paths[i]);
    if (!a.ok()) return report(a.error());
    arrays.push_back(std::move(*a));
    Result<ember::Tensor> t =
        ember::Tensor::make(arrays[i].dtype, arrays[i].shape, {}, arrays[i].data.data());
    if (!t.ok()) return report(t.error());
    views[i] = *t;
    inputs.push_back(EValue::from_tensor(&views[i]));
  }

  // The first output's time, as ExecuTorch's worker measures its own (bench/executorch_worker.py):
  // from loading the program (inputs already read) to the first execute's return; and the peak
  // RSS before the load.
  const long rss_before_kb = peak_rss_kb();
  const uint64_t load_start = ember::now_ns();
  ember::ModuleOptions options;
  options.data_path = ptd;
  options.num_threads = threads;
  ember::Module module(model, options);
  if (Error e = module.load(); e != Error::Ok) return report(e);

  Result<std::vector<EValue>> outputs = module.execute(method, inputs);
  if (!outputs.ok()) return report(outputs.error());
  std::printf("first_output %.4f %ld\n", static_cast<double>(ember::now_ns() - load_start) / 1e6,
              rss_before_kb);
  if (!out_dir.empty()) {
    for (size_t i = 0; i < outputs->size(); ++i) {
      if (!(*outputs)[i].is_tensor()) continue;
      const std::string path = out_dir + "/output_" + std::to_string(i) + ".npy";
      if (Error e = ember::tools::write_npy(path, (*outputs)[i].to_tensor()); e != Error::Ok) {
        return report(e);
      }
    }
  }
  // Up to `warmup` runs, stopping after 5 s (at least one), like the other systems' workers.
  const uint64_t warm_start = ember::now_ns();
  for (int r = 0; r < warmup; ++r) {
    if (r > 0 && ember::now_ns() - warm_start > 5'000'000'000ull) break;
    outputs = module.execute(method, inputs);
    if (!outputs.ok()) return report(outputs.error());
  }
  std::printf("ready\n");
  std::fflush(stdout);

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "quit") break;
    if (line.rfind("run ", 0) != 0) {
      std::printf("error: unknown command '%s'\n", line.c_str());
      std::fflush(stdout);
      return 1;
    }
    const int n = std::atoi(line.c_str() + 4);
    std::string times = "times";
    for (int r = 0; r < n; ++r) {
      const uint64_t t0 = ember::now_ns();
      outputs = module.execute(method, inputs);
      const uint64_t t1 = ember::now_ns();
      if (!outputs.ok()) return report(outputs.error());
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.4f", static_cast<double>(t1 - t0) / 1e6);
      times += buf;
    }
    std::printf("%s\n", times.c_str());
    std::fflush(stdout);
  }
  return 0;
}
