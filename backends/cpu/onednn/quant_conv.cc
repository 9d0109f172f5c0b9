// The quantized convolution family (docs/quantization.md): PyTorch's quantize and dequantize of a
// float tensor, and the convolution of quantized values (OpKind::QuantConv) in integers. The
// uint8 tensors such convolutions hand to each other are quant_chain.cc's.
//
// A QuantConv's source holds int8 values dequantized, x = (q - zp) * scale, rounded once to
// float; x / scale is then within 255 * 2^-24 of the integer q - zp, so the integers come back
// exactly. oneDNN convolves them as uint8 (q + 128, zero point zp + 128) by the int8 weight,
// accumulating in int32 exactly, and scales the sum per output channel by scale * weight scale.
// That differs from the float convolution of the dequantized values (PyTorch's reference) only by
// the reference's own float rounding; the requantization that follows rounds the two alike but
// at ties, so the int8 results agree to one step (the e2e tests hold them to it).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_conv_gemm.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/onednn/families.h"
#include "backends/cpu/onednn/quant_util.h"

namespace ember::cpu::delegate {
namespace {

// The element loops, compiled for AVX-512 and AVX2 beside the baseline and chosen at load by the
// CPU (the arithmetic is the same on each: no contraction, exact roundings).
#define EMBER_QUANT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

EMBER_QUANT_CLONES void quantize_loop(float* y, int64_t n, float inv, float zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_int8(y[i], inv, zp);
}

EMBER_QUANT_CLONES void dequantize_loop(float* y, int64_t n, float scale, float zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = (y[i] - zp) * scale;
}

EMBER_QUANT_CLONES void fake_quant_loop(float* y, int64_t n, float inv, float zp, float scale,
                                        float zp2) {
  for (int64_t i = 0; i < n; ++i) y[i] = (quantize_int8(y[i], inv, zp) - zp2) * scale;
}

// The uint8 result `dst` of QuantConv op (int8_chain_out or add_tail): registered as the
// output's, or the residual added (add_quant_add_step).
Error finish_u8_out(Build& b, const OpDesc& op, size_t fused, bool residual, const memory& dst);
// Whether a QuantConv of geometry g (weights q, `count` of them), requantized to uint8, runs on
// Ember's int8 1x1 kernel (QuantPointwise, any weights): 1x1, stride 1, no padding, one group,
// input channels a multiple of 4.
bool own_quant_pointwise(const Build& b, const ConvGeometry& g);
// Whether it runs on Ember's kernel of gathered rows (QuantGatheredConv: any kernel size, stride,
// padding and dilation, one group, 2-d): every convolution own_quant_pointwise takes, and more.
bool own_quant_gathered(const Build& b, const ConvGeometry& g);
// add_tail's form of op's post-ops and readers, whatever runs the convolution.
Result<bool> add_tail_form(Build& b, const OpDesc& op);
// The step writing op's output, floats channels-last, from `src_u8` (int8 + 128 of scale and
// zero point) dequantized as PyTorch does.
Error add_dequantize_u8_step(Build& b, const memory& src_u8, float scale, float zero_point,
                             const OpDesc& op);
// For add_tail: the step adding post-op `at`'s summand to `a_u8` (uint8, int8 + 128, of
// scale and zero point), dequantized exactly as the reference does, then the clamps and the
// requantize of op's remaining post-ops; op's output, uint8 channels-last.
Error add_quant_add_step(Build& b, const memory& a_u8, float a_scale, float a_zero_point,
                         const OpDesc& op, size_t at);

}  // namespace

Error add_quantize_step(Build& b, const memory& src, const memory& dst, const PostOp& p,
                        const PostOp* then) {
  for (const PostOp* q : {&p, then}) {
    if (q != nullptr && !int8_params(q->alpha, q->beta)) {
      return refused("quantize parameters out of range");
    }
  }
  const float a = p.alpha, zp = p.beta;
  if (p.alg == EltwiseAlg::Quantize && then != nullptr) {
    const float scale = then->alpha, zp2 = then->beta;
    return add_in_place_step(b, src, dst, false,
                             "eltwise,ember:quantize_dequantize,forward_inference,,",
                             "alg:quantize_dequantize_per_tensor",
                             [a, zp, scale, zp2](float* y, int64_t n, int threads) {
                               split_elements(n, threads, [&](int64_t begin, int64_t k) {
                                 fake_quant_loop(y + begin, k, a, zp, scale, zp2);
                               });
                             });
  } else if (p.alg == EltwiseAlg::Quantize) {
    return add_in_place_step(b, src, dst, false, "eltwise,ember:quantize,forward_inference,,",
                             "alg:quantize_per_tensor", [a, zp](float* y, int64_t n, int threads) {
                               split_elements(n, threads, [&](int64_t begin, int64_t k) {
                                 quantize_loop(y + begin, k, a, zp);
                               });
                             });
  } else {
    return add_in_place_step(
        b, src, dst, false, "eltwise,ember:dequantize,forward_inference,,",
        "alg:dequantize_per_tensor", [a, zp](float* y, int64_t n, int threads) {
          split_elements(n, threads,
                         [&](int64_t begin, int64_t k) { dequantize_loop(y + begin, k, a, zp); });
        });
  }
}

namespace {

// The elements of `from` (dims, each dim's stride in elements) in row-major order into `to`.
void gather_strided(const int8_t* from, const memory::dims& dims, const dnnl_dims_t strides,
                    int8_t* to) {
  const int r = static_cast<int>(dims.size());
  if (r == 0) return;
  std::vector<int64_t> at(static_cast<size_t>(r), 0);
  const int64_t inner = dims[r - 1], inner_stride = strides[r - 1];
  const int64_t rows = checked_numel(dims) / std::max<int64_t>(inner, 1);
  int64_t offset = 0;  // of row `at` (its last index 0)
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t i = 0; i < inner; ++i) *to++ = from[offset + i * inner_stride];
    for (int d = r - 2; d >= 0; --d) {  // the next row: an odometer over the outer dims
      offset += strides[d];
      if (++at[static_cast<size_t>(d)] < dims[d]) break;
      offset -= strides[d] * dims[d];
      at[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace

Result<QuantOperands> quant_operands(Build& b, const OpDesc& op, const QuantParams& src,
                                     const memory::dims& wd, const std::string& what) try {
  QuantOperands o;
  o.src_scale = src.scale;
  o.src_zp = src.zero_point;
  if (!std::isfinite(1.f / o.src_scale) || !(o.src_zp >= -128.f && o.src_zp <= 127.f) ||
      o.src_zp != std::nearbyint(o.src_zp)) {
    return refused(what + ": source scale or zero point out of range");
  }
  const int64_t channels = wd[0];
  if (checked_numel(b.tensor(op.inputs[3]).dims) != channels) {
    return refused(what + ": one weight scale per output channel");
  }
  EMBER_ASSIGN_OR_RETURN(o.scales_m, b.as(op.inputs[3], plain_md({channels}, dt::f32)));
  o.scales = data_as<float>(o.scales_m);
  for (int64_t c = 0; c < channels; ++c) {
    if (!std::isfinite(o.scales[c]) || !(o.scales[c] > 0)) return refused(what + ": scale");
  }
  if (b.tensor(op.inputs[1]).storage != WeightStorage::Int8) {
    return refused(what + ": weights not int8");
  }
  EMBER_ASSIGN_OR_RETURN(o.q_m, b.src_memory(op.inputs[1]));
  o.stored = data_as<int8_t>(o.q_m);
  const bool filter = wd.size() == 4;
  if (o.q_m.get_desc() == plain_md(wd, dt::s8)) {
    o.q = o.stored;
    if (filter && wd[2] == 1 && wd[3] == 1) o.channels_last = o.stored;
    return o;
  }
  const memory::desc stored = o.q_m.get_desc();
  const dnnl_memory_desc_t& d = stored.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 ||
      d.ndims != static_cast<int>(wd.size())) {
    return refused(what + ": weight layout");
  }
  const dnnl_dim_t* st = d.format_desc.blocking.strides;
  if (filter && st[1] == 1 && st[3] == wd[1] && st[2] == wd[3] * wd[1] &&
      st[0] == wd[2] * wd[3] * wd[1]) {
    o.channels_last = o.stored;
    return o;
  }
  o.plain.resize(static_cast<size_t>(checked_numel(wd)));
  gather_strided(o.stored, wd, st, o.plain.data());
  o.q = o.plain.data();
  return o;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

const int8_t* plain_weights(QuantOperands& o, const memory::dims& wd) {
  if (o.q != nullptr) return o.q;
  // [O][kh][kw][I] into [O][I][kh][kw], each output channel's block in order.
  const int64_t oc = wd[0], ic = wd[1], taps = wd[2] * wd[3];
  o.plain.resize(static_cast<size_t>(oc * ic * taps));
  int8_t* to = o.plain.data();
  for (int64_t j = 0; j < oc; ++j) {
    const int8_t* from = o.channels_last + j * taps * ic;
    for (int64_t i = 0; i < ic; ++i) {
      for (int64_t t = 0; t < taps; ++t) *to++ = from[t * ic + i];
    }
  }
  o.q = o.plain.data();
  return o.q;
}

Error build_quant_conv(Build& b, const OpDesc& op) try {
  EMBER_ASSIGN_OR_RETURN(const ConvGeometry g, conv_geometry(b, op));
  const int64_t oc = g.wd[0];
  EMBER_ASSIGN_OR_RETURN(QuantOperands operands,
                         quant_operands(b, op, op.quant_conv().src, g.wd, "quantized convolution"));
  const float src_scale = operands.src_scale, src_zp = operands.src_zp;
  const float* scales = operands.scales;
  const int64_t wsize = checked_numel(g.wd), per_channel = wsize / oc;
  // Ember's depthwise kernel reads uint8 on any instruction set, the others where they run in
  // integers; the producer asked the same (int8_chain_out).
  EMBER_ASSIGN_OR_RETURN(const bool own_depthwise, own_quant_depthwise(b, op));
  bool in_integers = own_depthwise;
  if (!own_depthwise) {
    EMBER_ASSIGN_OR_RETURN(in_integers, quant_conv_in_integers(b, op));
  }
  if (!in_integers) {
    // The float convolution of PyTorch's dequantized weight, (q - 0) * scale.
    EMBER_ASSIGN_OR_RETURN(memory w, b.weight_buffer(op.inputs[1], plain_md(g.wd, dt::f32)));
    dequantize_per_channel(plain_weights(operands, g.wd), scales, wsize, per_channel,
                           data_as<float>(w));
    b.set_memory(op.inputs[1], w);
    OpDesc conv = op;
    conv.kind = OpKind::Conv;
    conv.inputs.resize(3);
    conv.params = op.conv();
    return build_conv(b, conv, dt::f32);
  }
  // The source's integers, + 128, as uint8 channels-last (oneDNN's int8 source layout): written
  // so by the quantized convolution before (u8_out below), or converted from the floats.
  memory src_u8;
  const float shift = src_zp + 128.f;
  const auto& u8_tensors = b.quant_chain().u8_tensors;
  if (auto chained = u8_tensors.find(op.inputs[0]); chained != u8_tensors.end()) {
    if (chained->second.first != src_scale || chained->second.second != src_zp) {
      return refused("quantized convolution: its source's parameters differ from its producer's");
    }
    EMBER_ASSIGN_OR_RETURN(src_u8, b.src_memory(op.inputs[0]));
  } else {
    EMBER_ASSIGN_OR_RETURN(const memory src_f32,
                           b.as(op.inputs[0], nhwc_md(b.tensor(op.inputs[0]).dims)));
    EMBER_ASSIGN_OR_RETURN(src_u8,
                           b.buffer(memory::desc(g.sd, dt::u8, tag::nhwc), Held::Activations));
    EMBER_TRY(add_to_u8_step(b, src_f32, src_u8, src_scale, src_zp));
  }
  const bool has_bias = op.inputs[2] >= 0;
  if (has_bias && checked_numel(b.tensor(op.inputs[2]).dims) != oc) {
    return refused("convolution bias size differs from the output channels");
  }
  // The post-ops before the first quantize in oneDNN, clamps too: the sum is finite (integers by
  // finite scales), so the NaN rules that keep clamps out of oneDNN have nothing to act on.
  const size_t fused = before_requantize(op);
  // Requantized and read only as the source of quantized convolutions: the result is written as
  // their uint8 source directly, by PyTorch's arithmetic on the float result y (the one the
  // float output would hold): round_half_even(y * (float)(1 / scale)), then + zero point + 128
  // and saturated to [0, 255], the integers exact. The zero point is a binary add, not a second
  // eltwise_linear, which oneDNN 2.6 would run with the first one's parameters.
  // Or requantized, and then a residual added as add_tail does: the convolution's uint8 result
  // then lives only until the add.
  bool residual = false;
  if (!own_depthwise) {
    EMBER_ASSIGN_OR_RETURN(residual, add_tail(b, op));
  }
  bool u8_out = residual;
  if (!u8_out) {
    EMBER_ASSIGN_OR_RETURN(u8_out, int8_chain_out(b, op, fused));
  }
  if (own_depthwise) {  // u8_out too (own_quant_depthwise)
    // Ember's kernel: PyTorch's float arithmetic on the dequantized values (kernels/depthwise.h).
    EMBER_ASSIGN_OR_RETURN(const Clamp act, clamps_in(op, 0, fused));
    const QuantDepthwise3x3::Quant in{src_scale, src_zp};
    const QuantDepthwise3x3::Requant out{op.post_ops[fused].alpha, op.post_ops[fused].beta};
    memory bias_in;
    if (has_bias) {
      EMBER_ASSIGN_OR_RETURN(bias_in, b.as(op.inputs[2], plain_md({oc}, dt::f32)));
    }
    auto kernel = std::make_shared<QuantDepthwise3x3>(
        g.sd[0], g.sd[2], g.sd[3], oc, g.strides[0], plain_weights(operands, g.wd), scales,
        has_bias ? data_as<float>(bias_in) : nullptr, act, in, out, b.threads(),
        b.weight_storage());
    EMBER_TRY(b.storage_error());
    EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, memory::desc(g.od, dt::u8, tag::nhwc)));
    b.add_own_step(quant_depthwise_step(std::move(kernel), g.sd[0], g.sd[2], g.sd[3], oc,
                                        g.strides[0], src_u8, dst));
    b.count_int8_convolution();
    b.quant_chain().u8_tensors[op.output] = {op.post_ops[fused + 1].alpha,
                                             op.post_ops[fused + 1].beta};
    return Error::Ok;
  }
  // Full-range weights without VNNI run in integers only on Ember's kernels
  // (quant_conv_in_integers), which then also serve readers of floats, through a dequantize.
  const bool full_range = !b.int8_any_weights() && !seven_bits(operands.stored, wsize);
  const bool own_pointwise = (u8_out || full_range) && own_quant_pointwise(b, g);
  if (own_pointwise || (full_range && own_quant_gathered(b, g))) {
    // Ember's kernels (kernels/quant_gemm.h, quant_conv_gemm.h): the integer sums, requantized in
    // one pass; 1x1 ones straight from the source's rows, the others from gathered rows.
    memory bias_in;
    if (has_bias) {
      EMBER_ASSIGN_OR_RETURN(bias_in, b.as(op.inputs[2], plain_md({oc}, dt::f32)));
    }
    const float* bias = has_bias ? data_as<float>(bias_in) : nullptr;
    EMBER_ASSIGN_OR_RETURN(const Clamp act, clamps_in(op, 0, fused));
    const float out_inv = op.post_ops[fused].alpha, out_zp = op.post_ops[fused].beta;
    const memory::desc dst_md(g.od, dt::u8, tag::nhwc);
    EMBER_ASSIGN_OR_RETURN(
        memory dst, residual || !u8_out ? b.scratch_activation(dst_md) : b.make_output(op, dst_md));
    if (own_pointwise) {
      auto kernel = std::make_shared<QuantPointwise>(
          QuantPointwise::pack(operands.channels_last, scales, bias, g.sd[1], oc, src_scale, src_zp,
                               act, out_inv, out_zp, b.weight_storage()));
      EMBER_TRY(b.storage_error());
      b.add_own_step(quant_pointwise_step(std::move(kernel), g.sd[0], g.sd[2], g.sd[3], b.threads(),
                                          src_u8, dst));
    } else {
      const QuantGatheredConv::Shape shape{
          .batch = g.sd[0],
          .h = g.sd[2],
          .w = g.sd[3],
          .c = g.sd[1],
          .out_h = g.od[2],
          .out_w = g.od[3],
          .kh = g.kd[0],
          .kw = g.kd[1],
          .stride_h = g.strides[0],
          .stride_w = g.strides[1],
          .pad_h = g.pad_l[0],
          .pad_w = g.pad_l[1],
          .dilation_h = g.dil[0] + 1,
          .dilation_w = g.dil[1] + 1,
      };
      // The filter in the order the gathered rows take, where it is stored so (in place).
      const bool ohwi = operands.channels_last != nullptr;
      auto kernel = std::make_shared<QuantGatheredConv>(QuantGatheredConv::pack(
          shape, ohwi ? operands.channels_last : plain_weights(operands, g.wd),
          ohwi ? QuantGatheredConv::Order::Ohwi : QuantGatheredConv::Order::Oihw, scales, bias, oc,
          src_scale, src_zp, act, out_inv, out_zp, b.weight_storage()));
      EMBER_TRY(b.storage_error());
      b.add_own_step(quant_gathered_step(std::move(kernel), b.threads(), src_u8, dst));
    }
    b.count_int8_convolution();
    if (!u8_out) {
      const PostOp& d = op.post_ops[fused + 1];
      return add_dequantize_u8_step(b, dst, d.alpha, d.beta, op);
    }
    return finish_u8_out(b, op, fused, residual, dst);
  }
  // Output channel c's integer sum times src_scale * scales[c]; oneDNN 2.x adds the bias before
  // that scale, so it is divided by it.
  std::vector<float> out_scales(static_cast<size_t>(oc));
  for (int64_t c = 0; c < oc; ++c) out_scales[c] = src_scale * scales[c];
  const memory::desc bias_md = has_bias ? memory::desc({oc}, dt::f32, tag::a) : memory::desc();
  memory bias;
  if (has_bias) {
    EMBER_ASSIGN_OR_RETURN(const memory bias_in, b.as(op.inputs[2], plain_md({oc}, dt::f32)));
    EMBER_ASSIGN_OR_RETURN(bias, b.buffer(bias_md, Held::Weights));
    for (int64_t c = 0; c < oc; ++c) {
      data_as<float>(bias)[c] = data_as<float>(bias_in)[c] / out_scales[c];
    }
  }
  EMBER_ASSIGN_OR_RETURN(dnnl::post_ops post_ops,
                         Build::onednn_post_ops({op.post_ops.data(), fused}));
  memory zp_out;
  dnnl::primitive_attr attr;
  if (u8_out) {
    // round(y / scale) + zero point + 128, PyTorch's order: rounded before the (integer) shift,
    // which oneDNN's destination zero point adds exactly.
    post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, op.post_ops[fused].alpha, 0.f);
    post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_round, 0.f, 0.f);
    EMBER_ASSIGN_OR_RETURN(zp_out, b.buffer(memory::desc({1}, dt::s32, tag::x), Held::Weights));
    *data_as<int32_t>(zp_out) = static_cast<int32_t>(op.post_ops[fused].beta + 128.f);
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  }
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_output_scales(1 << 1, out_scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_post_ops(post_ops);
  const memory::desc w_any(g.logical, dt::s8, tag::any);
  const memory::desc dst_any =
      u8_out ? memory::desc(g.od, dt::u8, tag::nhwc) : memory::desc(g.od, dt::f32, tag::any);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src_u8.get_desc(), w_any,
                                    bias_md, dst_any, g.strides, g.dil, g.pad_l, g.pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, attr, b.engine());
  // oneDNN 2.6 picks AMX for every int8 convolution where the CPU has it; for 1x1 ones its VNNI
  // kernel is faster at batch 1 (measured on a Sapphire Rapids VM, `ONEDNN_VERBOSE`: MobileNetV2's
  // 1x1 convolutions 0.87 ms on VNNI against 2.0 on AMX per call; ResNet-18's 3x3 ones 3.0 against
  // 2.1, so those keep AMX).
  bool pointwise = true;
  for (int64_t kdim : g.kd) pointwise = pointwise && kdim == 1;
  if (pointwise) {
    dnnl::convolution_forward::primitive_desc first = pd;
    while (std::string(pd.impl_info_str()).find("amx") != std::string::npos) {
      if (!pd.next_impl()) {
        pd = first;
        break;
      }
    }
  }
  const memory w_view = memory(memory::desc(g.logical, dt::s8, g.strides_w), b.engine(),
                               const_cast<int8_t*>(plain_weights(operands, g.wd)));
  EMBER_ASSIGN_OR_RETURN(memory wei, b.buffer(pd.weights_desc(), Held::Weights));
  EMBER_TRY(b.reorder_now(w_view, wei));
  EMBER_ASSIGN_OR_RETURN(const memory zp_m,
                         b.buffer(memory::desc({1}, dt::s32, tag::x), Held::Weights));
  *data_as<int32_t>(zp_m) = static_cast<int32_t>(shift);
  EMBER_ASSIGN_OR_RETURN(memory dst, residual ? b.scratch_activation(pd.dst_desc())
                                              : b.make_output(op, pd.dst_desc()));
  StepArgs args = {{DNNL_ARG_SRC, src_u8},
                   {DNNL_ARG_WEIGHTS, wei},
                   {DNNL_ARG_DST, dst},
                   {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_m}};
  if (has_bias) args.emplace_back(DNNL_ARG_BIAS, bias);
  if (u8_out) args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, zp_out);
  EMBER_TRY(b.add_primitive<dnnl::convolution_forward>(pd, std::move(args)));
  b.count_int8_convolution();
  if (u8_out) return finish_u8_out(b, op, fused, residual, dst);
  return add_post_op_steps(b, op, fused, dst);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Result<bool> quant_conv_in_integers(Build& b, const OpDesc& op) {
  if (!b.int8()) return false;
  if (b.int8_any_weights()) return true;
  // Without VNNI: weights within [-64, 63] (pmaddubsw's pairs cannot saturate). (Depthwise ones
  // in float there, where oneDNN 2.6's AVX2 fp32 kernel is three times as fast as its int8 one,
  // made int8 MobileNetV2 slower: 8.9 against 6.8 ms, the requantizing steps around them.)
  const memory::dims wd = b.dims_of(op.inputs[1]);
  EMBER_ASSIGN_OR_RETURN(const memory w, b.src_memory(op.inputs[1]));
  if (seven_bits(data_as<int8_t>(w), checked_numel(wd))) return true;
  // Full-range weights (ExecuTorch's XNNPACKQuantizer writes them) only where Ember's kernels take
  // the convolution (the 1x1 kernel, or it on gathered rows: any one-group 2-d convolution): their
  // pairs form is exact on any weights (kernels/quant_gemm.h), but they write only a requantized
  // uint8 result, which readers take, to which a residual is added, or which a step dequantizes
  // for readers of floats. oneDNN's int8 kernels would saturate.
  if (op.kind != OpKind::QuantConv) return false;
  EMBER_ASSIGN_OR_RETURN(const ConvGeometry g, conv_geometry(b, op));
  if (!own_quant_gathered(b, g)) return false;
  EMBER_ASSIGN_OR_RETURN(const bool tail, add_tail_form(b, op));
  return tail || requantized_at_end(op, before_requantize(op));
}

