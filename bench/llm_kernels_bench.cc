// llama::custom_sdpa (runtime/kernels/llm) alone, called as a method calls it (the registered
// kernel): fp32, head_dim 64, a 1024-position cache, is_causal. At the shapes of a
// Qwen2.5-0.5B-sized model (14 query heads over 2 key/value heads), a 512-token prefill from
// position 0 and one-token decode steps after 128 and 1000 positions, on 1 and 2 threads; then
// decode steps after 1000 positions with other groupings: 32 query heads over 8 (Llama 3's
// ratio) and 16 over 16 (no grouped-query attention, the kernel's row path).
//
//   build/bench/ember_llm_kernels_bench --benchmark_repetitions=5
//     --benchmark_report_aggregates_only=true
//
// Args: query rows, start_pos, threads, query heads, key/value heads. Time is per call; counter
// GFLOP/s counts the multiply-adds of the scores and of the weighted sum that a causal attention
// needs (2 * 2 * head_dim a visible key and query head). EMBER_CPU_ISA=generic (or avx2 on an
// AVX-512 CPU) times a smaller CPU's path.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/llm/llm.h"
#include "runtime/platform/thread_pool.h"

namespace {

constexpr int32_t kHeadDim = 64, kCache = 1024;

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

ember::Tensor make(std::vector<int32_t> sizes, std::vector<float>& data) {
  ember::Result<ember::Tensor> t =
      ember::Tensor::make(ember::ScalarType::Float, sizes, {}, static_cast<void*>(data.data()));
  return *t;
}

void BM_CustomSdpa(benchmark::State& state) {
  const auto q_len = static_cast<int32_t>(state.range(0));
  const int64_t start_pos = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const auto q_heads = static_cast<int32_t>(state.range(3));
  const auto kv_heads = static_cast<int32_t>(state.range(4));
  if (ember::register_llm_kernels() != ember::Error::Ok) return state.SkipWithError("register");
  const ember::Kernel* kernel = ember::find_kernel("llama::custom_sdpa.out");
  if (kernel == nullptr) return state.SkipWithError("no llama::custom_sdpa.out");
  std::vector<float> q = random_values(size_t{1} * q_len * q_heads * kHeadDim, 1);
  std::vector<float> k = random_values(size_t{1} * kCache * kv_heads * kHeadDim, 2);
  std::vector<float> v = random_values(k.size(), 3);
  std::vector<float> out(q.size());
  ember::Tensor tq = make({1, q_len, q_heads, kHeadDim}, q);
  ember::Tensor tk = make({1, kCache, kv_heads, kHeadDim}, k);
  ember::Tensor tv = make({1, kCache, kv_heads, kHeadDim}, v);
  ember::Tensor tout = make({1, q_len, q_heads, kHeadDim}, out);
  ember::EValue values[] = {ember::EValue::from_tensor(&tq),
                            ember::EValue::from_tensor(&tk),
                            ember::EValue::from_tensor(&tv),
                            ember::EValue::from_int(start_pos),
                            ember::EValue(),
                            ember::EValue::from_double(0.0),
                            ember::EValue::from_bool(true),
                            ember::EValue(),
                            ember::EValue::from_tensor(&tout),
                            ember::EValue::from_tensor(&tout)};
  ember::EValue* args[std::size(values)];
  for (size_t i = 0; i < std::size(values); ++i) args[i] = &values[i];
  ember::KernelContext ctx{nullptr, &ember::ThreadPool::global(threads)};
  for (auto _ : state) {
    if (kernel->fn(ctx, std::span<ember::EValue*>(args)) != ember::Error::Ok)
      return state.SkipWithError("custom_sdpa");
    benchmark::DoNotOptimize(out.data());
  }
  double keys = 0;  // visible keys over the query rows
  for (int64_t s = 0; s < q_len; ++s) keys += static_cast<double>(start_pos + s + 1);
  state.counters["GFLOP/s"] = benchmark::Counter(keys * q_heads * kHeadDim * 4 * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void Cases(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    b->Args({512, 0, threads, 14, 2});
    b->Args({1, 128, threads, 14, 2});
    b->Args({1, 1000, threads, 14, 2});
  }
  b->Args({1, 1000, 1, 32, 8});
  b->Args({1, 1000, 1, 16, 16});
}

BENCHMARK(BM_CustomSdpa)
    ->ArgNames({"q_len", "start_pos", "threads", "q_heads", "kv_heads"})
    ->Apply(Cases)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
