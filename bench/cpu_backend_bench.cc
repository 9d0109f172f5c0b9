// The cpu backend (oneDNN) end to end on whole exported models, batch 1: ResNet-18 and
// MobileNetV2 as single partitions, fp32 and bf16, 1 and 2 threads.
//
//   PYTHONPATH=python .venv/bin/python bench/cpu_backend_models.py /tmp/cpu_models
//   EMBER_CPU_BENCH_MODELS=/tmp/cpu_models build/release/bench/ember_cpu_backend_bench
//
// Counters: ms per inference (the median is what to compare: --benchmark_repetitions=20
// --benchmark_report_aggregates_only=true) and, for ResNet-18, GFLOP/s and the share of the FMA
// peak 2 cores x 2 FMA x 16 fp32 x 2 flops x 2.6 GHz (the clock /proc/cpuinfo reports; an
// assumption: boost clocks are not measured).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/test/testing.h"

namespace {

using ember::cpu::testing::Delegate;

constexpr const char* kModels[] = {"resnet18", "mobilenet_v2"};
constexpr double kResNet18Flops = 2 * 1.8142e9;  // multiply-adds of ResNet-18 at 224x224, x2
constexpr double kPeakFlops = 2 * 2 * 16 * 2 * 2.6e9;

std::string models_dir() {
  const char* d = std::getenv("EMBER_CPU_BENCH_MODELS");
  return d != nullptr ? d : "";
}

// Preprocessed once per model and precision (preprocess is compile time, not measured).
const ember::partition::PreprocessResult* prepared(const std::string& model, bool bf16) {
  static std::map<std::string, std::unique_ptr<ember::partition::PreprocessResult>> cache;
  const std::string key = model + (bf16 ? ":bf16" : ":fp32");
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  const std::string p = bf16 ? "bf16" : "fp32";
  auto r = ember::cpu::testing::preprocess_exported_file(
      models_dir() + "/" + model + ".ep",
      {{"precision", std::vector<uint8_t>(p.begin(), p.end())}});
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().message().c_str());
    return nullptr;
  }
  auto owned = std::make_unique<ember::partition::PreprocessResult>(std::move(*r));
  return (cache[key] = std::move(owned)).get();
}

void BM_CpuBackend(benchmark::State& state) {
  const std::string model = kModels[state.range(0)];
  const int threads = static_cast<int>(state.range(1));
  const bool bf16 = state.range(2) != 0;
  state.SetLabel(model + (bf16 ? " bf16" : " fp32") + " threads=" + std::to_string(threads));
  if (!std::filesystem::exists(models_dir() + "/" + model + ".ep")) {
    state.SkipWithError("set EMBER_CPU_BENCH_MODELS (bench/cpu_backend_models.py writes it)");
    return;
  }
  const auto* r = prepared(model, bf16);
  if (r == nullptr) {
    state.SkipWithError("preprocess failed");
    return;
  }
  const std::string t = std::to_string(threads);
  const std::vector<uint8_t> tv(t.begin(), t.end());
  Delegate d;
  if (d.init(*r, {{"num_threads", tv}}) != ember::Error::Ok) {
    state.SkipWithError("init failed");
    return;
  }
  std::vector<float> x(3 * 224 * 224, 0.5f), y(1000);
  for (int i = 0; i < 3; ++i) {  // warm-up: first-touch of buffers, JIT caches
    if (d.run({{x.data(), {1, 3, 224, 224}}}, {{y.data(), {1, 1000}}}) != ember::Error::Ok) {
      state.SkipWithError("execute failed");
      return;
    }
  }
  for (auto _ : state) {
    if (d.run({{x.data(), {1, 3, 224, 224}}}, {{y.data(), {1, 1000}}}) != ember::Error::Ok) {
      state.SkipWithError("execute failed");
      return;
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["ms"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 1e-3,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (model == "resnet18") {
    state.counters["GFLOP/s"] =
        benchmark::Counter(kResNet18Flops * static_cast<double>(state.iterations()) * 1e-9,
                           benchmark::Counter::kIsRate);
    state.counters["peak%"] = benchmark::Counter(
        kResNet18Flops * static_cast<double>(state.iterations()) * 100.0 / kPeakFlops,
        benchmark::Counter::kIsRate);
  }
}
BENCHMARK(BM_CpuBackend)
    ->ArgsProduct({{0, 1}, {1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
