// Shared pieces of the 2-D pooling and resampling kernels: the (N, C, H, W) or (C, H, W) image
// view and ATen's output-size rule.
//
//   Image2d x = Image2d::of(in);            // any dim order
//   EMBER_TRY(resize_image(in, oh, ow, out));
//   const Image2d y = Image2d::of(out);
//   x.at(plane, h, w)  // element offset; planes are N*C in row-major order
#pragma once

#include "runtime/core/evalue.h"

namespace ember {

struct Image2d {
  int64_t channels, planes, height, width;
  int64_t sn, sc, sh, sw;

  static Image2d of(const Tensor& t) {
    const int r = t.dim();
    const bool batched = r == 4;
    Image2d im{};
    im.channels = t.size(r - 3);
    im.planes = (batched ? t.size(0) : 1) * im.channels;
    im.height = t.size(r - 2);
    im.width = t.size(r - 1);
    im.sn = batched ? t.stride(0) : 0;
    im.sc = t.stride(r - 3);
    im.sh = t.stride(r - 2);
    im.sw = t.stride(r - 1);
    return im;
  }
  int64_t base(int64_t plane) const { return (plane / channels) * sn + (plane % channels) * sc; }
  int64_t at(int64_t plane, int64_t h, int64_t w) const { return base(plane) + h * sh + w * sw; }
};

// Checks for a 3-D or 4-D input with non-empty spatial dims (batch and channels may be 0).
inline Error check_image(const char* op, const Tensor& in) {
  EMBER_CHECK(in.dim() == 3 || in.dim() == 4, Error::InvalidArgument,
              "%s: expected a 3-D or 4-D input, got %d-D", op, in.dim());
  return Error::Ok;
}

// Resizes `out` (same rank as `in`) to in's leading sizes and (oh, ow).
inline Error resize_image(const char* op, const Tensor& in, int64_t oh, int64_t ow, Tensor& out) {
  EMBER_CHECK(out.dim() == in.dim(), Error::InvalidArgument, "%s: out has rank %d, expected %d", op,
              out.dim(), in.dim());
  EMBER_CHECK(oh >= 0 && ow >= 0 && oh < (int64_t{1} << 31) && ow < (int64_t{1} << 31),
              Error::InvalidArgument, "%s: output size %lldx%lld is invalid", op,
              static_cast<long long>(oh), static_cast<long long>(ow));
  int32_t sizes[4];
  for (int d = 0; d < in.dim(); ++d) sizes[d] = in.size(d);
  sizes[in.dim() - 2] = static_cast<int32_t>(oh);
  sizes[in.dim() - 1] = static_cast<int32_t>(ow);
  return out.resize({sizes, static_cast<size_t>(in.dim())});
}

// ATen's pooling_output_shape: floor or ceil, and a last window must start inside the input or
// the left padding.
// Adaptive pooling's output_size argument (one entry: a square), as ATen reads it.
inline Error adaptive_output_size(const char* op, std::span<const int64_t> size, int64_t* oh,
                                  int64_t* ow) {
  EMBER_CHECK(size.size() == 2 || size.size() == 1, Error::InvalidArgument,
              "%s: output_size must have 2 entries", op);
  *oh = size[0];
  *ow = size.size() == 2 ? size[1] : size[0];
  EMBER_CHECK(*oh >= 0 && *ow >= 0, Error::InvalidArgument, "%s: negative output size", op);
  return Error::Ok;
}

// The input range [begin, end) that adaptive pooling's output index `i` of `out` covers, of `in`.
struct AdaptiveWindow {
  int64_t begin, end;
};
inline AdaptiveWindow adaptive_window(int64_t i, int64_t in, int64_t out) {
  return {i * in / out, ((i + 1) * in + out - 1) / out};
}

inline int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                           bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Reads a pooling parameter of 1 or 2 entries (empty: `fallback`, e.g. stride = kernel size).
inline Error pool_pair(const char* op, const char* what, std::span<const int64_t> v,
                       const int64_t* fallback, int64_t out[2]) {
  if (v.empty() && fallback != nullptr) {
    out[0] = fallback[0];
    out[1] = fallback[1];
    return Error::Ok;
  }
  EMBER_CHECK(v.size() == 1 || v.size() == 2, Error::InvalidArgument,
              "%s: %s must be a single int or a pair of ints", op, what);
  out[0] = v[0];
  out[1] = v.size() == 2 ? v[1] : v[0];
  // Bounded so pooled_size's arithmetic cannot overflow int64 (a fuzzed padding did).
  constexpr int64_t kMax = int64_t{1} << 30;
  EMBER_CHECK(out[0] >= -kMax && out[0] <= kMax && out[1] >= -kMax && out[1] <= kMax,
              Error::InvalidArgument, "%s: %s (%lld, %lld) is out of range", op, what,
              static_cast<long long>(out[0]), static_cast<long long>(out[1]));
  return Error::Ok;
}

}  // namespace ember

namespace ember {

// The output size and scales of upsample_*2d: `output_size` (an int list) or `scale_factors` (a
// double list), exactly one of them, as the .vec overloads take them. Scales are 0 when absent.
inline Error upsample_size(const char* op, const Tensor& in, const EValue& output_size,
                           const EValue& scale_factors, int64_t size[2], double scales[2]) {
  const bool has_size = output_size.tag() == Tag::ListInt;
  const bool has_scales = scale_factors.tag() == Tag::ListDouble;
  EMBER_CHECK(has_size != has_scales, Error::InvalidArgument,
              "%s: must specify exactly one of output_size and scale_factors", op);
  if (has_size) {
    const std::span<const int64_t> s = output_size.to_int_list();
    EMBER_CHECK(s.size() == 2, Error::InvalidArgument, "%s: output_size must have 2 entries", op);
    size[0] = s[0];
    size[1] = s[1];
    scales[0] = scales[1] = 0;
    return Error::Ok;
  }
  const std::span<const double> f = scale_factors.to_double_list();
  EMBER_CHECK(f.size() == 2, Error::InvalidArgument, "%s: scale_factors must have 2 entries", op);
  for (int i = 0; i < 2; ++i) {
    scales[i] = f[i];
    size[i] = static_cast<int64_t>(static_cast<double>(in.size(in.dim() - 2 + i)) * f[i]);
  }
  return Error::Ok;
}

// ATen's compute_scales_value: 1 / scale when a positive scale was given, else in / out.
template <typename T>
T input_per_output(double scale, int64_t in, int64_t out) {
  return scale > 0 ? static_cast<T>(1.0 / scale) : static_cast<T>(in) / static_cast<T>(out);
}

}  // namespace ember
