// Ember's own cpu-backend kernels alone, at MobileNetV2's shapes, batch 1: the fp32 3x3 depthwise
// convolution (depthwise.h) and the same of int8 values, uint8 in and out (QuantDepthwise3x3).
//
//   build/release/bench/ember_cpu_kernels_bench --benchmark_repetitions=10
//     --benchmark_report_aggregates_only=true
//
// Args: height (= width), channels, stride, threads. Counter: GMAC/s (9 multiply-adds an
// output). EMBER_CPU_ISA=avx2 times the AVX2 variant.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/depthwise.h"
#include "backends/cpu/own_kernels.h"

namespace {

using ember::Clamp;

struct Shape {
  int64_t hw, c, stride;
  int threads;
  int64_t out() const { return (hw - 1) / stride + 1; }
  double macs() const { return 9.0 * static_cast<double>(out() * out() * c); }
};

Shape shape_of(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2), static_cast<int>(state.range(3))};
}

void BM_Depthwise(benchmark::State& state) {
  if (!ember::cpu::own_kernels_supported()) return state.SkipWithError("no AVX2");
  const Shape s = shape_of(state);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> w(static_cast<size_t>(s.c * 9)), b(static_cast<size_t>(s.c));
  std::vector<float> src(static_cast<size_t>(s.hw * s.hw * s.c));
  for (float& v : b) v = u(gen);
  for (float& v : src) v = u(gen);
  for (float& v : w) v = u(gen);
  std::vector<float> dst(static_cast<size_t>(s.out() * s.out() * s.c));
  const ember::cpu::Depthwise3x3 k(1, s.hw, s.hw, s.c, s.stride, w.data(), b.data(),
                                   Clamp{0.f, 6.f}, s.threads);
  for (auto _ : state) {
    k.run(src.data(), dst.data());
    benchmark::DoNotOptimize(dst.data());
  }
  state.counters["GMAC/s"] =
      benchmark::Counter(s.macs() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_QuantDepthwise(benchmark::State& state) {
  if (!ember::cpu::own_kernels_supported()) return state.SkipWithError("no AVX2");
  const Shape s = shape_of(state);
  std::mt19937 gen(2);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  std::vector<int8_t> w(static_cast<size_t>(s.c * 9));
  std::vector<float> scales(static_cast<size_t>(s.c), 0.01f), b(static_cast<size_t>(s.c), 0.1f);
  std::vector<uint8_t> src(static_cast<size_t>(s.hw * s.hw * s.c));
  for (int8_t& v : w) v = static_cast<int8_t>(weight(gen));
  for (uint8_t& v : src) v = static_cast<uint8_t>(byte(gen));
  std::vector<uint8_t> dst(static_cast<size_t>(s.out() * s.out() * s.c));
  const ember::cpu::QuantDepthwise3x3 k(1, s.hw, s.hw, s.c, s.stride, w.data(), scales.data(),
                                        b.data(), Clamp{0.f, 6.f}, {0.05f, -3.f},
                                        {1.f / 0.04f, -128.f}, s.threads);
  for (auto _ : state) {
    k.run(src.data(), dst.data());
    benchmark::DoNotOptimize(dst.data());
  }
  state.counters["GMAC/s"] =
      benchmark::Counter(s.macs() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// MobileNetV2's stride-1 depthwise layers (the 112x112x32 one, 56x56x144, 28x28x192, 14x14x384,
// 14x14x576, 7x7x960) and a stride-2 one, at 1 and 2 threads.
void shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (const auto& [hw, c, stride] : std::vector<std::array<int64_t, 3>>{{112, 32, 1},
                                                                           {56, 144, 1},
                                                                           {28, 192, 1},
                                                                           {14, 384, 1},
                                                                           {14, 576, 1},
                                                                           {7, 960, 1},
                                                                           {112, 96, 2}}) {
      b->Args({hw, c, stride, threads});
    }
  }
  b->ArgNames({"hw", "c", "stride", "threads"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Depthwise)->Apply(shapes);
BENCHMARK(BM_QuantDepthwise)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
