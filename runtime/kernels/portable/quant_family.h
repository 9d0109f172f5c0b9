// The quantize / dequantize family (quantized_decomposed::*): per tensor, per channel, per token
// and per channel group share one loop each, parametrised by how an element finds its scale and
// zero point.
//
//   QuantParams p{groups_per_channel(in, axis), ScaleSource::of(scales), ZeroPointSource::of(zps)};
//   quantize<double, float, int8_t>(in, out, p, quant_min, quant_max, QuantOrder::kRoundThenAdd);
//
// The reference is PyTorch's Python implementation (torch/ao/quantization/fx/_decomposed.py),
// which is a chain of ATen tensor ops: every op rounds to its result dtype, and the dtype each op
// computes in follows ATen's type promotion. The loops below reproduce that chain op by op (no
// fused multiply-add: the portable library is built without contraction), so results are
// bit-identical, ties and NaN included.
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {

// Element i of a row-major tensor viewed as [outer, groups, inner] uses parameter group
// (i / inner) % groups. Per tensor: one group; per channel along `axis`: groups = size(axis),
// inner = product of the sizes after it; per token: inner = the last size.
struct QuantGroups {
  int64_t outer = 1;
  int64_t groups = 1;
  int64_t inner = 0;
};

inline QuantGroups groups_per_tensor(const Tensor& t) { return {1, 1, t.numel()}; }

// `axis` already wrapped into [0, dim).
inline QuantGroups groups_per_channel(const Tensor& t, int axis) {
  QuantGroups g{1, t.size(axis), 1};
  for (int d = 0; d < axis; ++d) g.outer *= t.size(d);
  for (int d = axis + 1; d < t.dim(); ++d) g.inner *= t.size(d);
  return g;
}

// Tokens are the rows of the last dim: every element of a row shares a parameter.
inline QuantGroups groups_per_token(const Tensor& t) {
  QuantGroups g{1, 1, t.dim() == 0 ? 1 : t.size(t.dim() - 1)};
  for (int d = 0; d + 1 < t.dim(); ++d) g.groups *= t.size(d);
  return g;
}

// Runs of `size` consecutive elements (size > 0 dividing the last dim): per channel group.
inline QuantGroups groups_of_size(const Tensor& t, int64_t size) {
  return {1, t.numel() / size, size};
}

// A scale: one double (a `float` argument) or one per group from a float32/float64 tensor whose
// numel is the number of groups, or 1 (broadcast, as PyTorch's view + broadcasting allows).
struct ScaleSource {
  double value = 1.0;
  const void* data = nullptr;
  LoadFn<double> load = nullptr;
  int64_t stride = 0;

  double at(int64_t group) const { return data == nullptr ? value : load(data, group * stride); }
  static ScaleSource of(const Tensor& t) {
    return {0.0, t.data(), load_fn<double>(t.dtype()), t.numel() == 1 ? 0 : 1};
  }
};

// An integer zero point: none (0), one int argument, or one per group from an integer tensor, as
// ScaleSource.
struct ZeroPointSource {
  int64_t value = 0;
  const void* data = nullptr;
  LoadFn<int64_t> load = nullptr;
  int64_t stride = 0;
  // The dtype x - zp has in ATen, promote_types(input, zero points), in which it wraps around.
  // of() assumes zero points at least as wide as the input (int32 / int64 ones with an input of
  // at most 32 bits); a kernel taking narrower ones sets it.
  ScalarType diff_dtype = ScalarType::Long;

  int64_t at(int64_t group) const { return data == nullptr ? value : load(data, group * stride); }
  static ZeroPointSource of(const Tensor& t) {
    return {0, t.data(), load_fn<int64_t>(t.dtype()), t.numel() == 1 ? 0 : 1, t.dtype()};
  }
};

struct QuantParams {
  QuantGroups groups;
  ScaleSource scale;
  ZeroPointSource zero_point;
};

// Calls f(group, in_offset, out_offset) for every element, in row-major order.
template <typename F>
void for_each_quant_element(const Tensor& in, const Tensor& out, const QuantGroups& g, F&& f) {
  const bool dense = in.is_contiguous() && out.is_contiguous();
  int64_t i = 0;
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t k = 0; k < g.groups; ++k) {
      for (int64_t j = 0; j < g.inner; ++j, ++i) {
        if (dense) {
          f(k, i, i);
        } else {
          f(k, offset_of(in, i), offset_of(out, i));
        }
      }
    }
  }
}

