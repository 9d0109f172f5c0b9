// Shared pieces of the normalization kernels (layer, group and batch norm).
//
//   EMBER_TRY(check_param("layer_norm", weight, n, dtype));
//   RowStats<float> s = row_stats<float>(load, offset, n);  // mean and 1/sqrt(var + eps) inputs
//
// Statistics are computed in the accumulation type (float for 16-bit floats, else the dtype) in two
// passes (mean, then the biased variance), which is what ATen's CPU kernels round like; a row whose
// sum overflows is redone in double so that its mean stays finite, as with ATen's Welford update.
#pragma once

#include <cmath>

#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {

// An optional affine parameter: null, or a tensor of `n` elements of `dtype`.
inline Error check_param(const char* op, const char* name, const Tensor* t, int64_t n,
                         ScalarType dtype) {
  if (t == nullptr) return Error::Ok;
  EMBER_CHECK(t->numel() == n, Error::InvalidArgument, "%s: %s has %lld elements, expected %lld",
              op, name, static_cast<long long>(t->numel()), static_cast<long long>(n));
  EMBER_CHECK(t->dtype() == dtype, Error::InvalidArgument, "%s: %s has dtype %s, expected %s", op,
              name, to_string(t->dtype()), to_string(dtype));
  return Error::Ok;
}

// Element i (row-major) of an optional 1-D-like parameter, or `fallback`.
template <typename T>
compute_type_t<T> param_at(const Tensor* t, int64_t i, compute_type_t<T> fallback) {
  if (t == nullptr) return fallback;
  return static_cast<compute_type_t<T>>(t->data<T>()[offset_of(*t, i)]);
}

template <typename Acc>
struct RowStats {
  Acc mean;
  Acc var;
};

// The two passes of row_stats in double (the mean as a sum of x / n), rounded to Acc at the end; a
// variance beyond Acc's range becomes inf, as ATen's float Welford update overflows to.
template <typename Acc, typename Get>
RowStats<Acc> row_stats_wide(int64_t n, Get get) {
  const double count = static_cast<double>(n);
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += static_cast<double>(get(i)) / count;
  double var = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(get(i)) - mean;
    var += d * d;
  }
  return {static_cast<Acc>(mean), static_cast<Acc>(n > 0 ? var / count : 0.0)};
}

// Mean and biased variance of `n` values read by get(i). Eight interleaved partial sums let the
// compiler vectorize the passes (a single running sum is a serial dependency).
template <typename Acc, typename Get>
RowStats<Acc> row_stats(int64_t n, Get get) {
  constexpr int kLanes = 8;
  Acc part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) part[l] += get(i + l);
  }
  for (; i < n; ++i) part[0] += get(i);
  Acc sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += part[l];
  if (!std::isfinite(sum)) {
    // Finite values whose sum overflows (float32 near its max): ATen's Welford mean stays finite,
    // so redo the row in double with each value divided by n first, which cannot overflow.
    const RowStats<Acc> wide = row_stats_wide<Acc>(n, get);
    if (std::isfinite(wide.mean)) return wide;
  }
  const Acc mean = n > 0 ? sum / static_cast<Acc>(n) : Acc(0);
  Acc sq[kLanes] = {};
  for (i = 0; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const Acc d = get(i + l) - mean;
      sq[l] += d * d;
    }
  }
  for (; i < n; ++i) {
    const Acc d = get(i) - mean;
    sq[0] += d * d;
  }
  Acc var = 0;
  for (int l = 0; l < kLanes; ++l) var += sq[l];
  return {mean, n > 0 ? var / static_cast<Acc>(n) : Acc(0)};
}

}  // namespace ember
