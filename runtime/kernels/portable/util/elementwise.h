// Broadcasting element-wise loops shared by the unary, binary and ternary families.
//
//   EMBER_TRY(resize_to_broadcast(a, b, out));
//   for_each_broadcast(a, b, out, [&](int64_t ia, int64_t ib, int64_t io) { ... });
//   for_each_broadcast_n<3>({&c, &a, &b}, out, ctx.threads, [&](const int64_t* in, int64_t o) {});
//
// Offsets are in elements and honour each tensor's strides (so channels-last dim orders work).
// Conversions between dtypes go through `load_fn<T>` / `store_fn<T>`, picked once per call, so a
// family op is one template over its compute type instead of one per dtype combination.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include "runtime/core/evalue.h"
#include "runtime/platform/thread_pool.h"

namespace ember {

// Elements per task below which a loop is not worth splitting over threads.
inline constexpr int64_t kParallelGrain = 32768;

// The broadcast shape of `ins` into `sizes` (rank returned through `rank`). InvalidArgument when
// they do not broadcast.
Error broadcast_shape(std::span<const Tensor* const> ins, int32_t* sizes, int& rank);

// Resizes `out` to the broadcast shape of `ins`. InvalidArgument when they do not broadcast or
// `out` has another rank; the resize error when `out` is static and of another shape.
Error resize_to_broadcast(std::span<const Tensor* const> ins, Tensor& out);
Error resize_to_broadcast(const Tensor& a, const Tensor& b, Tensor& out);

// Calls f(in_offsets, out_offset) for every element of `out`, which has the broadcast shape of
// `ins`; in_offsets[k] is the element offset into ins[k]. Splits the work over `pool` (may be
// null) when it is large, so `f` must only write the element at out_offset.
template <size_t N, typename F>
void for_each_broadcast_n(const std::array<const Tensor*, N>& ins, const Tensor& out,
                          ThreadPool* pool, F&& f) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  // Flat: every operand is dense over the output's elements, or one element (a scalar operand:
  // x * 0.5, x.pow(2)), read at offset 0.
  bool flat = out.is_contiguous();
  int64_t step[N] = {};
  for (size_t k = 0; k < N; ++k) {
    const Tensor* t = ins[k];
    flat = flat && ((t->is_contiguous() && t->numel() == numel) || t->numel() == 1);
    step[k] = t->numel() == numel ? 1 : 0;
  }
  const int n = flat ? 0 : out.dim();  // a flat loop needs no strides
  int64_t st[N + 1][kMaxRank];
  for (int d = 0; d < n; ++d) {
    for (size_t k = 0; k < N; ++k) {
      const int dk = d - (n - ins[k]->dim());
      st[k][d] = (dk < 0 || ins[k]->size(dk) == 1) ? 0 : ins[k]->stride(dk);
    }
    st[N][d] = out.stride(d);
  }
  auto range = [&](int64_t begin, int64_t end) {
    int64_t off[N + 1] = {};
    if (flat) {
      for (int64_t i = begin; i < end; ++i) {
        for (size_t k = 0; k < N; ++k) off[k] = i * step[k];
        f(static_cast<const int64_t*>(off), i);
      }
      return;
    }
    int64_t idx[kMaxRank] = {};
    int64_t rest = begin;
    for (int d = n - 1; d >= 0; --d) {
      idx[d] = rest % out.size(d);
      rest /= out.size(d);
      for (size_t k = 0; k <= N; ++k) off[k] += idx[d] * st[k][d];
    }
    if (n == 0) {  // one element
      f(static_cast<const int64_t*>(off), off[N]);
      return;
    }
    // A run along the last dim at a time: there every offset moves by its constant stride.
    const int last = n - 1;
    const int64_t len = out.size(last);
    for (int64_t i = begin; i < end;) {
      const int64_t run = std::min(end - i, len - idx[last]);
      for (int64_t j = 0; j < run; ++j) {
        f(static_cast<const int64_t*>(off), off[N]);
        for (size_t k = 0; k <= N; ++k) off[k] += st[k][last];
      }
      i += run;
      idx[last] += run;
      if (idx[last] < len) continue;
      for (size_t k = 0; k <= N; ++k) off[k] -= st[k][last] * len;
      idx[last] = 0;
      for (int d = last - 1; d >= 0; --d) {
        if (++idx[d] < out.size(d)) {
          for (size_t k = 0; k <= N; ++k) off[k] += st[k][d];
          break;
        }
        for (size_t k = 0; k <= N; ++k) off[k] -= st[k][d] * (idx[d] - 1);
        idx[d] = 0;
      }
    }
  };
  if (pool == nullptr || numel < 2 * kParallelGrain) {
    range(0, numel);
  } else {
    // A one-pointer closure fits std::function's local storage: no heap allocation per call.
    const auto* body = &range;
    pool->parallel_for(numel, kParallelGrain, [body](int64_t b, int64_t e) { (*body)(b, e); });
  }
}