Result<bool> own_quant_depthwise(Build& b, const OpDesc& op) {
  if (!b.own_kernels() || !own_kernels_supported() || op.kind != OpKind::QuantConv) return false;
  const int64_t stride = depthwise3x3_stride(b, op);
  // Where oneDNN's int8 kernel runs on VNNI, at stride 2 only where Ember's runs in integers too
  // (kernels/depthwise.h: level with oneDNN's there, 0.10 against 0.11 ms on MobileNetV2's
  // 112x112x96 layer); the float path dequantizes four input values an output at stride 2, and
  // oneDNN's was faster (0.27 against 0.17 ms). (Ember's kernels held to AVX2 on such a CPU take
  // 8-bit weights in float.) Without VNNI oneDNN's int8 depthwise is the slower at both strides.
  if (stride == 0) return false;
  if (b.int8_any_weights() && stride != 1) {
    EMBER_ASSIGN_OR_RETURN(const memory w, b.src_memory(op.inputs[1]));
    if (!QuantDepthwise3x3::in_integers(data_as<int8_t>(w), b.dims_of(op.inputs[1])[0])) {
      return false;
    }
  }
  // Its result requantized for readers that take uint8 (the kernel writes nothing else).
  return int8_chain_out(b, op, before_requantize(op));
}

