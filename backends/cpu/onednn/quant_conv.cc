// The cpu delegate's quantized steps (docs/quantization.md): PyTorch's quantize and dequantize
// of a float tensor, and the convolution of quantized values (OpKind::QuantConv) in integers.
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
#include <string>
#include <vector>

#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/onednn/delegate.h"
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

}  // namespace

void CpuDelegate::add_quantize_step(const memory& src, const memory& dst, const PostOp& p,
                                    const PostOp* then) {
  for (const PostOp* q : {&p, then}) {
    if (q != nullptr && !int8_params(q->alpha, q->beta)) {
      refuse("quantize parameters out of range");
    }
  }
  const float a = p.alpha, zp = p.beta;
  if (p.alg == EltwiseAlg::Quantize && then != nullptr) {
    const float scale = then->alpha, zp2 = then->beta;
    add_in_place_step(src, dst, false, "eltwise,ember:quantize_dequantize,forward_inference,,",
                      "alg:quantize_dequantize_per_tensor",
                      [a, zp, scale, zp2](float* y, int64_t n, int threads) {
                        split(n, threads, [&](int64_t b, int64_t k) {
                          fake_quant_loop(y + b, k, a, zp, scale, zp2);
                        });
                      });
  } else if (p.alg == EltwiseAlg::Quantize) {
    add_in_place_step(src, dst, false, "eltwise,ember:quantize,forward_inference,,",
                      "alg:quantize_per_tensor", [a, zp](float* y, int64_t n, int threads) {
                        split(n, threads,
                              [&](int64_t b, int64_t k) { quantize_loop(y + b, k, a, zp); });
                      });
  } else {
    add_in_place_step(src, dst, false, "eltwise,ember:dequantize,forward_inference,,",
                      "alg:dequantize_per_tensor", [a, zp](float* y, int64_t n, int threads) {
                        split(n, threads,
                              [&](int64_t b, int64_t k) { dequantize_loop(y + b, k, a, zp); });
                      });
  }
}

CpuDelegate::QuantOperands CpuDelegate::quant_operands(const OpDesc& op, const QuantParams& src,
                                                       const memory::dims& wd,
                                                       const std::string& what) {
  QuantOperands o;
  o.src_scale = src.scale;
  o.src_zp = src.zero_point;
  if (!std::isfinite(1.f / o.src_scale) || !(o.src_zp >= -128.f && o.src_zp <= 127.f) ||
      o.src_zp != std::nearbyint(o.src_zp)) {
    refuse(what + ": source scale or zero point out of range");
  }
  const int64_t channels = wd[0];
  if (checked_numel(graph_.tensors[op.inputs[3]].dims) != channels) {
    refuse(what + ": one weight scale per output channel");
  }
  o.scales_m = as(op.inputs[3], plain_md({channels}, dt::f32));
  o.scales = data_as<float>(o.scales_m);
  for (int64_t c = 0; c < channels; ++c) {
    if (!std::isfinite(o.scales[c]) || !(o.scales[c] > 0)) refuse(what + ": scale");
  }
  if (graph_.tensors[op.inputs[1]].storage != WeightStorage::Int8) {
    refuse(what + ": weights not int8");
  }
  o.q_m = src_memory(op.inputs[1]);
  if (o.q_m.get_desc() != plain_md(wd, dt::s8)) refuse(what + ": weight layout");
  o.q = data_as<int8_t>(o.q_m);
  return o;
}