// torch.clamp: NaN stays NaN, and when lo > hi every value becomes hi (min(max(v, lo), hi)).
template <typename C>
inline C clamp_propagating_nan(C v, C lo, C hi) {
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return v;
}

// Where the zero point joins: per tensor and per channel add it to the rounded product,
// per token adds it before rounding (the Python references differ).
enum class QuantOrder { kRoundThenAdd, kAddThenRound };

// out = clamp(round(x * inv) + zp, quant_min, quant_max) as O, with inv = 1 / scale computed in S
// then used in the compute type C (ATen's promotion of the input and the reciprocal): per tensor
// S = double (Python's 1.0 / scale) and C = float; per channel / token S = the scales' dtype.
// NaN converts as ATen's float -> int cast does on x86 (float_to_int).
template <typename S, typename C, typename O>
void quantize(const Tensor& in, Tensor& out, const QuantParams& p, int64_t quant_min,
              int64_t quant_max, QuantOrder order) {
  const LoadFn<C> load = load_fn<C>(in.dtype());
  const C lo = static_cast<C>(quant_min), hi = static_cast<C>(quant_max);
  O* dst = out.data<O>();
  int64_t cached = -1;
  C inv = 0, zp = 0;
  for_each_quant_element(in, out, p.groups, [&](int64_t group, int64_t src, int64_t o) {
    if (group != cached) {
      cached = group;
      inv = static_cast<C>(S(1) / static_cast<S>(p.scale.at(group)));
      zp = static_cast<C>(p.zero_point.at(group));
    }
    const C product = load(in.data(), src) * inv;
    const C v = order == QuantOrder::kAddThenRound ? std::nearbyint(product + zp)
                                                   : std::nearbyint(product) + zp;
    dst[o] = float_to_int<O>(clamp_propagating_nan(v, lo, hi));
  });
}

// Per tensor: (x.to(D) - zp) * scale, each op in D's opmath type and rounded to D. ATen's sub
// casts the Python int zp to D, while its mul reads the Python float scale at opmath precision.
template <typename D>
void dequantize_in_out_dtype(const Tensor& in, Tensor& out, const QuantParams& p) {
  using M = compute_type_t<D>;
  const LoadFn<D> load = load_fn<D>(in.dtype());
  const auto zp = static_cast<M>(convert<D>(p.zero_point.value));
  const auto scale = static_cast<M>(p.scale.value);
  D* dst = out.data<D>();
  for_each_quant_element(in, out, p.groups, [&](int64_t, int64_t src, int64_t o) {
    const D shifted = D(static_cast<M>(load(in.data(), src)) - zp);
    dst[o] = D(static_cast<M>(shifted) * scale);
  });
}

// shifted * scale in the scales' dtype S, rounded to S as ATen's mul rounds it.
template <typename S>
inline S scale_in(S shifted, double scale) {
  using M = compute_type_t<S>;
  return S(static_cast<M>(shifted) * static_cast<M>(convert<S>(scale)));
}

// v (two's complement bits) as integer dtype t holds it: ATen's integer ops wrap around.
inline int64_t wrap_to(ScalarType t, uint64_t v) {
  switch (t) {
    case ScalarType::Byte:
      return static_cast<uint8_t>(v);
    case ScalarType::Char:
      return static_cast<int8_t>(v);
    case ScalarType::Short:
      return static_cast<int16_t>(v);
    case ScalarType::Int:
      return static_cast<int32_t>(v);
    default:
      return static_cast<int64_t>(v);
  }
}

// Per channel, per token and per channel group: (x - zp) * scales, the subtraction in ATen's
// promoted integer type (zero_point.diff_dtype, wrapping: int8 - int8 stays int8), the product in
// the scales' dtype S, then converted to out's dtype D. Without zero points: x * scales.
template <typename S, typename D>
void dequantize_in_scale_dtype(const Tensor& in, Tensor& out, const QuantParams& p) {
  const LoadFn<int64_t> load = load_fn<int64_t>(in.dtype());
  const ScalarType diff_dtype = p.zero_point.diff_dtype;
  D* dst = out.data<D>();
  for_each_quant_element(in, out, p.groups, [&](int64_t group, int64_t src, int64_t o) {
    const auto x = static_cast<uint64_t>(load(in.data(), src));
    const auto zp = static_cast<uint64_t>(p.zero_point.at(group));
    const int64_t shifted = wrap_to(diff_dtype, x - zp);
    dst[o] = convert<D>(scale_in<S>(convert<S>(shifted), p.scale.at(group)));
  });
}

