// Runtime overhead on ExecuTorch's add.pte: program load, method load, and execute.
// Goals on this machine: execute under 1 us, method load under 20 us.
//
//   build/bench/ember_runtime_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/loaders.h"

namespace {

struct AddFixture {
  AddFixture() {
    std::ifstream in(EMBER_SHARED_DIR "/fixtures/executorch/add.pte", std::ios::binary);
    const std::vector<char> file((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
    size = file.size();
    data = static_cast<uint8_t*>(std::aligned_alloc(64, 1024));
    if (size > 0 && size <= 1024) std::memcpy(data, file.data(), size);
    if (ember::register_portable_kernels() != ember::Error::Ok) size = 0;
  }
  ~AddFixture() { std::free(data); }
  uint8_t* data = nullptr;
  size_t size = 0;
};

AddFixture& fixture() {
  static AddFixture f;
  return f;
}

struct Memory {
  alignas(64) uint8_t pool[8192];
  alignas(64) uint8_t arena[64];
  ember::MemoryAllocator method_allocator{pool, sizeof(pool)};
  std::span<uint8_t> arenas[1] = {{arena, sizeof(arena)}};
  ember::HierarchicalAllocator planned{arenas};
  ember::MemoryManager manager{&method_allocator, &planned, nullptr};
};

void BM_ProgramLoad(benchmark::State& state) {
  AddFixture& f = fixture();
  if (f.size == 0) return state.SkipWithError("add.pte fixture not found");
  ember::BufferDataLoader loader(f.data, f.size);
  for (auto _ : state) {
    ember::Result<ember::Program> program = ember::Program::load(&loader);
    benchmark::DoNotOptimize(program.ok());
  }
}
BENCHMARK(BM_ProgramLoad);

void BM_MethodLoad(benchmark::State& state) {
  AddFixture& f = fixture();
  if (f.size == 0) return state.SkipWithError("add.pte fixture not found");
  ember::BufferDataLoader loader(f.data, f.size);
  ember::Result<ember::Program> program = ember::Program::load(&loader);
  if (!program.ok()) return state.SkipWithError(ember::last_error_message());
  Memory memory;
  for (auto _ : state) {
    memory.method_allocator.reset();
    ember::Result<ember::Method> method = program->load_method("forward", &memory.manager);
    benchmark::DoNotOptimize(method.ok());
  }
}
BENCHMARK(BM_MethodLoad);

// add.pte loaded and its method loaded, with two one-element inputs ready to bind.
struct LoadedAdd {
  LoadedAdd()
      : loader(fixture().data, fixture().size),
        program(ember::Program::load(&loader)),
        method(program.ok() ? program->load_method("forward", &memory.manager)
                            : ember::Result<ember::Method>(program.error())) {
    int32_t sizes[] = {1};
    ta = *ember::Tensor::make(ember::ScalarType::Float, sizes, {}, &a);
    tb = *ember::Tensor::make(ember::ScalarType::Float, sizes, {}, &b);
  }
  ember::Error bind() {
    const ember::Error e = method->set_input(ta, 0);
    return e == ember::Error::Ok ? method->set_input(tb, 1) : e;
  }
  ember::BufferDataLoader loader;
  ember::Result<ember::Program> program;
  Memory memory;
  ember::Result<ember::Method> method;
  float a = 1.0f, b = 2.0f;
  ember::Tensor ta, tb;
};

void BM_Execute(benchmark::State& state) {
  if (fixture().size == 0) return state.SkipWithError("add.pte fixture not found");
  LoadedAdd add;
  if (!add.method.ok() || add.bind() != ember::Error::Ok) {
    return state.SkipWithError(ember::last_error_message());
  }
  for (auto _ : state) {
    const ember::Error e = add.method->execute();
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_Execute);

void BM_SetInputsAndExecute(benchmark::State& state) {
  if (fixture().size == 0) return state.SkipWithError("add.pte fixture not found");
  LoadedAdd add;
  if (!add.method.ok()) return state.SkipWithError(ember::last_error_message());
  for (auto _ : state) {
    ember::Error e = add.bind();
    e = e == ember::Error::Ok ? add.method->execute() : e;
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_SetInputsAndExecute);

}  // namespace

BENCHMARK_MAIN();