void CpuDelegate::build_quant_conv(const OpDesc& op) {
  const ConvGeometry g = conv_geometry(op);
  const int64_t oc = g.wd[0];
  const QuantOperands operands =
      quant_operands(op, op.quant_conv().src, g.wd, "quantized convolution");
  const float src_scale = operands.src_scale, src_zp = operands.src_zp;
  const float* scales = operands.scales;
  const memory& q_m = operands.q_m;
  const int8_t* q = operands.q;
  const int64_t wsize = checked_numel(g.wd), per_channel = wsize / oc;
  // Ember's depthwise kernel reads uint8 on any instruction set, the others where they run in
  // integers; the producer asked the same (int8_chain_out).
  const bool own_depthwise = own_quant_depthwise(op);
  if (!own_depthwise && !quant_conv_in_integers(op)) {
    // The float convolution of PyTorch's dequantized weight, (q - 0) * scale.
    memory w = buffer(plain_md(g.wd, dt::f32), Held::Transient);
    dequantize_per_channel(q, scales, wsize, per_channel, data_as<float>(w));
    md_[op.inputs[1]] = w.get_desc();
    mem_[op.inputs[1]] = w;
    OpDesc conv = op;
    conv.kind = OpKind::Conv;
    conv.inputs.resize(3);
    conv.params = op.conv();
    return build_conv(conv, dt::f32);
  }
  // The source's integers, + 128, as uint8 channels-last (oneDNN's int8 source layout): written
  // so by the quantized convolution before (u8_out below), or converted from the floats.
  memory src_u8;
  const float shift = src_zp + 128.f;
  if (auto chained = u8_tensors_.find(op.inputs[0]); chained != u8_tensors_.end()) {
    if (chained->second.first != src_scale || chained->second.second != src_zp) {
      refuse("quantized convolution: its source's parameters differ from its producer's");
    }
    src_u8 = src_memory(op.inputs[0]);
  } else {
    const memory src_f32 = as(op.inputs[0], nhwc_md(graph_.tensors[op.inputs[0]].dims));
    src_u8 = buffer(memory::desc(g.sd, dt::u8, tag::nhwc), Held::Activations);
    add_to_u8_step(src_f32, src_u8, src_scale, src_zp);
  }
  const bool has_bias = op.inputs[2] >= 0;
  if (has_bias && checked_numel(graph_.tensors[op.inputs[2]].dims) != oc) {
    refuse("convolution bias size differs from the output channels");
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
  const bool residual = !own_depthwise && add_tail(op);
  const bool u8_out = residual || int8_chain_out(op, fused);
  if (own_depthwise) {  // u8_out too (own_quant_depthwise)
    // Ember's kernel: PyTorch's float arithmetic on the dequantized values (kernels/depthwise.h).
    const Clamp act = clamps_in(op, 0, fused);
    const QuantDepthwise3x3::Quant in{src_scale, src_zp};
    const QuantDepthwise3x3::Requant out{op.post_ops[fused].alpha, op.post_ops[fused].beta};
    const memory b = has_bias ? as(op.inputs[2], plain_md({oc}, dt::f32)) : memory();
    auto kernel = std::make_shared<QuantDepthwise3x3>(
        g.sd[0], g.sd[2], g.sd[3], oc, g.strides[0], q, scales,
        has_bias ? data_as<float>(b) : nullptr, act, in, out, threads_, weight_storage());
    memory dst = make_output(op, memory::desc(g.od, dt::u8, tag::nhwc));
    add_own_step(quant_depthwise_step(std::move(kernel), g.sd[0], g.sd[2], g.sd[3], oc,
                                      g.strides[0], src_u8, dst));
    ++int8_convolutions_;
    u8_tensors_[op.output] = {op.post_ops[fused + 1].alpha, op.post_ops[fused + 1].beta};
    return;
  }
  if (u8_out && own_quant_pointwise(g, q, wsize)) {
    // Ember's kernel (kernels/quant_gemm.h): the integer sums, requantized in one pass.
    const memory b = has_bias ? as(op.inputs[2], plain_md({oc}, dt::f32)) : memory();
    auto kernel = std::make_shared<QuantPointwise>(
        QuantPointwise::pack(q, scales, has_bias ? data_as<float>(b) : nullptr, g.sd[1], oc,
                             src_scale, src_zp, clamps_in(op, 0, fused), op.post_ops[fused].alpha,
                             op.post_ops[fused].beta, weight_storage()));
    const memory::desc dst_md(g.od, dt::u8, tag::nhwc);
    memory dst = residual ? scratch_activation(dst_md) : make_output(op, dst_md);
    add_own_step(
        quant_pointwise_step(std::move(kernel), g.sd[0], g.sd[2], g.sd[3], threads_, src_u8, dst));
    ++int8_convolutions_;
    finish_u8_out(op, fused, residual, dst);
    return;
  }
  // Output channel c's integer sum times src_scale * scales[c]; oneDNN 2.x adds the bias before
  // that scale, so it is divided by it.
  std::vector<float> out_scales(static_cast<size_t>(oc));
  for (int64_t c = 0; c < oc; ++c) out_scales[c] = src_scale * scales[c];
  const memory::desc bias_md = has_bias ? memory::desc({oc}, dt::f32, tag::a) : memory::desc();
  memory bias;
  if (has_bias) {
    const memory b = as(op.inputs[2], plain_md({oc}, dt::f32));
    bias = buffer(bias_md, Held::Weights);
    for (int64_t c = 0; c < oc; ++c) {
      data_as<float>(bias)[c] = data_as<float>(b)[c] / out_scales[c];
    }
  }
  dnnl::post_ops post_ops = onednn_post_ops({op.post_ops.data(), fused});
  memory zp_out;
  dnnl::primitive_attr attr;
  if (u8_out) {
    // round(y / scale) + zero point + 128, PyTorch's order: rounded before the (integer) shift,
    // which oneDNN's destination zero point adds exactly.
    post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, op.post_ops[fused].alpha, 0.f);
    post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_round, 0.f, 0.f);
    zp_out = buffer(memory::desc({1}, dt::s32, tag::x), Held::Weights);
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
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine_);
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
  const memory w_view =
      memory(memory::desc(g.logical, dt::s8, g.strides_w), engine_, q_m.get_data_handle());
  memory wei = buffer(pd.weights_desc(), Held::Weights);
  reorder_now(w_view, wei);
  const memory zp_m = buffer(memory::desc({1}, dt::s32, tag::x), Held::Weights);
  *data_as<int32_t>(zp_m) = static_cast<int32_t>(shift);
  memory dst = residual ? scratch_activation(pd.dst_desc()) : make_output(op, pd.dst_desc());
  std::vector<std::pair<int, memory>> args = {{DNNL_ARG_SRC, src_u8},
                                              {DNNL_ARG_WEIGHTS, wei},
                                              {DNNL_ARG_DST, dst},
                                              {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_m}};
  if (has_bias) args.emplace_back(DNNL_ARG_BIAS, bias);
  if (u8_out) args.emplace_back(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, zp_out);
  add_step<dnnl::convolution_forward>(pd, std::move(args));
  ++int8_convolutions_;
  if (u8_out) {
    finish_u8_out(op, fused, residual, dst);
  } else {
    add_post_op_steps(op, fused, dst);
  }
}

