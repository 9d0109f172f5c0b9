// Broadcasting element-wise loops shared by the binary-op family.
//
//   EMBER_TRY(resize_to_broadcast(a, b, out));
//   for_each_broadcast(a, b, out, [&](int64_t ia, int64_t ib, int64_t io) { ... });
//
// Offsets are in elements and honour each tensor's strides (so channels-last dim orders work).
// Conversions between dtypes go through `load_fn<T>` / `store_fn<T>`, picked once per call, so a
// family op is one template over its compute type instead of one per dtype combination.
#pragma once

#include <cmath>
#include <type_traits>

#include "runtime/core/evalue.h"

namespace ember {

// Resizes `out` to the broadcast shape of a and b. InvalidArgument when they do not broadcast;
// the resize error when `out` is static and of another shape.
Error resize_to_broadcast(const Tensor& a, const Tensor& b, Tensor& out);

// Calls f(offset_a, offset_b, offset_out) for every element of `out`, which has the broadcast
// shape of a and b.
template <typename F>
void for_each_broadcast(const Tensor& a, const Tensor& b, const Tensor& out, F&& f) {
  const int n = out.dim();
  if (out.numel() == 0) return;
  if (a.is_contiguous() && b.is_contiguous() && out.is_contiguous() && a.numel() == out.numel() &&
      b.numel() == out.numel()) {
    for (int64_t i = 0; i < out.numel(); ++i) f(i, i, i);
    return;
  }
  int64_t sa[kMaxRank], sb[kMaxRank], so[kMaxRank], idx[kMaxRank] = {};
  for (int d = 0; d < n; ++d) {
    const int da = d - (n - a.dim()), db = d - (n - b.dim());
    sa[d] = (da < 0 || a.size(da) == 1) ? 0 : a.stride(da);
    sb[d] = (db < 0 || b.size(db) == 1) ? 0 : b.stride(db);
    so[d] = out.stride(d);
  }
  int64_t oa = 0, ob = 0, oo = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    f(oa, ob, oo);
    for (int d = n - 1; d >= 0; --d) {
      if (++idx[d] < out.size(d)) {
        oa += sa[d];
        ob += sb[d];
        oo += so[d];
        break;
      }
      oa -= sa[d] * (idx[d] - 1);
      ob -= sb[d] * (idx[d] - 1);
      oo -= so[d] * (idx[d] - 1);
      idx[d] = 0;
    }
  }
}

template <typename T>
using LoadFn = T (*)(const void* data, int64_t index);
template <typename T>
using StoreFn = void (*)(void* data, int64_t index, T value);

// Converts like a C++ static_cast, except that reduced-precision floats go through float.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
LoadFn<T> load_fn(ScalarType dtype) {
  LoadFn<T> fn = nullptr;
  EMBER_SWITCH_ALL_TYPES(
      dtype, Src, (void)0, fn = [](const void* data, int64_t i) {
        return convert<T>(static_cast<const Src*>(data)[i]);
      });
  return fn;
}

template <typename T>
StoreFn<T> store_fn(ScalarType dtype) {
  StoreFn<T> fn = nullptr;
  EMBER_SWITCH_ALL_TYPES(
      dtype, Dst, (void)0,
      fn = [](void* data, int64_t i, T v) { static_cast<Dst*>(data)[i] = convert<Dst>(v); });
  return fn;
}

// The type a family computes in for `dtype`: float for the 16-bit floats (ATen's opmath type).
template <typename T>
using compute_type_t =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// A Scalar argument (Int, Double or Bool) as compute type T.
template <typename T>
T scalar_to(const EValue& v) {
  if (v.is_double()) return convert<T>(v.to_double());
  if (v.is_int()) return convert<T>(v.to_int());
  return convert<T>(v.to_bool());
}

}  // namespace ember