Result<bool> add_tail(Build& b, const OpDesc& op) {
  if (!b.own_kernels() || !own_kernels_supported() || op.kind != OpKind::QuantConv) return false;
  EMBER_ASSIGN_OR_RETURN(const bool in_integers, quant_conv_in_integers(b, op));
  if (!in_integers) return false;
  EMBER_ASSIGN_OR_RETURN(const bool own_depthwise, own_quant_depthwise(b, op));
  if (own_depthwise) return false;
  return add_tail_form(b, op);
}

namespace {

Result<bool> add_tail_form(Build& b, const OpDesc& op) {
  if (!b.own_kernels() || !own_kernels_supported() || op.kind != OpKind::QuantConv) return false;
  // [clamps] quantize dequantize sum(t) [clamps] quantize dequantize.
  const size_t first = before_requantize(op), n = op.post_ops.size();
  if (first + 5 > n || !op.post_ops[first + 2].is_sum) return false;
  for (size_t i = 0; i < first; ++i) {
    Clamp c;
    if (!is_clamp(op.post_ops[i], &c)) return false;
  }
  auto requantize = [&](size_t at) {
    const PostOp &q = op.post_ops[at], &d = op.post_ops[at + 1];
    return !q.is_sum && !d.is_sum && q.alg == EltwiseAlg::Quantize &&
           d.alg == EltwiseAlg::Dequantize && q.beta == d.beta && int8_params(q.alpha, q.beta) &&
           int8_params(d.alpha, d.beta);
  };
  if (!requantize(first) || !requantize(n - 2)) return false;
  for (size_t i = first + 3; i < n - 2; ++i) {
    Clamp c;
    if (!is_clamp(op.post_ops[i], &c)) return false;
  }
  const int32_t t = op.post_ops[first + 2].tensor;
  if (b.tensor(t).dims != b.tensor(op.output).dims) return false;
  return readers_take_u8(b, op.output, op.post_ops[n - 1].alpha, op.post_ops[n - 1].beta);
}

Error finish_u8_out(Build& b, const OpDesc& op, size_t fused, bool residual, const memory& dst) {
  const PostOp& d = op.post_ops[fused + 1];
  if (residual) {
    EMBER_TRY(add_quant_add_step(b, dst, d.alpha, d.beta, op, fused + 2));
  } else {
    b.quant_chain().u8_tensors[op.output] = {d.alpha, d.beta};
  }
  return Error::Ok;
}

bool own_quant_pointwise(const Build& b, const ConvGeometry& g) {
  const simd::Kernels* k = simd::kernels();
  if (!b.own_kernels() || k == nullptr) return false;
  bool pointwise = g.r == 2 && !g.transposed && g.groups == 1 && g.sd[1] % 4 == 0;
  for (int i = 0; pointwise && i < 2; ++i) {
    pointwise =
        g.kd[i] == 1 && g.strides[i] == 1 && g.pad_l[i] == 0 && g.pad_r[i] == 0 && g.dil[i] == 0;
  }
  return pointwise;
}

bool own_quant_gathered(const Build& b, const ConvGeometry& g) {
  return b.own_kernels() && simd::kernels() != nullptr && g.r == 2 && !g.transposed &&
         g.groups == 1;
}

Error add_dequantize_u8_step(Build& b, const memory& src_u8, float scale, float zero_point,
                             const OpDesc& op) try {
  const std::vector<int64_t>& dims = b.tensor(op.output).dims;
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(op, nhwc_md(dims)));
  const int64_t n = checked_numel(dims);
  const int threads = b.threads();
  const float shift = zero_point + 128.f;
  OwnStep s{OwnKind::Int8Elementwise,
            "eltwise,ember:dequantize_u8,forward_inference,,",
            "alg:dequantize_per_tensor " + dims_text(to_dims(dims)),
            {}};
  s.run = [src_u8, dst, n, threads, shift, scale](void*) {
    const simd::Kernels& k = *simd::kernels();
    const auto* x = data_as<uint8_t>(src_u8);
    auto* y = data_as<float>(dst);
    split_elements(n, threads, [&](int64_t begin, int64_t count) {
      k.dequantize_u8(x + begin, y + begin, count, shift, scale);
    });
  };
  b.add_own_step(std::move(s));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

EMBER_QUANT_CLONES void add_clamp_loop(const float* a, const float* b, float* y, int64_t n,
                                       float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = a[i] + b[i];
    y[i] = s < lo ? lo : s > hi ? hi : s;
  }
}

