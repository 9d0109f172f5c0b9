#include "backends/cpu/kernels/pad.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace ember::cpu {

void constant_pad(const float* x, std::span<const int64_t> dims, std::span<const int64_t> before,
                  std::span<const int64_t> after, float value, float* y, int threads) {
  const size_t rank = dims.size();
  const int64_t in_row = dims[rank - 1];
  const int64_t out_row = before[rank - 1] + in_row + after[rank - 1];
  // The output's rows: every index of its leading dims.
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= before[d] + dims[d] + after[d];
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t r = 0; r < rows; ++r) {
    float* out = y + r * out_row;
    // The input row this output row holds, or none where a leading index lies in the padding.
    int64_t in_index = 0, rest = r, stride = 1;
    bool inside = true;
    for (size_t d = rank - 1; d-- > 0;) {
      const int64_t n = before[d] + dims[d] + after[d];
      const int64_t i = rest % n - before[d];
      rest /= n;
      inside = inside && i >= 0 && i < dims[d];
      in_index += i * stride;
      stride *= dims[d];
    }
    if (!inside) {
      std::fill(out, out + out_row, value);
      continue;
    }
    std::fill(out, out + before[rank - 1], value);
    std::memcpy(out + before[rank - 1], x + in_index * in_row,
                static_cast<size_t>(in_row) * sizeof(float));
    std::fill(out + before[rank - 1] + in_row, out + out_row, value);
  }
}

}  // namespace ember::cpu
