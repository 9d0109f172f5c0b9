// The Translator's convolutions and linear layers (translate_internal.h): XNNPACK's Conv2d,
// DepthwiseConv2d, FullyConnected and BatchMatrixMultiply, float and static int8, and
// ConvTranspose2d (float).
#include "backends/xnnpack/translate_internal.h"

#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace ember::xnn::detail {

Error Translator::conv(const Node& n) {
  const Window& w = n.window;
  const Value& x = value(n.inputs[0]);
  const Value& f = value(n.inputs[1]);
  const Value& y = value(n.outputs[0]);
  if (!is_real(x) || !is_real(y)) {
    return refuse(
        "input %s and output %s; Ember runs convolutions of float32 and per-tensor "
        "int8 values",
        datatype_name(x.dtype), datatype_name(y.dtype));
  }
  if (x.dims.size() != 4 || f.dims.size() != 4 || y.dims.size() != 4) {
    return refuse("a 2-D convolution of rank-4 NHWC values, not ranks %zu, %zu, %zu", x.dims.size(),
                  f.dims.size(), y.dims.size());
  }
  if (f.constant == 0) return refuse("the filter (value %u) is not a constant", f.id);
  if (n.flags != 0) {
    return refuse("flags %u (TensorFlow SAME padding) are not supported", n.flags);
  }
  const bool depthwise = n.type == NodeType::DepthwiseConv2d;
  const int64_t groups = w.groups, gi = w.group_input_channels, go = w.group_output_channels;
  const int64_t kh = w.kernel_h, kw = w.kernel_w;
  // NHWC input [N, H, W, groups * gi]; filter OHWI [groups * go, kh, kw, gi], or a depthwise
  // one [1, kh, kw, groups * go] (gi = 1).
  const std::vector<int64_t> want_f = depthwise ? std::vector<int64_t>{1, kh, kw, groups * go}
                                                : std::vector<int64_t>{groups * go, kh, kw, gi};
  if (groups < 1 || gi < 1 || go < 1 || (depthwise && gi != 1) || x.dims[3] != groups * gi ||
      f.dims != want_f || y.dims[3] != groups * go || w.stride_h < 1 || w.stride_w < 1 ||
      w.dilation_h < 1 || w.dilation_w < 1 || y.dims[0] != x.dims[0]) {
    return refuse(
        "inconsistent shapes: input %s, filter %s, output %s with %lld groups of %lld "
        "in and %lld out channels",
        dims_text(x.dims).c_str(), dims_text(f.dims).c_str(), dims_text(y.dims).c_str(),
        static_cast<long long>(groups), static_cast<long long>(gi), static_cast<long long>(go));
  }
  if (window_out(x.dims[1], w.pad_top, w.pad_bottom, kh, w.dilation_h, w.stride_h) != y.dims[1] ||
      window_out(x.dims[2], w.pad_left, w.pad_right, kw, w.dilation_w, w.stride_w) != y.dims[2]) {
    return refuse("output %s does not follow from input %s and the window",
                  dims_text(y.dims).c_str(), dims_text(x.dims).c_str());
  }
  EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
  cpu::ConvParams c;
  c.groups = groups;
  c.stride = {w.stride_h, w.stride_w};
  c.pad_l = {w.pad_top, w.pad_left};
  c.pad_r = {w.pad_bottom, w.pad_right};
  c.dilation = {w.dilation_h, w.dilation_w};
  c.output_padding = {0, 0};
  const int64_t oc = groups * go;
  const std::vector<int64_t> out_dims = engine_dims(y.dims, kNhwc);
  // The OHWI (or 1HWO) filter in place, described as PyTorch's OIHW.
  const Perm filter_perm = depthwise ? Perm{1, 2, 3, 0} : Perm{0, 2, 3, 1};
  int32_t t;
  if (is_q8(x)) {
    // The integer convolution: an int8 filter (OIHW, its scales per output channel) of the
    // source's real values on its grid.
    EMBER_ASSIGN_OR_RETURN(const std::vector<float> scales,
                           weight_scales(f, oc, depthwise ? 3 : 0));
    EMBER_ASSIGN_OR_RETURN(const int32_t weight, int8_constant(f, filter_perm));
    EMBER_ASSIGN_OR_RETURN(const int32_t bias, quant_bias(n.inputs[2], oc, x, scales));
    const int32_t scale_t = owned_floats("scales", scales, {oc});
    t = emit(OpKind::QuantConv, {src, weight, bias, scale_t}, cpu::QuantConvParams{c, grid_of(x)},
             out_dims, clamp_post_ops(n));
  } else {
    if (!is_real(f) || is_q8(f))
      return refuse("a float32 input with a %s filter", datatype_name(f.dtype));
    EMBER_ASSIGN_OR_RETURN(const int32_t weight, held(f.id, filter_perm));
    EMBER_ASSIGN_OR_RETURN(const int32_t bias, float_bias(n.inputs[2], oc));
    t = emit(OpKind::Conv, {src, weight, bias}, c, out_dims, clamp_post_ops(n));
  }
  define(y.id, t, kNhwc);
  return Error::Ok;
}