void CpuDelegate::finish_u8_out(const OpDesc& op, size_t fused, bool residual, const memory& dst) {
  const PostOp& d = op.post_ops[fused + 1];
  if (residual) {
    add_quant_add_step(dst, d.alpha, d.beta, op, fused + 2);
  } else {
    u8_tensors_[op.output] = {d.alpha, d.beta};
  }
}

bool CpuDelegate::own_quant_pointwise(const ConvGeometry& g, const int8_t* q, int64_t count) {
  const simd::Kernels* k = simd::kernels();
  if (!own_kernels_ || k == nullptr) return false;
  bool pointwise = g.r == 2 && !g.transposed && g.groups == 1 && g.sd[1] % 4 == 0;
  for (int i = 0; pointwise && i < 2; ++i) {
    pointwise =
        g.kd[i] == 1 && g.strides[i] == 1 && g.pad_l[i] == 0 && g.pad_r[i] == 0 && g.dil[i] == 0;
  }
  // Without VNNI the kernel's pmaddubsw pairs saturate unless the weights fit 7 bits.
  return pointwise && (k->vnni || seven_bits(q, count));
}

bool CpuDelegate::quant_conv_in_integers(const OpDesc& op) {
  if (!int8_) return false;
  if (int8_any_weights_) return true;
  // Without VNNI: weights within [-64, 63] (pmaddubsw's pairs cannot saturate). (Depthwise ones
  // in float there, where oneDNN 2.6's AVX2 fp32 kernel is three times as fast as its int8 one,
  // made int8 MobileNetV2 slower: 8.9 against 6.8 ms, the requantizing steps around them.)
  const memory::dims wd = dims_of(op.inputs[1]);
  return seven_bits(data_as<int8_t>(src_memory(op.inputs[1])), checked_numel(wd));
}