// One input of a quantized add: uint8 (int8 + 128) with its dequantization, or floats.
struct AddOperand {
  memory mem;
  bool u8 = false;
  float scale = 0, shift = 0;  // shift: zero point + 128
  // Elements [begin, begin + n) as floats: dequantized into `buf`, or in place.
  const float* as_floats(const simd::Kernels& k, int64_t begin, int64_t n, float* buf) const {
    void* p = nullptr;
    dnnl_memory_get_data_handle(mem.get(), &p);
    if (!u8) return static_cast<const float*>(p) + begin;
    k.dequantize_u8(static_cast<const uint8_t*>(p) + begin, buf, n, shift, scale);
    return buf;
  }
};

Error add_quant_add_step(Build& b, const memory& a_u8, float a_scale, float a_zero_point,
                         const OpDesc& op, size_t at) try {
  const std::vector<int64_t>& dims = b.tensor(op.output).dims;
  const memory::desc u8_md(to_dims(dims), dt::u8, tag::nhwc);
  AddOperand in[2];
  in[0] = {a_u8, true, a_scale, a_zero_point + 128.f};
  const int32_t t = op.post_ops[at].tensor;
  const auto& u8_tensors = b.quant_chain().u8_tensors;
  if (auto chained = u8_tensors.find(t); chained != u8_tensors.end()) {
    EMBER_ASSIGN_OR_RETURN(const memory summand, b.src_memory(t));
    in[1] = {summand, true, chained->second.first, chained->second.second + 128.f};
    if (in[1].mem.get_desc() != u8_md) return refused("quantized add: its uint8 summand's layout");
  } else {
    EMBER_ASSIGN_OR_RETURN(in[1].mem, b.as(t, nhwc_md(dims)));
  }
  const size_t n_post = op.post_ops.size();
  EMBER_ASSIGN_OR_RETURN(const Clamp act, clamps_in(op, at + 1, n_post - 2));
  const PostOp &q = op.post_ops[n_post - 2], &d = op.post_ops[n_post - 1];
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(op, u8_md));
  const int64_t n = checked_numel(dims);
  const int threads = b.threads();
  const float inv = q.alpha, zp = q.beta;
  OwnStep s{OwnKind::Int8Elementwise,
            "binary,ember:add_u8,forward_inference,,",
            "alg:binary_add " + dims_text(to_dims(dims)),
            {}};
  s.run = [in0 = in[0], in1 = in[1], dst, n, threads, act, inv, zp](void*) {
    const simd::Kernels& k = *simd::kernels();
    auto* out = data_as<uint8_t>(dst);
    split_elements(n, threads, [&](int64_t begin, int64_t count) {
      constexpr int64_t kBlock = 256;
      alignas(64) float a[kBlock], b_buf[kBlock];
      for (int64_t i = begin; i < begin + count; i += kBlock) {
        const int64_t len = std::min(kBlock, begin + count - i);
        const float* x = in0.as_floats(k, i, len, a);
        const float* y = in1.as_floats(k, i, len, b_buf);
        add_clamp_loop(x, y, a, len, act.lo, act.hi);
        k.quantize_u8(a, out + i, len, inv, zp);
      }
    });
  };
  b.add_own_step(std::move(s));
  b.quant_chain().u8_tensors[op.output] = {d.alpha, d.beta};
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace
}  // namespace ember::cpu::delegate