Error Translator::deconv(const Node& n) {
  const Window& w = n.window;
  const Value& x = value(n.inputs[0]);
  const Value& f = value(n.inputs[1]);
  const Value& y = value(n.outputs[0]);
  if (is_q8(x) || is_q8(y) || f.quantized()) {
    return refuse(
        "a static int8 transposed convolution (input %s, filter %s, output %s): Ember's integer "
        "convolution (QuantConv) has no transposed form; Ember runs ConvTranspose2d in float "
        "(fp32, fp16, bf16) only",
        datatype_name(x.dtype), datatype_name(f.dtype), datatype_name(y.dtype));
  }
  if (!is_float(x) || !is_float(y)) {
    return refuse("input %s and output %s; Ember runs transposed convolutions of float values",
                  datatype_name(x.dtype), datatype_name(y.dtype));
  }
  if (x.dims.size() != 4 || f.dims.size() != 4 || y.dims.size() != 4) {
    return refuse("a 2-D transposed convolution of rank-4 NHWC values, not ranks %zu, %zu, %zu",
                  x.dims.size(), f.dims.size(), y.dims.size());
  }
  if (f.constant == 0) return refuse("the filter (value %u) is not a constant", f.id);
  if (n.flags != 0) return refuse("flags %u are not supported", n.flags);
  const int64_t groups = w.groups, gi = w.group_input_channels, go = w.group_output_channels;
  const int64_t kh = w.kernel_h, kw = w.kernel_w;
  // NHWC input [N, H, W, groups * gi]; the filter [groups * go, kh, kw, gi]: group g's output
  // channel o and input channel i are PyTorch's weight [g * gi + i][o] (IOHW, unflipped).
  const std::vector<int64_t> want_f = {groups * go, kh, kw, gi};
  if (groups < 1 || gi < 1 || go < 1 || kh < 1 || kw < 1 || x.dims[3] != groups * gi ||
      f.dims != want_f || y.dims[3] != groups * go || y.dims[0] != x.dims[0]) {
    return refuse(
        "inconsistent shapes: input %s, filter %s, output %s with %lld groups of %lld "
        "in and %lld out channels",
        dims_text(x.dims).c_str(), dims_text(f.dims).c_str(), dims_text(y.dims).c_str(),
        static_cast<long long>(groups), static_cast<long long>(gi), static_cast<long long>(go));
  }
  // The engine's limits on a convolution's parameters (graph_verify.cc): strides and dilations
  // 1 to 4096, paddings 0 to 4096.
  constexpr uint32_t kMaxParam = 4096;
  const std::pair<const char*, uint32_t> params[] = {{"stride (subsampling) height", w.stride_h},
                                                     {"stride (subsampling) width", w.stride_w},
                                                     {"dilation height", w.dilation_h},
                                                     {"dilation width", w.dilation_w},
                                                     {"padding top", w.pad_top},
                                                     {"padding bottom", w.pad_bottom},
                                                     {"padding left", w.pad_left},
                                                     {"padding right", w.pad_right}};
  for (size_t k = 0; k < std::size(params); ++k) {
    const uint32_t least = k < 4 ? 1 : 0;
    if (params[k].second < least || params[k].second > kMaxParam) {
      return refuse("%s %u; Ember's engine takes %u to %u", params[k].first, params[k].second,
                    least, kMaxParam);
    }
  }
  // XNNPACK's adjustment is PyTorch's output_padding: rows and columns added at the bottom and
  // right. XNNPACK itself defines no deconvolution whose adjustment reaches its stride.
  if (w.adjustment_h >= w.stride_h || w.adjustment_w >= w.stride_w) {
    return refuse("adjustment (output padding) %u x %u not below the stride %u x %u",
                  w.adjustment_h, w.adjustment_w, w.stride_h, w.stride_w);
  }
  // Output size: (in - 1) * stride + (k - 1) * dilation + 1 + adjustment - both paddings.
  auto out_of = [](int64_t in, int64_t s, int64_t k, int64_t d, int64_t adj, int64_t pa,
                   int64_t pb) { return (in - 1) * s + (k - 1) * d + 1 + adj - pa - pb; };
  if (out_of(x.dims[1], w.stride_h, kh, w.dilation_h, w.adjustment_h, w.pad_top, w.pad_bottom) !=
          y.dims[1] ||
      out_of(x.dims[2], w.stride_w, kw, w.dilation_w, w.adjustment_w, w.pad_left, w.pad_right) !=
          y.dims[2]) {
    return refuse("output %s does not follow from input %s, the window and the adjustment",
                  dims_text(y.dims).c_str(), dims_text(x.dims).c_str());
  }
  EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
  cpu::ConvParams c;
  c.groups = groups;
  c.transposed = true;
  c.stride = {w.stride_h, w.stride_w};
  c.pad_l = {w.pad_top, w.pad_left};
  // The engine's output is (in - 1) * stride + (k - 1) * dilation + 1 - pad_l - pad_r: the
  // adjustment is a right padding that much smaller (negative where it exceeds the padding).
  c.pad_r = {int64_t{w.pad_bottom} - w.adjustment_h, int64_t{w.pad_right} - w.adjustment_w};
  c.dilation = {w.dilation_h, w.dilation_w};
  c.output_padding = {w.adjustment_h, w.adjustment_w};
  const int64_t oc = groups * go;
  int32_t weight;
  if (groups == 1) {
    // [O, kh, kw, I] is PyTorch's IOHW [I, O, kh, kw] re-described.
    EMBER_ASSIGN_OR_RETURN(weight, held(f.id, Perm{1, 2, 3, 0}));
  } else {
    // Grouped, the IOHW weight [groups * gi, go, kh, kw] interleaves the groups differently:
    // made here, once.
    EMBER_ASSIGN_OR_RETURN(const std::vector<float> v, float_values(f));
    std::vector<float> iohw(v.size());
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t o = 0; o < go; ++o) {
        for (int64_t h = 0; h < kh; ++h) {
          for (int64_t u = 0; u < kw; ++u) {
            for (int64_t i = 0; i < gi; ++i) {
              iohw[(((g * gi + i) * go + o) * kh + h) * kw + u] =
                  v[(((g * go + o) * kh + h) * kw + u) * gi + i];
            }
          }
        }
      }
    }
    weight = owned_floats("filter", iohw, {groups * gi, go, kh, kw});
  }
  EMBER_ASSIGN_OR_RETURN(const int32_t bias, float_bias(n.inputs[2], oc));
  const int32_t t =
      emit(OpKind::Conv, {src, weight, bias}, c, engine_dims(y.dims, kNhwc), clamp_post_ops(n));
  define(y.id, t, kNhwc);
  return Error::Ok;
}

