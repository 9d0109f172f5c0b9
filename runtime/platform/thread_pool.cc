#include "runtime/platform/thread_pool.h"

#include <algorithm>

namespace ember {
namespace {
thread_local bool t_in_parallel = false;

// The process-wide pool, made on the first call: with `num_threads` threads where that is given
// (above 0), else one a core, at most 8.
ThreadPool& make_global(int num_threads) {
  static ThreadPool pool(
      num_threads > 0 ? num_threads
                      : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8));
  return pool;
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) { start(std::clamp(num_threads, 1, 256)); }

ThreadPool::~ThreadPool() { stop(); }

ThreadPool& ThreadPool::global() { return make_global(0); }

ThreadPool& ThreadPool::global(int num_threads) {
  ThreadPool& pool = make_global(num_threads);
  if (num_threads > 0) pool.set_num_threads(num_threads);
  return pool;
}

void ThreadPool::set_num_threads(int num_threads) {
  num_threads = std::clamp(num_threads, 1, 256);
  if (num_threads == num_threads_) return;
  std::lock_guard<std::mutex> call(call_mutex_);
  stop();
  start(num_threads);
}

void ThreadPool::start(int num_threads) {
  num_threads_ = num_threads;
  stopping_ = false;
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::worker(int /*index*/) {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    // A worker that wakes after the call's chunks are all taken (its core was busy: an OpenMP
    // thread of a delegate spinning, another process) finds none and sleeps again.
    while (next_chunk_ < num_chunks_) {
      const int64_t c = next_chunk_++;
      lock.unlock();
      t_in_parallel = true;
      (*fn_)(c * chunk_, std::min(n_, (c + 1) * chunk_));
      t_in_parallel = false;
      lock.lock();
      if (++chunks_done_ == num_chunks_) work_done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (num_threads_ == 1 || n <= grain || t_in_parallel) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mutex_);
  // A few chunks a thread, taken in turn: the caller does the chunks a late worker has not
  // taken, and waits only for those in progress, not for every worker to wake.
  // (n / grain, rounded down: chunks of at least `grain`.)
  const int64_t max_chunks =
      std::min<int64_t>(int64_t{kChunksPerThread} * num_threads_, std::max<int64_t>(n / grain, 1));
  std::unique_lock<std::mutex> lock(mutex_);
  fn_ = &fn;
  n_ = n;
  chunk_ = (n + max_chunks - 1) / max_chunks;
  num_chunks_ = (n + chunk_ - 1) / chunk_;
  next_chunk_ = 0;
  chunks_done_ = 0;
  ++generation_;
  work_ready_.notify_all();
  while (next_chunk_ < num_chunks_) {
    const int64_t c = next_chunk_++;
    lock.unlock();
    t_in_parallel = true;
    fn(c * chunk_, std::min(n, (c + 1) * chunk_));
    t_in_parallel = false;
    lock.lock();
    ++chunks_done_;
  }
  work_done_.wait(lock, [&] { return chunks_done_ == num_chunks_; });
  fn_ = nullptr;
}

}  // namespace ember
