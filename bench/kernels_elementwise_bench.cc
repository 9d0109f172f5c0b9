// Portable softmax and add against ATen eager, in the same process on the same inputs.
//
//   build/bench/ember_kernels_elementwise_bench --benchmark_filter=Softmax
//
// Ember's kernels run single-threaded and with the global pool; ATen with its default threads.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/thread_pool.h"

namespace {

ember::Tensor view(const at::Tensor& t) {
  std::vector<int32_t> sizes(t.sizes().begin(), t.sizes().end());
  ember::Result<ember::Tensor> r =
      ember::Tensor::make(ember::ScalarType::Float, sizes, {}, t.data_ptr());
  return r.ok() ? *r : ember::Tensor();
}

void Softmax(benchmark::State& state, bool ember_kernel, int threads) {
  (void)ember::register_portable_kernels();
  const int64_t rows = state.range(0), cols = state.range(1);
  const at::Tensor x = at::randn({rows, cols});
  at::Tensor out = at::empty_like(x);
  ember::Tensor tx = view(x), tout = view(out);
  ember::EValue vals[] = {ember::EValue::from_tensor(&tx), ember::EValue::from_int(-1),
                          ember::EValue::from_bool(false), ember::EValue::from_tensor(&tout),
                          ember::EValue::from_tensor(&tout)};
  ember::EValue* args[] = {&vals[0], &vals[1], &vals[2], &vals[3], &vals[4]};
  const ember::Kernel* k = ember::find_kernel("aten::_softmax.out");
  ember::ThreadPool local(threads > 0 ? threads : 1);  // threads 0: the global pool
  ember::KernelContext ctx{nullptr, threads > 0 ? &local : &ember::ThreadPool::global()};
  for (auto _ : state) {
    if (ember_kernel) {
      if (k == nullptr || k->fn(ctx, std::span<ember::EValue*>(args, 5)) != ember::Error::Ok)
        state.SkipWithError("kernel failed");
    } else {
      at::_softmax_out(out, x, -1, false);
    }
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

void Add(benchmark::State& state, bool ember_kernel, int threads) {
  (void)ember::register_portable_kernels();
  const int64_t n = state.range(0);
  const at::Tensor a = at::randn({n}), b = at::randn({n});
  at::Tensor out = at::empty_like(a);
  ember::Tensor ta = view(a), tb = view(b), tout = view(out);
  ember::EValue vals[] = {ember::EValue::from_tensor(&ta), ember::EValue::from_tensor(&tb),
                          ember::EValue::from_int(1), ember::EValue::from_tensor(&tout),
                          ember::EValue::from_tensor(&tout)};
  ember::EValue* args[] = {&vals[0], &vals[1], &vals[2], &vals[3], &vals[4]};
  const ember::Kernel* k = ember::find_kernel("aten::add.out");
  ember::ThreadPool local(threads > 0 ? threads : 1);  // threads 0: the global pool
  ember::KernelContext ctx{nullptr, threads > 0 ? &local : &ember::ThreadPool::global()};
  for (auto _ : state) {
    if (ember_kernel) {
      if (k == nullptr || k->fn(ctx, std::span<ember::EValue*>(args, 5)) != ember::Error::Ok)
        state.SkipWithError("kernel failed");
    } else {
      at::add_out(out, a, b, 1);
    }
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * static_cast<int64_t>(sizeof(float)));
}

}  // namespace

BENCHMARK_CAPTURE(Softmax, ember_1thread, true, 1)->Args({64, 1000})->Args({1024, 128});
BENCHMARK_CAPTURE(Softmax, ember_pool, true, 0)->Args({64, 1000})->Args({1024, 128});
BENCHMARK_CAPTURE(Softmax, aten, false, 0)->Args({64, 1000})->Args({1024, 128});
BENCHMARK_CAPTURE(Add, ember_1thread, true, 1)->Arg(1 << 20);
BENCHMARK_CAPTURE(Add, ember_pool, true, 0)->Arg(1 << 20);
BENCHMARK_CAPTURE(Add, aten, false, 0)->Arg(1 << 20);

BENCHMARK_MAIN();