int64_t Translator::window_out(int64_t in, int64_t pa, int64_t pb, int64_t k, int64_t d,
                               int64_t s) {
  const int64_t span = (k - 1) * d + 1;
  return in + pa + pb < span ? int64_t{-1} : (in + pa + pb - span) / s + 1;
}

Result<int32_t> Translator::float_bias(uint32_t id, int64_t count) {
  if (id == kNoValue) return -1;
  const Value& b = value(id);
  if (b.constant == 0 || numel(b.dims) != count || !is_real(b) || is_q8(b)) {
    return refuse("the bias (value %u) is not a float32 constant of %lld elements", id,
                  static_cast<long long>(count));
  }
  EMBER_ASSIGN_OR_RETURN(int32_t t, held(b.id, identity(b.dims.size())));
  if (b.dims.size() != 1) {
    TensorDesc flat = out_.graph.tensors[t];
    flat.dims = {count};
    flat.dim_order.clear();
    t = add_tensor(std::move(flat));
  }
  return t;
}

Error Translator::fully_connected(const Node& n) {
  const Value& x = value(n.inputs[0]);
  const Value& f = value(n.inputs[1]);
  const Value& y = value(n.outputs[0]);
  const bool dynamic = x.dtype == Datatype::QDInt8;
  if ((!is_real(x) && !dynamic) || !is_real(y)) {
    return refuse(
        "input %s and output %s; Ember runs linear layers of float32, per-tensor "
        "int8 and dynamically quantized (qdint8) values",
        datatype_name(x.dtype), datatype_name(y.dtype));
  }
  if (f.dims.size() != 2 || f.constant == 0) {
    return refuse("the filter (value %u) is not a rank-2 constant", f.id);
  }
  if ((n.flags & ~1u) != 0) return refuse("flags %u are not supported", n.flags);
  const bool transposed = (n.flags & 1u) != 0;  // the filter is [K, N]
  const int64_t k = transposed ? f.dims[0] : f.dims[1];
  const int64_t nn = transposed ? f.dims[1] : f.dims[0];
  if (k < 1 || nn < 1 || x.dims.empty() || x.dims.back() != k || y.dims.empty() ||
      y.dims.back() != nn || numel(x.dims) / k != numel(y.dims) / nn) {
    return refuse("inconsistent shapes: input %s, filter %s%s, output %s",
                  dims_text(x.dims).c_str(), dims_text(f.dims).c_str(),
                  transposed ? " (transposed)" : "", dims_text(y.dims).c_str());
  }
  const int64_t m = numel(x.dims) / k;
  EMBER_ASSIGN_OR_RETURN(int32_t a, held(x.id, identity(x.dims.size())));
  if (x.dims.size() != 2) a = emit(OpKind::Reshape, {a}, cpu::NoParams{}, {m, k});
  int32_t t;
  if (dynamic) {
    EMBER_ASSIGN_OR_RETURN(t, dynamic_linear(n, a, f, m, k, nn, transposed));
  } else if (is_q8(x)) {
    if (transposed) return refuse("a transposed int8 filter");
    EMBER_ASSIGN_OR_RETURN(const std::vector<float> scales, weight_scales(f, nn, 0));
    EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> q, constant_bytes(f, 1));
    const int32_t weight = owned_weight("filter", std::move(q), {nn, k}, cpu::WeightStorage::Int8);
    EMBER_ASSIGN_OR_RETURN(const int32_t bias, quant_bias(n.inputs[2], nn, x, scales));
    const int32_t scale_t = owned_floats("scales", scales, {nn});
    t = emit(OpKind::QuantMatMul, {a, weight, bias, scale_t}, cpu::QuantMatMulParams{grid_of(x)},
             {m, nn}, clamp_post_ops(n));
  } else {
    if (!is_real(f) || is_q8(f)) {
      return refuse("a float32 input with a %s filter", datatype_name(f.dtype));
    }
    // The engine's matmul takes b as [K, N].
    EMBER_ASSIGN_OR_RETURN(const int32_t b, held(f.id, transposed ? Perm{0, 1} : Perm{1, 0}));
    EMBER_ASSIGN_OR_RETURN(const int32_t bias, float_bias(n.inputs[2], nn));
    t = emit(OpKind::MatMul, {a, b, bias}, cpu::MatMulParams{}, {m, nn}, clamp_post_ops(n));
  }
  if (is_q8(y)) t = to_grid(y, t);
  if (y.dims.size() != 2) t = emit(OpKind::Reshape, {t}, cpu::NoParams{}, y.dims);
  define(y.id, t, identity(y.dims.size()), /*on_grid=*/true);
  return Error::Ok;
}

