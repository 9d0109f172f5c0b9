// One Program shared by several Methods that load and execute at once on different threads, each
// with its own memory (the supported pattern). CI runs this under ThreadSanitizer.
#include <algorithm>
#include <mutex>
#include <thread>

#include "compiler/emit/pte_writer.h"
#include "runtime/platform/thread_pool.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

using emit::MethodSpec;
using emit::TensorSpec;

// y = (x * x + x) * c over 4096 floats, with c a constant 0.5.
std::vector<uint8_t> program_bytes() {
  constexpr int32_t n = 4096;
  MethodSpec m;
  std::vector<uint8_t> half(n * 4);
  for (int i = 0; i < n; ++i) {
    const float v = 0.5f;
    std::memcpy(half.data() + i * 4, &v, 4);
  }
  const int32_t c = m.add(TensorSpec::constant(ScalarType::Float, {n}, half));
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {n}, 0));
  const int32_t sq = m.add(TensorSpec::planned(ScalarType::Float, {n}, n * 4));
  const int32_t s = m.add(TensorSpec::planned(ScalarType::Float, {n}, 2 * n * 4));
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {n}, n * 4));
  const int32_t alpha = m.add(int64_t{1});
  m.inputs = {x};
  m.outputs = {y};
  m.call("aten::mul", "out", {x, x, sq, sq});
  m.call("aten::add", "out", {sq, x, alpha, s, s});
  m.call("aten::mul", "out", {s, c, y, y});
  m.arena_sizes = {3 * n * 4};
  Result<emit::WrittenProgram> w = emit::write_program(emit::ProgramSpec{{m}});
  EXPECT_TRUE(w.ok()) << last_error_message();
  return w->pte;
}

TEST(Concurrency, OneProgramManyMethodsOnManyThreads) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  AlignedBytes bytes(program_bytes());
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  ThreadPool::global().set_num_threads(2);

  constexpr int kThreads = 4, kRuns = 25;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Result<MethodMeta> meta = program->method_meta("forward");
      if (!meta.ok()) {
        ++failures[t];
        return;
      }
      MethodMemory memory(*meta);
      Result<Method> method = program->load_method("forward", &memory.manager);
      if (!method.ok()) {
        ++failures[t];
        return;
      }
      std::vector<float> x(4096);
      for (int run = 0; run < kRuns; ++run) {
        const float base = static_cast<float>(t * 100 + run);
        for (size_t i = 0; i < x.size(); ++i) x[i] = base + static_cast<float>(i % 7);
        Tensor tx = float_tensor(x, {4096});
        if (method->set_input(tx, 0) != Error::Ok || method->execute() != Error::Ok) {
          ++failures[t];
          continue;
        }
        const float* y = method->get_output(0)->to_tensor().data<float>();
        for (size_t i = 0; i < x.size(); ++i) {
          const float expected = (x[i] * x[i] + x[i]) * 0.5f;
          if (y[i] != expected) {
            ++failures[t];
            break;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(Concurrency, ThreadPoolCalledFromSeveralThreads) {
  ThreadPool& pool = ThreadPool::global();
  pool.set_num_threads(2);
  std::vector<std::vector<int>> results(3, std::vector<int>(10000, 0));
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        pool.parallel_for(10000, 100, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) results[t][i] += 1;
        });
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const auto& r : results) {
    for (int v : r) ASSERT_EQ(v, 20);
  }
}

// global(n) is the one process-wide pool, with n threads: made at that size on its first use (a
// process of its own under ctest), resized on a later one; 0 leaves it as it is.
TEST(Concurrency, GlobalThreadPoolTakesItsSize) {
  ThreadPool& pool = ThreadPool::global(3);
  EXPECT_EQ(pool.num_threads(), 3);
  EXPECT_EQ(&ThreadPool::global(), &pool);
  EXPECT_EQ(&ThreadPool::global(1), &pool);
  EXPECT_EQ(pool.num_threads(), 1);
  EXPECT_EQ(ThreadPool::global(0).num_threads(), 1);
  std::vector<int> seen(1000, 0);
  ThreadPool::global(2).parallel_for(1000, 10, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) seen[i] += 1;
  });
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 1000);
}

// parallel_for covers [0, n) once, in ranges of at least `grain` (the last may be shorter), a
// few a thread: the caller takes the chunks a late worker has not (its core busy with a
// delegate's OpenMP threads), so there are more chunks than threads.
TEST(Concurrency, ThreadPoolCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 7, 100, 1000, 12345}) {
      for (int64_t grain : {1, 10, 1000}) {
        SCOPED_TRACE(std::to_string(threads) + " threads, n " + std::to_string(n) + ", grain " +
                     std::to_string(grain));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
          std::lock_guard<std::mutex> lock(mu);
          ranges.emplace_back(begin, end);
        });
        std::sort(ranges.begin(), ranges.end());
        ASSERT_FALSE(ranges.empty());
        EXPECT_EQ(ranges.front().first, 0);
        EXPECT_EQ(ranges.back().second, n);
        for (size_t i = 0; i < ranges.size(); ++i) {
          if (i + 1 < ranges.size()) {
            EXPECT_EQ(ranges[i].second, ranges[i + 1].first);
            EXPECT_GE(ranges[i].second - ranges[i].first, grain);
          }
          EXPECT_LT(ranges[i].first, ranges[i].second);
        }
        EXPECT_LE(static_cast<int64_t>(ranges.size()), 4 * threads);
      }
    }
  }
}

}  // namespace
}  // namespace ember::testing