bool CpuDelegate::own_quant_depthwise(const OpDesc& op) {
  if (!own_kernels_ || !own_kernels_supported() || op.kind != OpKind::QuantConv) return false;
  const int64_t stride = depthwise3x3_stride(op);
  // Where oneDNN's int8 kernel runs on VNNI, at stride 2 only where Ember's runs in integers too
  // (kernels/depthwise.h: level with oneDNN's there, 0.10 against 0.11 ms on MobileNetV2's
  // 112x112x96 layer); the float path dequantizes four input values an output at stride 2, and
  // oneDNN's was faster (0.27 against 0.17 ms). (Ember's kernels held to AVX2 on such a CPU take
  // 8-bit weights in float.) Without VNNI oneDNN's int8 depthwise is the slower at both strides.
  if (stride == 0) return false;
  if (int8_any_weights_ && stride != 1 &&
      !QuantDepthwise3x3::in_integers(data_as<int8_t>(src_memory(op.inputs[1])),
                                      dims_of(op.inputs[1])[0])) {
    return false;
  }
  // Its result requantized for readers that take uint8 (the kernel writes nothing else).
  return int8_chain_out(op, before_requantize(op));
}

bool CpuDelegate::int8_chain_out(const OpDesc& op, size_t fused) {
  // [relu/clips...] quantize dequantize, of one int8 grid.
  if (fused + 2 != op.post_ops.size()) return false;
  const PostOp &q = op.post_ops[fused], &d = op.post_ops[fused + 1];
  if (q.is_sum || d.is_sum || q.alg != EltwiseAlg::Quantize || d.alg != EltwiseAlg::Dequantize ||
      q.beta != d.beta) {
    return false;
  }
  for (size_t i = 0; i < fused; ++i) {
    Clamp c;
    if (!is_clamp(op.post_ops[i], &c)) return false;  // a sum's summand is float
  }
  return readers_take_u8(op.output, d.alpha, d.beta);
}

bool CpuDelegate::readers_take_u8(int32_t t, float scale, float zero_point) {
  // Asked again of the same tensors down every path of the graph (a reader's answer asks its own
  // readers'): each answer is kept, so that a graph of many paths costs no more than its ops.
  const auto key = std::make_tuple(t, scale, zero_point);
  if (auto known = readers_take_u8_.find(key); known != readers_take_u8_.end()) {
    return known->second;
  }
  const bool answer = readers_take_u8_uncached(t, scale, zero_point);
  readers_take_u8_[key] = answer;
  return answer;
}

bool CpuDelegate::readers_take_u8_uncached(int32_t t, float scale, float zero_point) {
  if (is_graph_output(t)) return false;
  int readers = 0;
  for (const OpDesc& reader : graph_.ops) {
    for (size_t k = 0; k < reader.inputs.size(); ++k) {
      if (reader.inputs[k] != t) continue;
      // A quantized convolution of t's parameters: in float (quant_conv_in_integers) it would
      // read the uint8 as floats. An add dequantizes by t's own parameters.
      const bool conv = reader.kind == OpKind::QuantConv && k == 0 &&
                        reader.quant_conv().src.scale == scale &&
                        reader.quant_conv().src.zero_point == zero_point &&
                        (quant_conv_in_integers(reader) || own_quant_depthwise(reader));
      if (!conv && !max_pool_takes_u8(reader)) return false;
      ++readers;
    }
    for (const PostOp& p : reader.post_ops) {
      if (!p.is_sum || p.tensor != t) continue;
      // A residual added to a requantized result in uint8 (add_tail) dequantizes by t's own
      // parameters.
      if (!add_tail(reader)) return false;
      ++readers;
    }
  }
  return readers > 0;
}