// --- argument checks shared by the family (PyTorch's asserts, as errors)

// A ScalarType argument; InvalidArgument naming `op` when the code is not one Ember computes with.
inline Error scalar_type_arg(const char* op, const EValue& v, ScalarType* type) {
  const int64_t code = v.to_int();
  const auto t = static_cast<ScalarType>(code);
  EMBER_CHECK(code >= 0 && code < kNumScalarTypes && is_supported(t), Error::InvalidArgument,
              "%s: ScalarType code %lld is not supported", op, static_cast<long long>(code));
  *type = t;
  return Error::Ok;
}

// The quantized dtypes: uint8, int8, int16, int32 (PyTorch's uint16 and float8 are not supported
// by Ember's tensors).
inline bool quantized_dtype_bounds(ScalarType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case ScalarType::Byte:
      *lo = 0, *hi = 255;
      return true;
    case ScalarType::Char:
      *lo = -128, *hi = 127;
      return true;
    case ScalarType::Short:
      *lo = -32768, *hi = 32767;
      return true;
    case ScalarType::Int:
      *lo = INT32_MIN, *hi = INT32_MAX;
      return true;
    default:
      return false;
  }
}

// dtype is a quantized dtype, and quant_min / quant_max lie within its range.
inline Error check_quant_range(const char* op, ScalarType dtype, int64_t quant_min,
                               int64_t quant_max) {
  int64_t lo = 0, hi = 0;
  EMBER_CHECK(quantized_dtype_bounds(dtype, &lo, &hi), Error::InvalidArgument,
              "%s: unsupported quantized dtype %s (uint8, int8, int16 or int32)", op,
              to_string(dtype));
  EMBER_CHECK(quant_min >= lo, Error::InvalidArgument,
              "%s: quant_min out of bounds for dtype %s, quant_min_lower_bound: %lld quant_min: "
              "%lld",
              op, to_string(dtype), static_cast<long long>(lo), static_cast<long long>(quant_min));
  EMBER_CHECK(quant_max <= hi, Error::InvalidArgument,
              "%s: quant_max out of bounds for dtype %s, quant_max_upper_bound: %lld quant_max: "
              "%lld",
              op, to_string(dtype), static_cast<long long>(hi), static_cast<long long>(quant_max));
  return Error::Ok;
}

// A parameter tensor with `count` elements (or 1 when `broadcast`).
inline Error check_param_count(const char* op, const Tensor& t, int64_t count, const char* what,
                               bool broadcast) {
  EMBER_CHECK(t.numel() == count || (broadcast && t.numel() == 1), Error::InvalidArgument,
              "%s: %s has %lld elements, expected %lld", op, what,
              static_cast<long long>(t.numel()), static_cast<long long>(count));
  return Error::Ok;
}

// A scales tensor: float32 or float64 with `count` elements (or 1 when `broadcast`).
inline Error check_scales(const char* op, const Tensor& t, int64_t count, const char* what,
                          bool broadcast = true) {
  EMBER_CHECK(t.dtype() == ScalarType::Float || t.dtype() == ScalarType::Double,
              Error::InvalidArgument, "%s: %s must be float32 or float64, got %s", op, what,
              to_string(t.dtype()));
  return check_param_count(op, t, count, what, broadcast);
}

// A zero points tensor: int32 or int64 with `count` elements (or 1 when `broadcast`).
inline Error check_zero_points(const char* op, const Tensor& t, int64_t count, const char* what,
                               bool broadcast = true) {
  EMBER_CHECK(t.dtype() == ScalarType::Int || t.dtype() == ScalarType::Long, Error::InvalidArgument,
              "%s: %s must be int32 or int64, got %s", op, what, to_string(t.dtype()));
  return check_param_count(op, t, count, what, broadcast);
}

}  // namespace ember
