#include "backends/cpu/kernels/nan_exact.h"
#include "backends/cpu/onednn/delegate.h"

#include <algorithm>
#include <memory>
#include <string>

namespace ember::cpu::delegate {

CpuDelegate::ConvGeometry CpuDelegate::conv_geometry(const OpDesc& op) {
  ConvGeometry g;
  const ConvParams& p = op.conv();
  const auto r = g.r = static_cast<int64_t>(p.rank());
  const int64_t groups = g.groups = p.groups;
  const bool transposed = g.transposed = p.transposed;
  const memory::dims sd = g.sd = dims_of(op.inputs[0]);
  const memory::dims wd = g.wd = to_dims(graph_.tensors[op.inputs[1]].dims);
  const memory::dims od = g.od = dims_of(op.output);
  if (static_cast<int64_t>(sd.size()) != r + 2 || static_cast<int64_t>(wd.size()) != r + 2 ||
      static_cast<int64_t>(od.size()) != r + 2) {
    refuse("convolution ranks disagree");
  }
  if (wd[0] % groups != 0) refuse("groups do not divide");
  const memory::dims strides = g.strides = p.stride, pad_l = g.pad_l = p.pad_l,
                     pad_r = g.pad_r = p.pad_r;
  memory::dims dil = p.dilation;
  // oneDNN does not check every size against the others: a blob whose sizes disagree would
  // read or write out of bounds, so each is checked here.
  if (od[0] != sd[0]) refuse("convolution batch sizes differ");
  if (!transposed ? (sd[1] != wd[1] * groups || od[1] != wd[0])
                  : (sd[1] != wd[0] || od[1] != wd[1] * groups)) {
    refuse("convolution channels disagree with the weight");
  }
  for (int64_t i = 0; i < r; ++i) {
    const int64_t k = (wd[2 + i] - 1) * dil[i] + 1;
    int64_t expect;
    if (!transposed) {
      const int64_t span = sd[2 + i] + pad_l[i] + pad_r[i] - k;
      expect = span < 0 ? -1 : span / strides[i] + 1;
    } else {
      expect = (sd[2 + i] - 1) * strides[i] - pad_l[i] - pad_r[i] + k;
    }
    if (od[2 + i] != expect || wd[2 + i] < 1) refuse("convolution output size disagrees");
  }
  for (auto& d : dil) d -= 1;  // oneDNN counts the gaps
  g.dil = dil;
  // The weights as oneDNN reads them: [G, O/G, I/G, k...] (grouped) or [O, I, k...].
  memory::dims kd(wd.begin() + 2, wd.end());
  g.kd = kd;
  memory::dims& logical = g.logical;
  memory::dims& strides_w = g.strides_w;
  const memory::dims dense = dense_strides(wd, {});
  const int64_t ksize = dense[1];
  if (!transposed) {
    if (groups == 1) {
      logical = wd;
      strides_w = dense;
    } else {
      logical = {groups, wd[0] / groups, wd[1]};
      logical.insert(logical.end(), kd.begin(), kd.end());
      strides_w = {wd[0] / groups * dense[0], dense[0], dense[1]};
      strides_w.insert(strides_w.end(), dense.begin() + 2, dense.end());
    }
  } else {
    // PyTorch stores [I, O/G, k...]; oneDNN's deconvolution reads [G, O/G, I/G, k...].
    const int64_t ig = wd[0] / groups, og = wd[1];
    const int64_t o_stride = ksize, i_stride = og * ksize;
    if (groups == 1) {
      logical = {og, wd[0]};
      strides_w = {o_stride, i_stride};
    } else {
      logical = {groups, og, ig};
      strides_w = {ig * i_stride, o_stride, i_stride};
    }
    logical.insert(logical.end(), kd.begin(), kd.end());
    strides_w.insert(strides_w.end(), dense.begin() + 2, dense.end());
  }
  return g;
}

void CpuDelegate::build_conv(const OpDesc& op, dt wdt) {
  if (own_kernels_ && own_conv_kernels_chosen() && (try_depthwise(op) || try_pointwise(op))) {
    return;
  }
  const ConvGeometry g = conv_geometry(op);
  const int64_t r = g.r, groups = g.groups;
  const bool transposed = g.transposed;
  const memory::dims &sd = g.sd, &wd = g.wd, &od = g.od, &strides = g.strides, &pad_l = g.pad_l,
                     &pad_r = g.pad_r, &dil = g.dil, &kd = g.kd, &logical = g.logical,
                     &strides_w = g.strides_w;
  memory w_plain = src_memory(op.inputs[1]);
  if (w_plain.get_desc() != plain_md(wd, dt::f32)) {
    w_plain = as(op.inputs[1], plain_md(wd, dt::f32));
  }
  memory w_view = view(w_plain, memory::desc(logical, dt::f32, strides_w));
  // In bf16 mode a result that only convolutions and matmuls read is stored in bf16: they would
  // round it to bf16 first anyway, so this saves a conversion and half the traffic, exactly.
  bool bf16_dst = wdt == dt::bf16 && feeds_only_bf16_math_[op.output];
  for (const PostOp& p : op.post_ops) bf16_dst = bf16_dst && !p.is_sum;
  // A clamp after the primitive (fused_post_ops) reads and writes f32.
  bf16_dst = bf16_dst && fused_post_ops(op).size() == op.post_ops.size();
  const memory::desc src_any(sd, wdt, tag::any);
  const memory::desc dst_any(od, bf16_dst ? dt::bf16 : dt::f32, tag::any);
  const memory::desc w_any(logical, wdt, tag::any);
  const bool has_bias = op.inputs[2] >= 0;
  const memory::desc bias_md = has_bias ? memory::desc({od[1]}, dt::f32, tag::a) : memory::desc();
  if (has_bias && checked_numel(graph_.tensors[op.inputs[2]].dims) != od[1]) {
    refuse("convolution bias size differs from the output channels");
  }
  dnnl::primitive_attr attr = attr_for(op);
  memory::desc src_md, wei_md, dst_md;
  dnnl::primitive prim, alt;
  size_t scratch = 0;
  dnnl::convolution_forward::primitive_desc alt_pd;
  if (!transposed) {
    dnnl::convolution_forward::primitive_desc pd;
    const bool wino_shape = wdt == dt::f32 && groups == 1 && r == 2 && kd[0] == 3 && kd[1] == 3 &&
                            strides[0] == 1 && strides[1] == 1 && dil[0] == 0 && dil[1] == 0 &&
                            winograd_ && winograd_safe(op, wd[1]);
    auto direct = [&](const memory::desc& s_md, const memory::desc& d_md) {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, s_md, w_any, bias_md,
                                        d_md, strides, dil, pad_l, pad_r);
      return dnnl::convolution_forward::primitive_desc(d, attr, engine_);
    };
    if (wino_shape) {
      try {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_winograd, src_any, w_any,
                                          bias_md, dst_any, strides, dil, pad_l, pad_r);
        pd = dnnl::convolution_forward::primitive_desc(d, attr, engine_);
        // The direct convolution for inputs Winograd cannot take exactly, in its layouts.
        alt_pd = direct(pd.src_desc(), pd.dst_desc());
      } catch (const dnnl::error&) {
        pd = {};
        alt_pd = {};
      }
    }
    if (!pd) pd = direct(src_any, dst_any);
    src_md = pd.src_desc();
    wei_md = pd.weights_desc();
    dst_md = pd.dst_desc();
    prim = dnnl::convolution_forward(pd);
    scratch = scratch_bytes(pd);
    if (alt_pd) {
      alt = dnnl::convolution_forward(alt_pd);
      scratch = std::max(scratch, scratch_bytes(alt_pd));
    }
  } else {
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::deconvolution_direct, src_any, w_any,
                                        bias_md, dst_any, strides, dil, pad_l, pad_r);
    dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine_);
    src_md = pd.src_desc();
    wei_md = pd.weights_desc();
    dst_md = pd.dst_desc();
    prim = dnnl::deconvolution_forward(pd);
    scratch = scratch_bytes(pd);
  }
  memory src = as(op.inputs[0], src_md);
  memory wei = reorder_weight(w_view, op.inputs[1], wei_md);
  memory dst = make_output(op, dst_md);
  StepArgs args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  memory bias;
  if (has_bias) {
    bias = view(as(op.inputs[2], plain_md(dims_of(op.inputs[2]), dt::f32)), bias_md);
    args.emplace_back(DNNL_ARG_BIAS, bias);
  }
  // The exact redo reads the weights in a blocked layout: Winograd's own is not one, the direct
  // convolution's (which runs for inputs Winograd cannot take) is.
  memory redo_w = wei_md.data.format_kind == dnnl_blocked ? wei : memory();
  if (alt_pd) {
    StepArgs alt_args = args;
    alt_args[1].second = reorder_weight(w_view, op.inputs[1], alt_pd.weights_desc());
    if (!redo_w) redo_w = alt_args[1].second;
    add(std::make_unique<GuardedPrimitiveStep>(
        std::move(prim), std::move(args), std::move(alt), std::move(alt_args), scratch, src,
        static_cast<int64_t>(src_md.get_size() / sizeof(float)), kWinogradMaxInput));
  } else {
    add(std::make_unique<PrimitiveStep>(std::move(prim), std::move(args), scratch));
  }
  // As for matmuls (build_matmul): oneDNN's float sums overflow in an order of their own near
  // float32's maximum, and only the raw sum (plus bias) shows it; a fused sum or element-wise
  // post-op (clamps never fuse) keeps oneDNN's result, and so does a transposed convolution
  // (whose redo is not written) and bf16 math.
  if (!transposed && wdt == dt::f32 && !bf16_dst && fused_post_ops(op).empty() && redo_w) {
    add_conv_redo_step(src, redo_w, bias, dst, r, groups, strides, pad_l, dil);
  }
  add_post_op_steps(op, fused_post_ops(op).size(), dst);
}

