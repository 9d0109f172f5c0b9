// Ember's own cpu-backend kernels alone: at MobileNetV2's shapes, batch 1, the fp32 3x3 depthwise
// convolution (kernels/depthwise.h), the same of int8 values, uint8 in and out (QuantDepthwise3x3),
// and the int8 1x1 convolution (QuantPointwise, kernels/quant_gemm.h); at BERT's and Llama's linear
// layers over a 128-token sequence, the packed GEMM (packed_gemm.h).
//
//   build/release/bench/ember_cpu_kernels_bench --benchmark_repetitions=10
//     --benchmark_report_aggregates_only=true
//
// Depthwise args: height (= width), channels, stride, threads, weight bits; counter GMAC/s (9
// multiply-adds an output). Pointwise args: height (= width), input and output channels, one
// thread; counters GMAC/s and G outputs/s. GEMM args: m, k, n, one thread; counter GFLOP/s.
// EMBER_CPU_ISA=avx2 times the AVX2 variants.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/kernels/depthwise.h"
#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "runtime/kernels/gemm/packed_gemm.h"

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
  // 8-bit weights, [-127, 127], or 7-bit, [-64, 63], which Ember's kernel sums in integers
  // without VNNI too (kernels/depthwise.h).
  const bool seven = state.range(4) == 7;
  std::uniform_int_distribution<int> byte(0, 255), weight(seven ? -64 : -127, seven ? 63 : 127);
  std::vector<int8_t> w(static_cast<size_t>(s.c * 9));
  std::vector<float> scales(static_cast<size_t>(s.c), 0.01f), b(static_cast<size_t>(s.c), 0.1f);
  std::vector<uint8_t> src(static_cast<size_t>(s.hw * s.hw * s.c));
  for (int8_t& v : w) v = static_cast<int8_t>(weight(gen));
  for (uint8_t& v : src) v = static_cast<uint8_t>(byte(gen));
  std::vector<uint8_t> dst(static_cast<size_t>(s.out() * s.out() * s.c));
  const ember::cpu::QuantDepthwise3x3 k(1, s.hw, s.hw, s.c, s.stride, w.data(), scales.data(),
                                        b.data(), Clamp{0.f, 6.f}, {0.05f, -3.f},
                                        {1.f / 0.04f, -128.f}, s.threads);
  ember::AlignedFloats scratch(k.scratch_bytes() / sizeof(float));
  for (auto _ : state) {
    k.run(src.data(), dst.data(), scratch.data());
    benchmark::DoNotOptimize(dst.data());
  }
  state.counters["GMAC/s"] =
      benchmark::Counter(s.macs() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_QuantPointwise(benchmark::State& state) {
  if (!ember::cpu::own_kernels_supported()) return state.SkipWithError("no AVX2");
  const int64_t hw = state.range(0), k = state.range(1), n = state.range(2), m = hw * hw;
  std::mt19937 gen(4);
  std::uniform_int_distribution<int> byte(0, 255), weight(-64, 63);  // AVX2's weight range
  std::vector<int8_t> w(static_cast<size_t>(n * k));
  std::vector<float> scales(static_cast<size_t>(n), 0.01f), b(static_cast<size_t>(n), 0.1f);
  std::vector<uint8_t> src(static_cast<size_t>(m * k)), dst(static_cast<size_t>(m * n));
  for (int8_t& v : w) v = static_cast<int8_t>(weight(gen));
  for (uint8_t& v : src) v = static_cast<uint8_t>(byte(gen));
  const ember::cpu::QuantPointwise p = ember::cpu::QuantPointwise::pack(
      w.data(), scales.data(), b.data(), k, n, 0.05f, -3.f, Clamp{0.f, 6.f}, 1.f / 0.04f, -128.f);
  for (auto _ : state) {
    ember::cpu::quant_pointwise_threads(1, m, p, src.data(), dst.data());
    benchmark::DoNotOptimize(dst.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(m * k * n) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["Gout/s"] = benchmark::Counter(static_cast<double>(m * n) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
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
      b->Args({hw, c, stride, threads, 8});
    }
  }
  b->ArgNames({"hw", "c", "stride", "threads", "bits"})->Unit(benchmark::kMicrosecond);
}

// The same, and some with 7-bit weights.
void quant_shapes(benchmark::internal::Benchmark* b) {
  shapes(b);
  for (int threads : {1, 2}) {
    for (const auto& [hw, c, stride] : std::vector<std::array<int64_t, 3>>{
             {112, 32, 1}, {56, 144, 1}, {14, 576, 1}, {112, 96, 2}}) {
      b->Args({hw, c, stride, threads, 7});
    }
  }
}

void BM_PackedGemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
  std::vector<float> bias(static_cast<size_t>(n)), c(static_cast<size_t>(m * n));
  for (float& v : a) v = u(gen);
  for (float& v : w) v = u(gen);
  for (float& v : bias) v = u(gen);
  // Copies of the weight, taken in turn: as in a model, whose weights are read from memory.
  std::vector<ember::PackedMatrix> b;
  const int copies = static_cast<int>(state.range(3));
  for (int i = 0; i < copies; ++i)
    b.push_back(ember::PackedMatrix::pack(w.data(), bias.data(), k, n));
  int next = 0;
  for (auto _ : state) {
    ember::gemm(m, b[static_cast<size_t>(next)], a.data(), k, nullptr, 0, c.data(), n, Clamp{});
    next = (next + 1) % copies;
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * static_cast<double>(m * k * n),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Depthwise)->Apply(shapes);
BENCHMARK(BM_QuantDepthwise)->Apply(quant_shapes);
// MobileNetV2's 1x1 layers: the first block's expansion (after the 16-channel projection), the
// 24-channel blocks' expansion and projection, the 14x14 ones, the last projection.
BENCHMARK(BM_QuantPointwise)
    ->Args({112, 16, 96})
    ->Args({56, 24, 144})
    ->Args({56, 144, 24})
    ->Args({14, 96, 576})
    ->Args({14, 576, 96})
    ->Args({7, 960, 320})
    ->ArgNames({"hw", "k", "n"})
    ->Unit(benchmark::kMicrosecond);
// BERT-base's projections and FFN, Llama's (dim 512, FFN 1536), 128 tokens.
BENCHMARK(BM_PackedGemm)
    ->Args({128, 768, 768, 1})
    ->Args({128, 768, 3072, 1})
    ->Args({128, 768, 3072, 32})
    ->Args({128, 3072, 768, 1})
    ->Args({128, 3072, 768, 32})
    ->Args({128, 512, 1536, 1})
    ->Args({128, 1536, 512, 1})
    ->ArgNames({"m", "k", "n", "copies"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