Clamp CpuDelegate::clamps_in(const OpDesc& op, size_t begin, size_t end) {
  Clamp act;
  for (size_t i = begin; i < end; ++i) {
    Clamp c;
    if (!is_clamp(op.post_ops[i], &c)) refuse("a post-op beside a requantize is not a clamp");
    act.lo = std::max(act.lo, c.lo);
    act.hi = std::min(act.hi, c.hi);
  }
  return act;
}

bool CpuDelegate::add_tail(const OpDesc& op) {
  if (!own_kernels_ || !own_kernels_supported() || op.kind != OpKind::QuantConv ||
      !quant_conv_in_integers(op) || own_quant_depthwise(op)) {
    return false;
  }
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
  if (graph_.tensors[t].dims != graph_.tensors[op.output].dims) return false;
  return readers_take_u8(op.output, op.post_ops[n - 1].alpha, op.post_ops[n - 1].beta);
}

namespace {

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

}  // namespace

void CpuDelegate::add_quant_add_step(const memory& a_u8, float a_scale, float a_zero_point,
                                     const OpDesc& op, size_t at) {
  const std::vector<int64_t>& dims = graph_.tensors[op.output].dims;
  const memory::desc u8_md(to_dims(dims), dt::u8, tag::nhwc);
  AddOperand in[2];
  in[0] = {a_u8, true, a_scale, a_zero_point + 128.f};
  const int32_t t = op.post_ops[at].tensor;
  if (auto chained = u8_tensors_.find(t); chained != u8_tensors_.end()) {
    in[1] = {src_memory(t), true, chained->second.first, chained->second.second + 128.f};
    if (in[1].mem.get_desc() != u8_md) refuse("quantized add: its uint8 summand's layout");
  } else {
    in[1].mem = as(t, nhwc_md(dims));
  }
  const size_t n_post = op.post_ops.size();
  const Clamp act = clamps_in(op, at + 1, n_post - 2);
  const PostOp &q = op.post_ops[n_post - 2], &d = op.post_ops[n_post - 1];
  const memory dst = make_output(op, u8_md);
  const int64_t n = checked_numel(dims);
  const int threads = threads_;
  const float inv = q.alpha, zp = q.beta;
  OwnStep s{OwnKind::Int8Elementwise,
            "binary,ember:add_u8,forward_inference,,",
            "alg:binary_add " + dims_text(to_dims(dims)),
            {}};
  s.run = [in0 = in[0], in1 = in[1], dst, n, threads, act, inv, zp](void*) {
    const simd::Kernels& k = *simd::kernels();
    auto* out = data_as<uint8_t>(dst);
    split(n, threads, [&](int64_t begin, int64_t count) {
      constexpr int64_t kBlock = 256;
      alignas(64) float a[kBlock], b[kBlock];
      for (int64_t i = begin; i < begin + count; i += kBlock) {
        const int64_t len = std::min(kBlock, begin + count - i);
        const float* x = in0.as_floats(k, i, len, a);
        const float* y = in1.as_floats(k, i, len, b);
        add_clamp_loop(x, y, a, len, act.lo, act.hi);
        k.quantize_u8(a, out + i, len, inv, zp);
      }
    });
  };
  add_own_step(std::move(s));
  u8_tensors_[op.output] = {d.alpha, d.beta};
}