bool CpuDelegate::winograd_safe(const OpDesc& op, int64_t in_channels) {
  if (in_channels > kWinogradMaxChannels) return false;
  for (int k : {1, 2}) {
    const int32_t id = op.inputs[k];
    if (id < 0) continue;
    // A weight computed at run time would need a scan at every call: direct instead.
    if (graph_.tensors[id].kind != TensorKind::Weight) return false;
    memory m = src_memory(id);
    const auto n = static_cast<int64_t>(m.get_desc().get_size() / sizeof(float));
    if (m.get_desc().data_type() != dt::f32 ||
        !all_within(static_cast<const float*>(m.get_data_handle()), n, kWinogradMaxWeight, 1)) {
      return false;
    }
  }
  return true;
}

memory CpuDelegate::reorder_weight(const memory& view_of_w, int32_t id, const memory::desc& want) {
  if (view_of_w.get_desc() == want) return view_of_w;
  memory out = buffer(want, held_for(id));
  if (graph_.tensors[id].kind == TensorKind::Weight) {
    reorder_now(view_of_w, out);
  } else {
    add_reorder(view_of_w, out);
  }
  return out;
}

void CpuDelegate::build_matmul(const OpDesc& op, dt wdt) {
  const memory::dims ad = dims_of(op.inputs[0]);
  const memory::dims bd = to_dims(graph_.tensors[op.inputs[1]].dims);
  const memory::dims od = dims_of(op.output);
  if (ad.size() < 2 || ad.size() > 3 || bd.size() != ad.size() || od.size() != ad.size()) {
    refuse("matmul ranks disagree");
  }
  const size_t n = ad.size();
  for (size_t i = 0; i + 2 < n; ++i) {
    if (ad[i] != bd[i] || od[i] != ad[i]) refuse("matmul batch sizes differ");
  }
  if (ad[n - 1] != bd[n - 2] || od[n - 2] != ad[n - 2] || od[n - 1] != bd[n - 1]) {
    refuse("matmul sizes disagree");
  }
  if (try_int8_matmul(op, ad, bd, od)) return;
  const bool const_b = graph_.tensors[op.inputs[1]].kind == TensorKind::Weight;
  if (own_kernels_ && const_b && try_matvec(op, ad, bd, od)) return;
  memory b_src = src_memory(op.inputs[1]);
  if (b_src.get_desc().dims() != bd) refuse("matmul weight view");
  // An activation operand that is a strided view (a permuted KV cache) is read through its
  // strides, in float32: oneDNN's matmul takes any plain strides.
  auto operand_md = [&](const memory& m, const memory::dims& d) {
    const bool strided =
        wdt == dt::f32 && !plain_strides(m.get_desc()).empty() && m.get_desc().dims() == d;
    return strided ? m.get_desc() : plain_md(d, wdt);
  };
  const memory::desc a_md = operand_md(src_memory(op.inputs[0]), ad);
  const memory::desc b_md = const_b ? memory::desc(bd, wdt, tag::any) : operand_md(b_src, bd);
  const memory::desc o_md = plain_md(od, dt::f32);
  memory::desc bias_md;
  if (op.inputs[2] >= 0) {
    const memory::dims biasd = pad_rank(dims_of(op.inputs[2]), od.size());
    if (biasd.size() != od.size()) refuse("matmul bias of higher rank");
    for (size_t i = 0; i < od.size(); ++i) {
      if (biasd[i] != 1 && biasd[i] != od[i]) refuse("matmul bias does not broadcast");
    }
    bias_md = plain_md(biasd, dt::f32);
  }
  dnnl::matmul::desc d(a_md, b_md, bias_md, o_md);
  dnnl::matmul::primitive_desc pd(d, attr_for(op), engine_);
  memory a = as(op.inputs[0], pd.src_desc());
  memory b = reorder_weight(b_src, op.inputs[1], pd.weights_desc());
  memory dst = make_output(op, pd.dst_desc());
  std::vector<std::pair<int, memory>> args = {
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, dst}};
  memory bias;
  if (op.inputs[2] >= 0) {
    bias = view(as(op.inputs[2], plain_md(dims_of(op.inputs[2]), dt::f32)), bias_md);
    args.emplace_back(DNNL_ARG_BIAS, bias);
  }
  add_step<dnnl::matmul>(pd, std::move(args));
  // oneDNN's float sums overflow in an order of their own near float32's maximum: the redo finds
  // such elements by their non-finite value, which only the raw sum (plus bias) keeps. A fused
  // sum or element-wise post-op (tanh, a residual: clamps, sigmoid and gelu never fuse) can map it
  // to a finite one, or lose the summand the redo would need, so such matmuls keep oneDNN's result
  // (they stay fused: unfusing them would cost every call a pass over the output). bf16 math is not
  // float32's result anyway.
  if (wdt == dt::f32 && fused_post_ops(op).empty()) add_matmul_redo_step(a, b, bias, dst);
  add_post_op_steps(op, fused_post_ops(op).size(), dst);
}

