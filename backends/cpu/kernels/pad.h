// Constant padding of a dense row-major tensor (PyTorch's constant_pad_nd with non-negative pads):
// every element of x lands in y shifted by `before`, every other element of y is `value`.
//
//   const int64_t dims[] = {1, 3, 4, 4}, before[] = {0, 0, 1, 1}, after[] = {0, 0, 1, 1};
//   constant_pad(x, dims, before, after, 0.f, y, threads);   // y is [1, 3, 6, 6]
#pragma once

#include <cstdint>
#include <span>

namespace ember::cpu {

// y[i + before] = x[i] for every index i of x (dims), y = `value` elsewhere; y's dims are
// dims + before + after. x and y are dense row-major and do not overlap; rank >= 1. Rows of y
// (its last dim) are split between `threads` OpenMP threads. NaN and the sign of zero are copied
// as they are.
void constant_pad(const float* x, std::span<const int64_t> dims, std::span<const int64_t> before,
                  std::span<const int64_t> after, float value, float* y, int threads);

}  // namespace ember::cpu
