// The convolution family: Conv (and the float form of a QuantConv) on oneDNN's convolution or
// deconvolution, by Winograd where it is exact, after Ember's depthwise and pointwise kernels
// where they apply (own_kernels.cc).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "backends/cpu/kernels/nan_exact.h"
#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {
namespace {

// Whether Winograd is exact for `op` at every input within kWinogradMaxInput: its weight and
// bias are constants within kWinogradMaxWeight, and its input channels few enough.
Result<bool> winograd_safe(Build& b, const OpDesc& op, int64_t in_channels) try {
  if (in_channels > kWinogradMaxChannels) return false;
  for (int k : {1, 2}) {
    const int32_t id = op.inputs[k];
    if (id < 0) continue;
    // A weight computed at run time would need a scan at every call: direct instead.
    if (b.tensor(id).kind != TensorKind::Weight) return false;
    EMBER_ASSIGN_OR_RETURN(memory m, b.src_memory(id));
    const auto n = static_cast<int64_t>(m.get_desc().get_size() / sizeof(float));
    if (m.get_desc().data_type() != dt::f32 ||
        !all_within(static_cast<const float*>(m.get_data_handle()), n, kWinogradMaxWeight, 1)) {
      return false;
    }
  }
  return true;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

// The float weight as oneDNN's convolution reads it (g.logical), a view of its storage. A weight
// held in another order of its dims (XNNPACK's OHWI filters are OIHW under dim order 0, 2, 3, 1)
// is viewed through its own strides, so that its one reorder into the primitive's layout reads it
// where it lies; a dense copy first would be a second reorder and a buffer as large as the weight.
Result<memory> weight_view(Build& b, const OpDesc& op, const ConvGeometry& g) try {
  EMBER_ASSIGN_OR_RETURN(memory w, b.src_memory(op.inputs[1]));
  const memory::desc plain = plain_md(g.wd, dt::f32);
  memory::dims s = w.get_desc() == plain ? memory::dims() : plain_strides(w.get_desc());
  if (s.size() != g.wd.size() || w.get_desc().dims() != g.wd) {
    if (w.get_desc() != plain) {
      EMBER_ASSIGN_OR_RETURN(w, b.as(op.inputs[1], plain));
    }
    return b.view(w, memory::desc(g.logical, dt::f32, g.strides_w));
  }
  // conv_geometry's strides_w for these strides rather than dense ones.
  const int64_t groups = g.groups;
  memory::dims strides;
  if (!g.transposed) {
    strides =
        groups == 1 ? memory::dims{s[0], s[1]} : memory::dims{g.wd[0] / groups * s[0], s[0], s[1]};
  } else {
    strides =
        groups == 1 ? memory::dims{s[1], s[0]} : memory::dims{g.wd[0] / groups * s[0], s[1], s[0]};
  }
  strides.insert(strides.end(), s.begin() + 2, s.end());
  return b.view(w, memory::desc(g.logical, dt::f32, strides));
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace

Result<ConvGeometry> conv_geometry(Build& b, const OpDesc& op) {
  ConvGeometry g;
  const ConvParams& p = op.conv();
  const auto r = g.r = static_cast<int64_t>(p.rank());
  const int64_t groups = g.groups = p.groups;
  const bool transposed = g.transposed = p.transposed;
  const memory::dims sd = g.sd = b.dims_of(op.inputs[0]);
  const memory::dims wd = g.wd = to_dims(b.tensor(op.inputs[1]).dims);
  const memory::dims od = g.od = b.dims_of(op.output);
  if (static_cast<int64_t>(sd.size()) != r + 2 || static_cast<int64_t>(wd.size()) != r + 2 ||
      static_cast<int64_t>(od.size()) != r + 2) {
    return refused("convolution ranks disagree");
  }
  if (wd[0] % groups != 0) return refused("groups do not divide");
  const memory::dims strides = g.strides = p.stride, pad_l = g.pad_l = p.pad_l,
                     pad_r = g.pad_r = p.pad_r;
  memory::dims dil = p.dilation;
  // oneDNN does not check every size against the others: a blob whose sizes disagree would
  // read or write out of bounds, so each is checked here.
  if (od[0] != sd[0]) return refused("convolution batch sizes differ");
  if (!transposed ? (sd[1] != wd[1] * groups || od[1] != wd[0])
                  : (sd[1] != wd[0] || od[1] != wd[1] * groups)) {
    return refused("convolution channels disagree with the weight");
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
    if (od[2 + i] != expect || wd[2 + i] < 1) return refused("convolution output size disagrees");
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

Error build_convolution(Build& b, const OpDesc& op) { return build_conv(b, op, b.math_type()); }

Error build_conv(Build& b, const OpDesc& op, dt wdt) try {
  if (b.own_kernels() && own_conv_kernels_chosen()) {
    EMBER_ASSIGN_OR_RETURN(const bool depthwise, try_depthwise(b, op));
    if (depthwise) return Error::Ok;
    EMBER_ASSIGN_OR_RETURN(const bool pointwise, try_pointwise(b, op));
    if (pointwise) return Error::Ok;
  }
  EMBER_ASSIGN_OR_RETURN(const ConvGeometry g, conv_geometry(b, op));
  const int64_t r = g.r, groups = g.groups;
  const bool transposed = g.transposed;
  const memory::dims &sd = g.sd, &wd = g.wd, &od = g.od, &strides = g.strides, &pad_l = g.pad_l,
                     &pad_r = g.pad_r, &dil = g.dil, &kd = g.kd, &logical = g.logical;
  EMBER_ASSIGN_OR_RETURN(memory w_view, weight_view(b, op, g));
  // In bf16 mode a result that only convolutions and matmuls read is stored in bf16: they would
  // round it to bf16 first anyway, so this saves a conversion and half the traffic, exactly.
  bool bf16_dst = wdt == dt::bf16 && b.feeds_only_bf16_math(op.output);
  for (const PostOp& p : op.post_ops) bf16_dst = bf16_dst && !p.is_sum;
  // A clamp after the primitive (fused_post_ops) reads and writes f32.
  bf16_dst = bf16_dst && Build::fused_post_ops(op).size() == op.post_ops.size();
  const memory::desc src_any(sd, wdt, tag::any);
  const memory::desc dst_any(od, bf16_dst ? dt::bf16 : dt::f32, tag::any);
  const memory::desc w_any(logical, wdt, tag::any);
  const bool has_bias = op.inputs[2] >= 0;
  const memory::desc bias_md = has_bias ? memory::desc({od[1]}, dt::f32, tag::a) : memory::desc();
  if (has_bias && checked_numel(b.tensor(op.inputs[2]).dims) != od[1]) {
    return refused("convolution bias size differs from the output channels");
  }
  EMBER_ASSIGN_OR_RETURN(const dnnl::primitive_attr attr, b.attr_for(op));
  memory::desc src_md, wei_md, dst_md;
  dnnl::primitive prim, alt;
  size_t scratch = 0;
  dnnl::convolution_forward::primitive_desc alt_pd;
  if (!transposed) {
    dnnl::convolution_forward::primitive_desc pd;
    bool wino_shape = wdt == dt::f32 && groups == 1 && r == 2 && kd[0] == 3 && kd[1] == 3 &&
                      strides[0] == 1 && strides[1] == 1 && dil[0] == 0 && dil[1] == 0 &&
                      b.options().winograd;
    if (wino_shape) {
      EMBER_ASSIGN_OR_RETURN(wino_shape, winograd_safe(b, op, wd[1]));
    }
    auto direct = [&](const memory::desc& s_md, const memory::desc& d_md) {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, s_md, w_any, bias_md,
                                        d_md, strides, dil, pad_l, pad_r);
      return dnnl::convolution_forward::primitive_desc(d, attr, b.engine());
    };
    if (wino_shape) {
      try {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_winograd, src_any, w_any,
                                          bias_md, dst_any, strides, dil, pad_l, pad_r);
        pd = dnnl::convolution_forward::primitive_desc(d, attr, b.engine());
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
    scratch = Build::scratch_bytes(pd);
    if (alt_pd) {
      alt = dnnl::convolution_forward(alt_pd);
      scratch = std::max(scratch, Build::scratch_bytes(alt_pd));
    }
  } else {
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::deconvolution_direct, src_any, w_any,
                                        bias_md, dst_any, strides, dil, pad_l, pad_r);
    dnnl::deconvolution_forward::primitive_desc pd(d, attr, b.engine());
    src_md = pd.src_desc();
    wei_md = pd.weights_desc();
    dst_md = pd.dst_desc();
    prim = dnnl::deconvolution_forward(pd);
    scratch = Build::scratch_bytes(pd);
  }
  // A constant weight is reordered once for every batch size the graph is built for.
  auto reorder = [&](const memory::desc& md, std::string_view what) -> Result<memory> {
    if (!b.is_constant(op.inputs[1])) return b.reorder_weight(w_view, op.inputs[1], md);
    return b.shared_weight_reorder(op.inputs[1], md, what,
                                   [&]() -> Result<memory> { return w_view; });
  };
  EMBER_ASSIGN_OR_RETURN(memory src, b.as(op.inputs[0], src_md));
  EMBER_ASSIGN_OR_RETURN(memory wei, reorder(wei_md, transposed ? "deconvolution" : "convolution"));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, dst_md));
  StepArgs args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  memory bias;
  if (has_bias) {
    EMBER_ASSIGN_OR_RETURN(const memory bias_plain,
                           b.as(op.inputs[2], plain_md(b.dims_of(op.inputs[2]), dt::f32)));
    EMBER_ASSIGN_OR_RETURN(bias, b.view(bias_plain, bias_md));
    args.emplace_back(DNNL_ARG_BIAS, bias);
  }
  // The exact redo reads the weights in a blocked layout: Winograd's own is not one, the direct
  // convolution's (which runs for inputs Winograd cannot take) is.
  memory redo_w = wei_md.data.format_kind == dnnl_blocked ? wei : memory();
  if (alt_pd) {
    StepArgs alt_args = args;
    EMBER_ASSIGN_OR_RETURN(alt_args[1].second,
                           reorder(alt_pd.weights_desc(), "convolution beside winograd"));
    if (!redo_w) redo_w = alt_args[1].second;
    b.add(std::make_unique<GuardedPrimitiveStep>(
        std::move(prim), std::move(args), std::move(alt), std::move(alt_args), scratch, src,
        static_cast<int64_t>(src_md.get_size() / sizeof(float)), kWinogradMaxInput));
  } else {
    b.add(std::make_unique<PrimitiveStep>(std::move(prim), std::move(args), scratch));
  }
  // As for matmuls (build_float_matmul, matmul.cc): oneDNN's float sums overflow in an order of
  // their own near float32's maximum, and only the raw sum (plus bias) shows it; a fused sum or
  // element-wise post-op (clamps never fuse) keeps oneDNN's result, and so does a transposed
  // convolution (whose redo is not written) and bf16 math.
  if (!transposed && wdt == dt::f32 && !bf16_dst && Build::fused_post_ops(op).empty() && redo_w) {
    EMBER_TRY(add_conv_redo_step(b, src, redo_w, bias, dst, r, groups, strides, pad_l, dil));
  }
  EMBER_TRY(add_post_op_steps(b, op, Build::fused_post_ops(op).size(), dst));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
