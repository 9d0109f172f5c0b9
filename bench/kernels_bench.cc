// Ember's portable GEMM, convolution, layer norm, softmax and log_softmax against ATen eager
// (libtorch), in the same run, on the same inputs, with the same thread count (the benchmark's
// argument).
//
//   build/bench/ember_kernels_bench --benchmark_filter=Gemm
//
// Gemm reports GFLOP/s and `peak_fraction`: GFLOP/s over the FMA peak of ONE core, measured at
// start-up by a chain of independent vector FMAs of the ISA variant the GEMM runs
// (ember::measure_fma_peak_flops), so the fraction is meaningful for the 1-thread runs.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <deque>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/gemm/gemm.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/thread_pool.h"

namespace {

double fma_peak() {
  static const double peak = ember::measure_fma_peak_flops(0.5);
  return peak;
}

// The arguments of one kernel call, built from ATen tensors (Ember views of their storage).
class Call {
 public:
  Call& tensor(const at::Tensor& t) {
    std::vector<int32_t> sizes(t.sizes().begin(), t.sizes().end());
    ember::Result<ember::Tensor> r =
        ember::Tensor::make(ember::ScalarType::Float, sizes, {}, t.data_ptr());
    return push(ember::EValue::from_tensor(&tensors_.emplace_back(r.ok() ? *r : ember::Tensor())));
  }
  Call& none() { return push(ember::EValue()); }
  Call& integer(int64_t v) { return push(ember::EValue::from_int(v)); }
  Call& real(double v) { return push(ember::EValue::from_double(v)); }
  Call& boolean(bool v) { return push(ember::EValue::from_bool(v)); }
  Call& ints(const std::vector<int64_t>& v) {
    auto& items = boxes_.emplace_back();
    for (int64_t x : v) items.push_back(&values_.emplace_back(ember::EValue::from_int(x)));
    auto& scratch = scratch_.emplace_back(v.size());
    return push(ember::EValue::from_int_list({items.data(), scratch.data(), v.size()}));
  }
  Call& again(size_t n = 1) {  // repeats the last n arguments (outs)
    for (size_t i = args_.size() - n, end = args_.size(); i < end; ++i) args_.push_back(args_[i]);
    return *this;
  }
  Call& list_of_last(size_t n) {  // the outs of a multi-out op, as one TensorList
    auto& items = boxes_.emplace_back(args_.end() - static_cast<std::ptrdiff_t>(n), args_.end());
    auto& scratch = tensor_scratch_.emplace_back(n);
    return push(ember::EValue::from_tensor_list({items.data(), scratch.data(), n}));
  }
  bool run(const char* name, ember::KernelContext& ctx) {
    const ember::Kernel* k = ember::find_kernel(name);
    return k != nullptr && k->fn(ctx, {args_.data(), args_.size()}) == ember::Error::Ok;
  }

