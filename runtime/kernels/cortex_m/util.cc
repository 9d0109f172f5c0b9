#include "runtime/kernels/cortex_m/util.h"

#include <cstdio>

namespace ember::cortex_m {
namespace {

// "[1, 2, 3]" into `buf` (no heap: the kernels allocate nothing).
const char* format_sizes(std::span<const int64_t> sizes, char* buf, size_t n) {
  size_t used = 0;
  for (size_t i = 0; i <= sizes.size() && used < n; ++i) {
    const int w = i == sizes.size()
                      ? std::snprintf(buf + used, n - used, "]")
                      : std::snprintf(buf + used, n - used, "%s%lld", i == 0 ? "[" : ", ",
                                      static_cast<long long>(sizes[i]));
    if (w < 0) break;
    used += static_cast<size_t>(w);
  }
  if (sizes.empty()) std::snprintf(buf, n, "[]");
  return buf;
}

}  // namespace

Error read_int(const EValue& v, const char* op, const char* what, int64_t lo, int64_t hi,
               int32_t* out) {
  EMBER_CHECK(v.is_int(), Error::InvalidArgument, "%s: %s must be an Int, got %s", op, what,
              to_string(v.tag()));
  const int64_t x = v.to_int();
  EMBER_CHECK(x >= lo && x <= hi, Error::InvalidArgument, "%s: %s is %lld, outside [%lld, %lld]",
              op, what, static_cast<long long>(x), static_cast<long long>(lo),
              static_cast<long long>(hi));
  *out = static_cast<int32_t>(x);
  return Error::Ok;
}

Error read_activation(const EValue& min, const EValue& max, const char* op, int32_t* lo,
                      int32_t* hi) {
  EMBER_TRY(read_int(min, op, "activation_min", INT8_MIN, INT8_MAX, lo));
  EMBER_TRY(read_int(max, op, "activation_max", INT8_MIN, INT8_MAX, hi));
  EMBER_CHECK(*lo <= *hi, Error::InvalidArgument,
              "%s: activation_min %d is above activation_max %d", op, *lo, *hi);
  return Error::Ok;
}

Error read_pair(const EValue& v, const char* op, const char* what, int64_t min, int64_t out[2]) {
  EMBER_CHECK(v.tag() == Tag::ListInt, Error::InvalidArgument, "%s: %s must be an int list", op,
              what);
  const std::span<const int64_t> list = v.to_int_list();
  EMBER_CHECK(list.size() == 2, Error::InvalidArgument, "%s: %s has %zu entries, expected 2", op,
              what, list.size());
  // Bounded so that no size arithmetic below can overflow int64.
  constexpr int64_t kMax = int64_t{1} << 20;
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(list[i] >= min && list[i] <= kMax, Error::InvalidArgument,
                "%s: %s[%d] is %lld, outside [%lld, %lld]", op, what, i,
                static_cast<long long>(list[i]), static_cast<long long>(min),
                static_cast<long long>(kMax));
    out[i] = list[i];
  }
  return Error::Ok;
}

Error check_dtype(const Tensor& t, ScalarType want, const char* op, const char* what) {
  EMBER_CHECK(t.dtype() == want, Error::InvalidArgument, "%s: %s has dtype %s, expected %s", op,
              what, to_string(t.dtype()), to_string(want));
  return Error::Ok;
}

Error check_rank(const Tensor& t, int rank, const char* op, const char* what) {
  EMBER_CHECK(t.dim() == rank, Error::InvalidArgument, "%s: %s has rank %d, expected %d", op, what,
              t.dim(), rank);
  return Error::Ok;
}

Error check_sizes(const Tensor& t, std::span<const int64_t> want, const char* op,
                  const char* what) {
  bool same = static_cast<size_t>(t.dim()) == want.size();
  for (size_t i = 0; same && i < want.size(); ++i) same = t.size(static_cast<int>(i)) == want[i];
  if (same) return Error::Ok;
  int64_t have[kMaxRank];
  for (int i = 0; i < t.dim(); ++i) have[i] = t.size(i);
  char a[160], b[160];
  return fail(Error::InvalidArgument, "%s: %s has sizes %s, expected %s", op, what,
              format_sizes({have, static_cast<size_t>(t.dim())}, a, sizeof a),
              format_sizes(want, b, sizeof b));
}