bool CpuDelegate::quantize_pair(size_t i) const {
  if (i + 1 >= graph_.ops.size()) return false;
  const OpDesc &q = graph_.ops[i], &d = graph_.ops[i + 1];
  auto is = [](const OpDesc& op, EltwiseAlg alg) {
    return op.kind == OpKind::Eltwise && op.eltwise().alg == alg && op.post_ops.empty();
  };
  return is(q, EltwiseAlg::Quantize) && is(d, EltwiseAlg::Dequantize) && d.inputs[0] == q.output &&
         readers_[q.output] == 1 && !is_graph_output(q.output);
}

bool CpuDelegate::quantize_pair_u8(size_t i) {
  if (!own_kernels_ || !own_kernels_supported() || !quantize_pair(i)) return false;
  const OpDesc &q = graph_.ops[i], &d = graph_.ops[i + 1];
  if (q.eltwise().beta != d.eltwise().beta || !int8_params(q.eltwise().alpha, q.eltwise().beta) ||
      !int8_params(d.eltwise().alpha, d.eltwise().beta)) {
    return false;
  }
  const std::vector<int64_t>& dims = graph_.tensors[d.output].dims;
  return dims.size() == 4 && graph_.tensors[q.inputs[0]].dims == dims &&
         readers_take_u8(d.output, d.eltwise().alpha, d.eltwise().beta);
}

size_t CpuDelegate::try_fake_quant_pair(size_t i) {
  if (!quantize_pair(i)) return 0;
  const OpDesc &q = graph_.ops[i], &d = graph_.ops[i + 1];
  check_same_dims(q.inputs[0], d.output);
  const PostOp quantize{false, -1, EltwiseAlg::Quantize, q.eltwise().alpha, q.eltwise().beta};
  const PostOp dequantize{false, -1, EltwiseAlg::Dequantize, d.eltwise().alpha, d.eltwise().beta};
  const memory src = src_memory(q.inputs[0]);
  add_quantize_step(src, make_output(d, src.get_desc()), quantize, &dequantize);
  return 2;
}

size_t CpuDelegate::try_quantize_u8(size_t i) {
  if (!quantize_pair_u8(i)) return 0;
  const OpDesc &q = graph_.ops[i], &d = graph_.ops[i + 1];
  if (u8_tensors_.count(q.inputs[0]) != 0) {  // a uint8 max pooling's result
    add_requantize_u8_step(q, d);
    return 2;
  }
  const std::vector<int64_t>& dims = graph_.tensors[d.output].dims;
  const memory::dims md_dims = to_dims(dims);
  memory src = src_memory(q.inputs[0]);
  const bool nchw = src.get_desc() == memory::desc(md_dims, dt::f32, tag::nchw);
  if (!nchw) src = as(q.inputs[0], nhwc_md(dims));
  const memory dst = make_output(d, memory::desc(md_dims, dt::u8, tag::nhwc));
  const int64_t batch = dims[0], c = dims[1], h = dims[2], w = dims[3];
  const int threads = threads_;
  const float inv = q.eltwise().alpha, zp = q.eltwise().beta;
  OwnStep s{OwnKind::Int8Elementwise,
            "eltwise,ember:quantize_u8,forward_inference,,",
            "alg:quantize_per_tensor " + dims_text(md_dims),
            {}};
  s.run = [src, dst, nchw, batch, c, h, w, threads, inv, zp](void*) {
    const simd::Kernels& k = *simd::kernels();
    const float* x = data_as<float>(src);
    auto* out = data_as<uint8_t>(dst);
    if (!nchw) {
      split(batch * h * w * c, threads, [&](int64_t begin, int64_t count) {
        k.quantize_u8(x + begin, out + begin, count, inv, zp);
      });
      return;
    }
    // NCHW in, NHWC out: a block of a row of each channel at a time, then interleaved (an
    // image's three channels by a loop the compiler unrolls).
    split(batch * h, threads, [&](int64_t begin, int64_t count) {
      constexpr int64_t kBlock = 256;
      alignas(64) uint8_t rows[3][kBlock];
      for (int64_t r = begin; r < begin + count; ++r) {
        const int64_t b = r / h, y = r % h;
        for (int64_t x0 = 0; x0 < w; x0 += kBlock) {
          const int64_t len = std::min(kBlock, w - x0);
          uint8_t* o = out + (r * w + x0) * c;
          const float* plane = x + (b * c * h + y) * w + x0;
          if (c == 3) {
            for (int64_t ch = 0; ch < 3; ++ch) {
              k.quantize_u8(plane + ch * h * w, rows[ch], len, inv, zp);
            }
            for (int64_t j = 0; j < len; ++j) {
              o[3 * j] = rows[0][j];
              o[3 * j + 1] = rows[1][j];
              o[3 * j + 2] = rows[2][j];
            }
            continue;
          }
          for (int64_t ch = 0; ch < c; ++ch) {
            k.quantize_u8(plane + ch * h * w, rows[0], len, inv, zp);
            for (int64_t j = 0; j < len; ++j) o[j * c + ch] = rows[0][j];
          }
        }
      }
    });
  };
  add_own_step(std::move(s));
  u8_tensors_[d.output] = {d.eltwise().alpha, d.eltwise().beta};
  return 2;
}