Error Translator::batch_matmul(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& a = value(n.inputs[0]);
  const Value& b = value(n.inputs[1]);
  const Value& y = value(n.outputs[0]);
  const size_t r = a.dims.size();
  if (r < 2 || b.dims.size() != r || y.dims.size() != r) {
    return refuse("operands of equal rank, at least 2");
  }
  if (n.flags != 0) return refuse("flags %u (a transposed operand) are not supported", n.flags);
  for (size_t d = 0; d + 2 < r; ++d) {
    if (a.dims[d] != b.dims[d] || y.dims[d] != a.dims[d]) {
      return refuse("broadcast batch dims are not supported");
    }
  }
  if (a.dims[r - 1] != b.dims[r - 2] || y.dims[r - 2] != a.dims[r - 2] ||
      y.dims[r - 1] != b.dims[r - 1]) {
    return refuse("inconsistent shapes %s x %s -> %s", dims_text(a.dims).c_str(),
                  dims_text(b.dims).c_str(), dims_text(y.dims).c_str());
  }
  EMBER_ASSIGN_OR_RETURN(const int32_t ta, held(a.id, identity(r)));
  EMBER_ASSIGN_OR_RETURN(const int32_t tb, held(b.id, identity(r)));
  const int32_t t =
      emit(OpKind::MatMul, {ta, tb, -1}, cpu::MatMulParams{}, y.dims, clamp_post_ops(n));
  define(y.id, t, identity(r));
  return Error::Ok;
}

}  // namespace ember::xnn::detail
