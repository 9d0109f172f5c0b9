// A fixed-size pool that splits loops over threads; kernels use it for large work.
//
//   ThreadPool& pool = ThreadPool::global(2);  // the process-wide pool, with 2 threads
//   pool.parallel_for(n, /*grain=*/1024, [&](int64_t begin, int64_t end) { ... });
//
// The calling thread takes part in the work. set_num_threads(1) runs everything inline. Calls to
// parallel_for from several threads at once are serialised; a nested call runs inline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace ember {

class ThreadPool {
 public:
  // fn(begin, end), a reference to the caller's callable rather than a copy of it (parallel_for
  // returns before the callable goes): a call allocates nothing, however much a lambda captures
  // (std::function would, past its small buffer). Only as parallel_for's parameter.
  class RangeFn {
   public:
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
    RangeFn(F&& fn)  // NOLINT(google-explicit-constructor): a lambda converts implicitly
        : object_(const_cast<void*>(static_cast<const void*>(std::addressof(fn)))),
          call_([](void* object, int64_t begin, int64_t end) {
            (*static_cast<std::remove_reference_t<F>*>(object))(begin, end);
          }) {}
    void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

   private:
    void* object_;
    void (*call_)(void* object, int64_t begin, int64_t end);
  };

  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool kernels use. Starts with one thread per core, at most 8.
  static ThreadPool& global();
  // The process-wide pool with `num_threads` threads (clamped to 1..256; 0 or less: as global()).
  // Made at that size where this is its first use, so that no threads start only to be stopped
  // (a join that waits for a thread the OS has not yet run, milliseconds on a busy machine);
  // else resized as set_num_threads. Not to be called while a parallel_for runs.
  static ThreadPool& global(int num_threads);

  int num_threads() const { return num_threads_; }
  // Resizes the pool (clamped to 1..256). Not to be called while a parallel_for runs.
  void set_num_threads(int num_threads);

  // Calls fn on disjoint ranges covering [0, n), each at least `grain` long (except the last),
  // a few a thread. The caller takes any range no worker has started, and returns once every
  // range is done (not once every worker has woken: a worker whose core is busy may wake
  // after the call and find nothing left).
  void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

 private:
  void start(int num_threads);
  void stop();
  void worker(int index);

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 0;
  int64_t num_chunks_ = 0;
  int64_t next_chunk_ = 0;
  int64_t chunks_done_ = 0;
  static constexpr int kChunksPerThread = 4;
  uint64_t generation_ = 0;
  bool stopping_ = false;
};

}  // namespace ember