bool CpuDelegate::is_graph_output(int32_t t) const {
  return std::find(graph_.outputs.begin(), graph_.outputs.end(), t) != graph_.outputs.end();
}

bool CpuDelegate::max_pool_takes_u8(const OpDesc& pool) {
  if (pool.kind != OpKind::Pool || pool.pool().alg != PoolAlg::Max || pool.pool().rank() != 2 ||
      !pool.post_ops.empty() || readers_[pool.output] != 1 || is_graph_output(pool.output)) {
    return false;
  }
  const std::vector<int64_t>&in = graph_.tensors[pool.inputs[0]].dims,
        &out = graph_.tensors[pool.output].dims;
  if (in.size() != 4 || out.size() != 4 || in[0] != out[0] || in[1] != out[1]) return false;
  // Every window holds an input element (PyTorch's padding of at most half the kernel sees to
  // it without dilation; a window of padding alone would be -inf in float).
  for (int64_t k = 0; k < 2; ++k) {
    const PoolParams& p = pool.pool();
    const int64_t kernel = p.kernel[k], stride = p.stride[k], pad = p.pad_l[k];
    const int64_t dilation = p.dilation[k];
    for (int64_t o = 0; o < out[2 + k]; ++o) {
      bool any = false;
      for (int64_t t = 0; t < kernel && !any; ++t) {
        const int64_t at = o * stride - pad + t * dilation;
        any = at >= 0 && at < in[2 + k];
      }
      if (!any) return false;
    }
  }
  // Its one reader: a quantize and its dequantize that try_quantize_u8 takes from uint8.
  for (size_t j = 0; j + 1 < graph_.ops.size(); ++j) {
    const OpDesc& q = graph_.ops[j];
    if (q.kind == OpKind::Eltwise && !q.inputs.empty() && q.inputs[0] == pool.output) {
      return quantize_pair_u8(j);
    }
  }
  return false;
}

namespace {

EMBER_QUANT_CLONES void max_u8(uint8_t* acc, const uint8_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], x[i]);
}

}  // namespace

