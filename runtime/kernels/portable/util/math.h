// Scalar math with ATen's semantics, shared by the element-wise ops.
//
//   int32_t q = floor_divide(int32_t{-7}, int32_t{2});   // -4, like Python
//   float r = python_remainder(-7.f, 2.f);               // 1
//   float m = nan_max(x, y);                             // NaN if either is NaN
//
// Integer helpers never overflow in C++ terms: the one overflowing case (minimum / -1) wraps as
// ATen's results do. Callers check for integer division by zero before calling.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

namespace ember {

template <typename T>
constexpr bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Integer a / b truncated toward zero; b != 0.
template <typename T>
T trunc_divide(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1))
      return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
  }
  return static_cast<T>(a / b);
}

// Integer a / b rounded toward negative infinity (Python's //); b != 0.
template <typename T>
T floor_divide(T a, T b) {
  const T q = trunc_divide(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (b != T(-1) && a % b != 0 && ((a < 0) != (b < 0))) return static_cast<T>(q - 1);
  }
  return q;
}

// Floating a / b rounded toward negative infinity, ATen's way (exact at integer boundaries).
// `round` is applied after every step, as ATen's 16-bit float types round each operation.
template <typename T, typename Round>
T floor_divide_float(T a, T b, Round round) {
  if (b == T(0)) return round(a / b);
  const T mod = round(std::fmod(a, b));
  T div = round(round(a - mod) / b);
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div = round(div - T(1));
  if (div == T(0)) return std::copysign(T(0), round(a / b));
  T floordiv = std::floor(div);
  if (round(div - floordiv) > T(0.5)) floordiv = round(floordiv + T(1));
  return floordiv;
}
template <typename T>
T floor_divide_float(T a, T b) {
  return floor_divide_float(a, b, [](T v) { return v; });
}

// Remainder with the sign of the divisor (Python's %); for integers b != 0.
template <typename T>
T python_remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T mod = std::fmod(a, b);
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;
    return mod;
  } else if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
    T mod = static_cast<T>(a % b);
    if (mod != 0 && ((b < 0) != (mod < 0))) mod = static_cast<T>(mod + b);
    return mod;
  } else {
    return static_cast<T>(a % b);
  }
}

// Remainder with the sign of the dividend (C's fmod); for integers b != 0.
template <typename T>
T c_remainder(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else if constexpr (std::is_signed_v<T>) {
    return b == T(-1) ? T(0) : static_cast<T>(a % b);
  } else {
    return static_cast<T>(a % b);
  }
}

// Integer power by squaring, wrapping on overflow; negative exponents give ATen's results.
template <typename T>
T int_power(T base, T exp) {
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return T(1);
      if (base == -1) return (exp % 2 == 0) ? T(1) : T(-1);
      return T(0);
    }
  }
  U result = 1, b = static_cast<U>(base);
  auto e = static_cast<U>(exp);
  while (e != 0) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e = static_cast<U>(e >> 1u);
  }
  return static_cast<T>(result);
}

// max and min that propagate NaN (torch.maximum / torch.minimum).
template <typename T>
T nan_max(T a, T b) {
  if (is_nan_value(a)) return a;
  if (is_nan_value(b)) return b;
  return a < b ? b : a;  // a when they are equal: ATen's maximum(-0.0, 0.0) is -0.0
}
template <typename T>
T nan_min(T a, T b) {
  if (is_nan_value(a)) return a;
  if (is_nan_value(b)) return b;
  return b < a ? b : a;  // a when they are equal, as ATen's minimum
}

}  // namespace ember
