// Monotonic time for benchmarks and `ember run --repeat`.
//
//   uint64_t t0 = now_ns();  run();  double ms = (now_ns() - t0) / 1e6;
#pragma once

#include <cstdint>
#include <ctime>

namespace ember {

inline uint64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ember
