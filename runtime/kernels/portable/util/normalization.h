// Shared pieces of the normalization kernels (layer, group and batch norm).
//
//   EMBER_TRY(check_param("layer_norm", weight, n, dtype));
//   const RowStats s = row_stats(n, get);  // y = (x - s.mean) * s.rstd(eps), in double
//
// Statistics are computed in double in two passes (mean, then the biased variance), and rows are
// normalized in double (row_stats says why).
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

// A row's mean and biased variance, in double.
struct RowStats {
  double mean = 0;
  double var = 0;
  double rstd(double eps) const { return 1.0 / std::sqrt(var + eps); }
};

// Mean and biased variance of `n` values read by get(i): two passes in double, the mean as the sum
// over n. Double, not ATen's float: from float inputs neither pass can overflow (float32 rows
// near its maximum, whose float statistics are inf or NaN), and the mean carries no rounding of a
// float sum into the deviations x - mean (rows such as [65503.48, 65503.48, 65500.66], where a
// float mean is off by a third of the spread's precision); ATen's Welford update stays that close
// too. Four interleaved partial sums let the compiler vectorize the passes.
template <typename Get>
RowStats row_stats(int64_t n, Get get) {
  if (n <= 0) return {};
  constexpr int kLanes = 4;
  double part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) part[l] += static_cast<double>(get(i + l));
  }
  for (; i < n; ++i) part[0] += static_cast<double>(get(i));
  const double count = static_cast<double>(n);
  const double mean = (part[0] + part[1] + part[2] + part[3]) / count;
  double sq[kLanes] = {};
  for (i = 0; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double d = static_cast<double>(get(i + l)) - mean;
      sq[l] += d * d;
    }
  }
  for (; i < n; ++i) {
    const double d = static_cast<double>(get(i)) - mean;
    sq[0] += d * d;
  }
  return {mean, (sq[0] + sq[1] + sq[2] + sq[3]) / count};
}

}  // namespace ember