void CpuDelegate::build_max_pool_u8(const OpDesc& op, std::pair<float, float> params) {
  const PoolParams& p = op.pool();
  if (p.alg != PoolAlg::Max) refuse("uint8 pooling: not a max");
  const memory::dims sd = dims_of(op.inputs[0]), od = dims_of(op.output);
  const memory src = src_memory(op.inputs[0]);
  if (src.get_desc() != memory::desc(sd, dt::u8, tag::nhwc)) refuse("uint8 pooling: layout");
  const memory dst = make_output(op, memory::desc(od, dt::u8, tag::nhwc));
  struct Window {
    int64_t in[2], out[2], kernel[2], stride[2], pad[2], dilation[2];
  } w{};
  for (int64_t k = 0; k < 2; ++k) {
    w.in[k] = sd[2 + k];
    w.out[k] = od[2 + k];
    w.kernel[k] = p.kernel[k];
    w.stride[k] = p.stride[k];
    w.pad[k] = p.pad_l[k];
    w.dilation[k] = p.dilation[k];
  }
  const int64_t batch = sd[0], c = sd[1];
  const int threads = threads_;
  OwnStep s{OwnKind::Int8Elementwise,
            "pooling,ember:max_u8,forward_inference,,",
            "alg:pooling_max " + dims_text(sd) + ":" + dims_text(od),
            {}};
  // The largest byte of each window's channels: uint8 is q + 128 of one grid, and dequantizing
  // is increasing, so it is the byte of the float maximum; padding is never a candidate.
  s.run = [src, dst, w, batch, c, threads](void*) {
    const auto* x = data_as<uint8_t>(src);
    auto* y = data_as<uint8_t>(dst);
    split(batch * w.out[0], threads, [&](int64_t begin, int64_t count) {
      for (int64_t row = begin; row < begin + count; ++row) {
        const int64_t b = row / w.out[0], oh = row % w.out[0];
        for (int64_t ow = 0; ow < w.out[1]; ++ow) {
          uint8_t* o = y + ((b * w.out[0] + oh) * w.out[1] + ow) * c;
          bool first = true;
          for (int64_t kh = 0; kh < w.kernel[0]; ++kh) {
            const int64_t ih = oh * w.stride[0] - w.pad[0] + kh * w.dilation[0];
            if (ih < 0 || ih >= w.in[0]) continue;
            for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
              const int64_t iw = ow * w.stride[1] - w.pad[1] + kw * w.dilation[1];
              if (iw < 0 || iw >= w.in[1]) continue;
              const uint8_t* in = x + ((b * w.in[0] + ih) * w.in[1] + iw) * c;
              if (first) {
                std::copy(in, in + c, o);
                first = false;
              } else {
                max_u8(o, in, c);
              }
            }
          }
        }
      }
    });
  };
  add_own_step(std::move(s));
  u8_tensors_[op.output] = params;
}

void CpuDelegate::add_requantize_u8_step(const OpDesc& q, const OpDesc& d) {
  const auto [scale, zero_point] = u8_tensors_.at(q.inputs[0]);
  const memory src = src_memory(q.inputs[0]);
  const memory::dims dims = dims_of(d.output);
  const memory dst = make_output(d, memory::desc(dims, dt::u8, tag::nhwc));
  const int64_t n = checked_numel(graph_.tensors[d.output].dims);
  const int threads = threads_;
  const float shift = zero_point + 128.f, inv = q.eltwise().alpha, zp = q.eltwise().beta;
  OwnStep s{OwnKind::Int8Elementwise,
            "eltwise,ember:requantize_u8,forward_inference,,",
            "alg:quantize_per_tensor " + dims_text(dims),
            {}};
  // Each byte dequantized as PyTorch does, then quantized to the new grid, a block at a time.
  s.run = [src, dst, n, threads, shift, scale, inv, zp](void*) {
    const simd::Kernels& k = *simd::kernels();
    const auto* x = data_as<uint8_t>(src);
    auto* y = data_as<uint8_t>(dst);
    split(n, threads, [&](int64_t begin, int64_t count) {
      constexpr int64_t kBlock = 256;
      alignas(64) float f[kBlock];
      for (int64_t i = begin; i < begin + count; i += kBlock) {
        const int64_t len = std::min(kBlock, begin + count - i);
        k.dequantize_u8(x + i, f, len, shift, scale);
        k.quantize_u8(f, y + i, len, inv, zp);
      }
    });
  };
  add_own_step(std::move(s));
  u8_tensors_[d.output] = {d.eltwise().alpha, d.eltwise().beta};
}

}  // namespace ember::cpu::delegate