// Calls f(offset_a, offset_b, offset_out) for every element of `out`, which has the broadcast
// shape of a and b (single-threaded).
template <typename F>
void for_each_broadcast(const Tensor& a, const Tensor& b, const Tensor& out, F&& f) {
  for_each_broadcast_n<2>({&a, &b}, out, nullptr,
                          [&](const int64_t* in, int64_t o) { f(in[0], in[1], o); });
}

template <typename T>
using LoadFn = T (*)(const void* data, int64_t index);
template <typename T>
using StoreFn = void (*)(void* data, int64_t index, T value);

// A floating value as integer type To without C++ undefined behaviour, as x86 converts it for
// ATen: to int64 through a 64-bit conversion, to every narrower type through a 32-bit one then
// wrapped to To's width. In-range values truncate toward zero; NaN, infinities and values outside
// the conversion's range give its minimum (INT64_MIN, or INT32_MIN whose low bits are 0), so
// 3e9 as int32 is INT32_MIN, as int16 0, and 70000.25 as int16 4464.
template <typename To, typename From>
inline To float_to_int(From v) {
  const double d = static_cast<double>(v);
  if constexpr (sizeof(To) == 8) {
    int64_t i = std::numeric_limits<int64_t>::min();
    if (d > -9.2233720368547758e18 && d < 9.2233720368547758e18) i = static_cast<int64_t>(d);
    return static_cast<To>(i);
  } else {
    int32_t i = std::numeric_limits<int32_t>::min();
    if (d > -2147483649.0 && d < 2147483648.0) i = static_cast<int32_t>(d);
    return static_cast<To>(static_cast<uint32_t>(i));
  }
}

// Converts like a C++ static_cast, except that reduced-precision floats go through float and
// floating -> integer conversions are defined for every input (float_to_int).
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_int<To>(v);
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

// A Scalar argument held as a 0-dim tensor over its own storage (int64, double or bool), so that
// families treat `tensor op scalar` as `tensor op 0-dim tensor`. Not copyable: the tensor points
// into this object.
class ScalarTensor {
 public:
  ScalarTensor() = default;
  explicit ScalarTensor(const EValue& v) { reset(v); }
  ScalarTensor(const ScalarTensor&) = delete;
  ScalarTensor& operator=(const ScalarTensor&) = delete;
  // Holds `v` (a None holds false).
  void reset(const EValue& v);
  const Tensor& tensor() const { return tensor_; }

 private:
  union {
    int64_t i;
    double d;
    bool b;
  } value_ = {};
  Tensor tensor_;
};

// Dtype categories an op accepts, as a bit mask over the compute dtype. float16 is its own
// category because ATen's CPU kernels (libtorch 1.13, the reference) lack it for many ops that
// have bfloat16; kAcceptFloat is float32, float64 and bfloat16.
inline constexpr unsigned kAcceptBool = 1, kAcceptInt = 2, kAcceptFloat = 4, kAcceptHalf = 8;
inline constexpr unsigned kAcceptFloating = kAcceptFloat | kAcceptHalf;
inline constexpr unsigned kAcceptNoHalf = kAcceptBool | kAcceptInt | kAcceptFloat;
inline constexpr unsigned kAcceptAll = kAcceptNoHalf | kAcceptHalf;

// The category bit of a C++ compute type, to skip instantiating functors for dtypes an op refuses
// (float16 computes in float, so it counts as kAcceptFloat here).
template <typename CTYPE>
constexpr unsigned category_of() {
  if constexpr (std::is_same_v<CTYPE, bool>) {
    return kAcceptBool;
  } else if constexpr (std::is_integral_v<CTYPE>) {
    return kAcceptInt;
  } else {
    return kAcceptFloat;
  }
}

// What an element-wise op accepts and how it picks its compute and result dtypes.
struct ElementwiseSpec {
  const char* name;
  unsigned accepts = kAcceptAll;     // categories of the dtype the op computes on
  bool int_to_float = false;         // integer and bool inputs compute in float32 (exp, true div)
  bool bool_result = false;          // the result dtype is bool (comparisons, logical ops)
  bool nonzero_int_divisor = false;  // an integer zero in the last operand is an error
};

// InvalidArgument naming the op when `spec` refuses `dtype`'s category.
Error check_accepts(const ElementwiseSpec& spec, ScalarType dtype);

// PyTorch's alpha rules: a bool alpha only for bool tensors, no floating alpha for integers.
Error check_alpha(const char* op_name, ScalarType common, const EValue& alpha);

// InvalidArgument when `divisor` (a Tensor or Scalar EValue) holds an integer zero (ATen raises
// ZeroDivisionError for integer division and remainder).
Error check_nonzero_divisor(const char* op_name, const EValue& divisor);

// out = in converted to out's dtype, laid out in out's dim order (_to_copy, clone). Errors: out of
// another rank (InvalidArgument); the resize error of `out`.
Error copy_out(ThreadPool* pool, const Tensor& in, Tensor& out, const char* op_name);

// Wraps a dim index into [0, rank) (a 0-dim tensor counts as rank 1). InvalidArgument when out of
// range.
Error wrap_dim(int64_t dim, int rank, const char* op_name, int& wrapped);

}  // namespace ember