bool CpuDelegate::try_matvec(const OpDesc& op, const memory::dims& ad, const memory::dims& bd,
                             const memory::dims& od) {
  const size_t n = ad.size();
  for (size_t i = 0; i + 2 < n; ++i) {
    if (ad[i] != 1) return false;  // no batch
  }
  const int64_t m = ad[n - 2], k = ad[n - 1], cols = bd[n - 1];
  if (m < 1 || k < 1 || cols < 1 || (m > 1 && !own_linear_kernels_chosen())) return false;
  size_t post = 0;
  if (!op.post_ops.empty() && op.post_ops[0].is_sum) ++post;
  Clamp act;
  const bool clamp = post + 1 == op.post_ops.size() && as_clamp({op.post_ops[post]}, &act);
  if (clamp) ++post;
  for (size_t i = post; i < op.post_ops.size(); ++i) {
    if (op.post_ops[i].is_sum) return false;  // a sum after an element-wise op: oneDNN's
  }
  std::vector<float> bias(static_cast<size_t>(cols), 0.f);
  if (op.inputs[2] >= 0) {
    const int64_t count = checked_numel(graph_.tensors[op.inputs[2]].dims);
    if (count != cols && count != 1) return false;
    memory b = as(op.inputs[2], plain_md(dims_of(op.inputs[2]), dt::f32));
    const auto* v = static_cast<const float*>(b.get_data_handle());
    for (int64_t j = 0; j < cols; ++j) bias[j] = v[count == 1 ? 0 : j];
  }
  // The weight as [cols][k] (PyTorch's [out][in]), then packed.
  std::vector<uint8_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint8_t>(i);
  std::swap(order[n - 2], order[n - 1]);
  memory w = as(op.inputs[1], plain_md(bd, dt::f32, order));
  auto packed = std::make_shared<PackedMatrix>(PackedMatrix::pack(
      static_cast<const float*>(w.get_data_handle()), bias.data(), k, cols, weight_storage()));
  const memory::desc a_md = plain_md(ad, dt::f32);
  memory a = as(op.inputs[0], a_md);
  // With a leading sum, the output already holds the summand (make_output puts it there).
  memory dst = make_output(op, plain_md(od, dt::f32));
  const bool sum = !op.post_ops.empty() && op.post_ops[0].is_sum;
  // The exact redo of non-finite sums (add_matvec_redo_step) needs the raw sum: the clamp runs
  // after it, as a step of its own (one row: cheap). With a sum fused, the summand is gone (it may
  // share the output's buffer): such a matvec keeps the kernel's result, as build_matmul does.
  if (sum) {
    add_own_step(matvec_step(std::move(packed), m, act, sum, threads_, a, dst));
  } else {
    add_own_step(matvec_step(packed, m, Clamp{}, false, threads_, a, dst));
    add_matvec_redo_step(std::move(packed), m, a, dst);
    if (clamp) add_clamp_step(dst, dst, act);
  }
  // The post-ops the kernel does not apply, in place, in order.
  add_post_op_steps(op, post, dst);
  return true;
}
}  // namespace ember::cpu::delegate