Error check_vector(const Tensor& t, ScalarType dtype, int64_t count, const char* op,
                   const char* what) {
  EMBER_TRY(check_dtype(t, dtype, op, what));
  EMBER_CHECK(t.numel() == count, Error::InvalidArgument, "%s: %s has %lld elements, expected %lld",
              op, what, static_cast<long long>(t.numel()), static_cast<long long>(count));
  EMBER_CHECK(is_dense(t), Error::InvalidArgument, "%s: %s must be dense", op, what);
  return Error::Ok;
}

Error check_shifts(const Tensor& shifts, const char* op) {
  const int32_t* s = shifts.data<int32_t>();
  for (int64_t i = 0; i < shifts.numel(); ++i) {
    EMBER_CHECK(s[i] >= kMinShift && s[i] <= kMaxShift, Error::InvalidArgument,
                "%s: requantize_shifts[%lld] is %d, outside [%d, %d]", op,
                static_cast<long long>(i), s[i], kMinShift, kMaxShift);
  }
  return Error::Ok;
}

bool dense_in_order(const Tensor& t, std::span<const int> order) {
  if (order.size() != static_cast<size_t>(t.dim())) return false;
  int64_t expected = 1;
  for (size_t k = order.size(); k-- > 0;) {
    const int d = order[k];
    if (t.size(d) != 1 && t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

bool is_dense(const Tensor& t) {
  int order[kMaxRank];
  for (int i = 0; i < t.dim(); ++i) order[i] = i;
  return dense_in_order(t, {order, static_cast<size_t>(t.dim())});
}

bool same_layout(const Tensor& a, const Tensor& b) {
  if (a.dim() != b.dim()) return false;
  for (int i = 0; i < a.dim(); ++i) {
    if (a.size(i) != b.size(i)) return false;
    if (a.size(i) != 1 && a.stride(i) != b.stride(i)) return false;
  }
  return true;
}

// The quantized dtype of a ScalarType code (1: int8, 2: int16), with its range.
Error quantized_dtype(const EValue& code, const char* op, ScalarType* type, int32_t* lo,
                      int32_t* hi) {
  int32_t c = 0;
  EMBER_TRY(read_int32(code, op, "dtype", &c));
  EMBER_CHECK(c == 1 || c == 2, Error::InvalidArgument,
              "%s: dtype %d is not supported (1: int8 or 2: int16)", op, c);
  *type = c == 1 ? ScalarType::Char : ScalarType::Short;
  *lo = c == 1 ? INT8_MIN : INT16_MIN;
  *hi = c == 1 ? INT8_MAX : INT16_MAX;
  return Error::Ok;
}

Error pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode, const char* op,
                    const char* axis, int64_t* out) {
  const int64_t num = in + 2 * p - k;
  EMBER_CHECK(num >= 0, Error::InvalidArgument,
              "%s: kernel %lld is larger than the padded input %lld along %s", op,
              static_cast<long long>(k), static_cast<long long>(in + 2 * p), axis);
  int64_t o = num / s + 1;
  if (ceil_mode && num % s != 0) ++o;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  // A window with no input position: the kernel errors (avg pool divides by its count).
  for (int64_t i = 0; i < o; ++i) {
    const int64_t start = i * s - p;
    EMBER_CHECK(start < in && start + k > 0, Error::InvalidArgument,
                "%s: pooling window %lld along %s covers no input position (padding %lld)", op,
                static_cast<long long>(i), axis, static_cast<long long>(p));
  }
  *out = o;
  return Error::Ok;
}

Error conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, const char* op,
                    const char* axis, int64_t* out) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1;
  EMBER_CHECK(num >= 0, Error::InvalidArgument,
              "%s: the dilated kernel (%lld) is larger than the padded input (%lld) along %s", op,
              static_cast<long long>(d * (k - 1) + 1), static_cast<long long>(in + 2 * p), axis);
  *out = num / s + 1;
  return Error::Ok;
}

Error check_activation(const Tensor& t, const char* op, const char* what) {
  EMBER_TRY(check_dtype(t, ScalarType::Char, op, what));
  EMBER_CHECK(t.dim() == 4, Error::InvalidArgument, "%s: %s must be 4-D [N, C, H, W], got rank %d",
              op, what, t.dim());
  return Error::Ok;
}

}  // namespace ember::cortex_m