 private:
  Call& push(ember::EValue v) {
    args_.push_back(&values_.emplace_back(v));
    return *this;
  }
  std::deque<ember::EValue> values_;
  std::deque<ember::Tensor> tensors_;
  std::deque<std::vector<ember::EValue*>> boxes_;
  std::deque<std::vector<int64_t>> scratch_;
  std::deque<std::vector<ember::Tensor*>> tensor_scratch_;
  std::vector<ember::EValue*> args_;
};

// Runs `ember` (a kernel call) or `aten` per iteration with `threads` threads on both sides.
template <typename E, typename A>
void loop(benchmark::State& state, bool use_ember, E&& ember_call, A&& aten_call) {
  (void)ember::register_portable_kernels();
  const int threads = static_cast<int>(state.range(0));
  at::set_num_threads(threads);
  ember::ThreadPool pool(threads);
  ember::KernelContext ctx{nullptr, &pool};
  for (auto _ : state) {
    if (use_ember) {
      if (!ember_call(ctx)) {
        state.SkipWithError(ember::last_error_message());
        break;
      }
    } else {
      aten_call();
    }
    benchmark::ClobberMemory();
  }
}

void Gemm1024(benchmark::State& state, bool use_ember) {
  const int64_t n = 1024;
  const at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
  at::Tensor out = at::empty({n, n});
  Call call;
  call.tensor(a).tensor(b).tensor(out).again();
  loop(
      state, use_ember, [&](ember::KernelContext& ctx) { return call.run("aten::mm.out", ctx); },
      [&] { at::mm_out(out, a, b); });
  const double flops = 2.0 * n * n * n;
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  // A rate counter: (flops / peak) per second = the fraction of one core's FMA peak reached.
  state.counters["peak_fraction"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / fma_peak(), benchmark::Counter::kIsRate);
  state.counters["peak_GFLOP/s_1core"] = fma_peak() / 1e9;
  state.SetLabel(use_ember ? ember::gemm_isa() : "aten");
}

void Conv3x3(benchmark::State& state, bool use_ember) {
  const at::Tensor x = at::randn({1, 64, 56, 56}), w = at::randn({64, 64, 3, 3}),
                   b = at::randn({64});
  at::Tensor out = at::empty({1, 64, 56, 56});
  Call call;
  call.tensor(x)
      .tensor(w)
      .tensor(b)
      .ints({1, 1})
      .ints({1, 1})
      .ints({1, 1})
      .boolean(false)
      .ints({0, 0})
      .integer(1)
      .tensor(out)
      .again();
  loop(
      state, use_ember,
      [&](ember::KernelContext& ctx) { return call.run("aten::convolution.out", ctx); },
      [&] {
        out = at::convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
      });
  const double flops = 2.0 * 64 * 64 * 9 * 56 * 56;
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void LayerNorm(benchmark::State& state, bool use_ember) {
  const int64_t rows = 512, cols = 768;
  const at::Tensor x = at::randn({rows, cols}), w = at::randn({cols}), b = at::randn({cols});
  at::Tensor out = at::empty({rows, cols}), mean = at::empty({rows, 1}),
             rstd = at::empty({rows, 1});
  Call call;
  call.tensor(x)
      .ints({cols})
      .tensor(w)
      .tensor(b)
      .real(1e-5)
      .tensor(out)
      .tensor(mean)
      .tensor(rstd)
      .list_of_last(3);
  loop(
      state, use_ember,
      [&](ember::KernelContext& ctx) { return call.run("aten::native_layer_norm.out", ctx); },
      [&] { benchmark::DoNotOptimize(at::native_layer_norm(x, {cols}, w, b, 1e-5)); });
  state.SetBytesProcessed(state.iterations() * rows * cols * 2 *
                          static_cast<int64_t>(sizeof(float)));
}

// _softmax or _log_softmax over the last dim of a 512 x 1024 float32 tensor.
void SoftmaxOrLog(benchmark::State& state, bool use_ember, bool log) {
  const int64_t rows = 512, cols = 1024;
  const at::Tensor x = at::randn({rows, cols});
  at::Tensor out = at::empty({rows, cols});
  Call call;
  call.tensor(x).integer(-1).boolean(false).tensor(out).again();
  loop(
      state, use_ember,
      [&](ember::KernelContext& ctx) {
        return call.run(log ? "aten::_log_softmax.out" : "aten::_softmax.out", ctx);
      },
      [&] {
        if (log) {
          at::_log_softmax_out(out, x, -1, false);
        } else {
          at::_softmax_out(out, x, -1, false);
        }
      });
  state.SetBytesProcessed(state.iterations() * rows * cols * 2 *
                          static_cast<int64_t>(sizeof(float)));
}
void Softmax(benchmark::State& state, bool use_ember) { SoftmaxOrLog(state, use_ember, false); }
void LogSoftmax(benchmark::State& state, bool use_ember) { SoftmaxOrLog(state, use_ember, true); }

}  // namespace

BENCHMARK_CAPTURE(Gemm1024, ember, true)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Gemm1024, aten, false)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Conv3x3, ember, true)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Conv3x3, aten, false)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(LayerNorm, ember, true)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(LayerNorm, aten, false)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Softmax, ember, true)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(Softmax, aten, false)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(LogSoftmax, ember, true)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(LogSoftmax, aten, false)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_MAIN();
