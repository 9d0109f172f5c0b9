#include "backends/cpu/onednn/delegate.h"

#include <algorithm>
#include <string>

namespace ember::cpu::delegate {

void CpuDelegate::build_op(const OpDesc& op) {
  const dt wdt = graph_.precision == Precision::Bf16 ? dt::bf16 : dt::f32;
  switch (op.kind) {
    case OpKind::Conv:
      return build_conv(op, wdt);
    case OpKind::QuantConv:
      return build_quant_conv(op);
    case OpKind::QuantMatMul:
      return build_quant_matmul(op);
    case OpKind::GroupQuantMatMul:
      return build_group_quant_matmul(op);
    case OpKind::MatMul:
      return build_matmul(op, wdt);
    case OpKind::Pool:
      return build_pool(op);
    case OpKind::Eltwise: {
      check_same_dims(op.inputs[0], op.output);
      memory src = src_memory(op.inputs[0]);
      const EltwiseParams& p = op.eltwise();
      PostOp as_post;
      as_post.alg = p.alg;
      as_post.alpha = p.alpha;
      as_post.beta = p.beta;
      if (as_post.alg == EltwiseAlg::Quantize || as_post.alg == EltwiseAlg::Dequantize) {
        add_quantize_step(src, make_output(op, src.get_desc()), as_post);
        return;
      }
      if (is_own_eltwise(as_post)) {
        add_own_eltwise_step(src, make_output(op, src.get_desc()), as_post);
        return;
      }
      auto [a, b] = eltwise_params(p.alg, p.alpha, p.beta);
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, eltwise_alg(p.alg),
                                    src.get_desc(), a, b);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::eltwise_forward::primitive_desc pd(d, attr, engine_);
      memory dst = make_output(op, pd.dst_desc());
      add_step<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
      return;
    }
    case OpKind::Binary: {
      check_same_dims(op.inputs[0], op.output);
      memory a = src_memory(op.inputs[0]);
      const memory::dims ad = dims_of(op.inputs[0]);
      const size_t rank = ad.size();
      const memory::dims bd = pad_rank(to_dims(graph_.tensors[op.inputs[1]].dims), rank);
      if (bd.size() != rank) refuse("binary operand of higher rank");
      for (size_t i = 0; i < rank; ++i) {
        if (bd[i] != 1 && bd[i] != ad[i]) refuse("binary operand does not broadcast");
      }
      // An operand of the result's rank takes its layout; one of lower rank (a [16] weight
      // times a [1, 1, 16] activation) is viewed at the result's rank first: a reorder cannot
      // change the rank.
      const bool same_rank = dims_of(op.inputs[1]).size() == rank;
      memory b = bd == ad && same_rank
                     ? as(op.inputs[1], a.get_desc())
                     : view(as(op.inputs[1], plain_md(dims_of(op.inputs[1]), dt::f32)),
                            plain_md(bd, dt::f32));
      const auto alg = op.binary().alg == BinaryAlg::Add ? dnnl::algorithm::binary_add
                                                         : dnnl::algorithm::binary_mul;
      dnnl::binary::desc d(alg, a.get_desc(), b.get_desc(), a.get_desc());
      dnnl::binary::primitive_desc pd(d, attr_for(op), engine_);
      memory dst = make_output(op, pd.dst_desc());
      add_step<dnnl::binary>(pd, {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, dst}});
      add_post_op_steps(op, fused_post_ops(op).size(), dst);
      return;
    }
    case OpKind::Softmax: {
      check_same_dims(op.inputs[0], op.output);
      const memory::dims d0 = dims_of(op.inputs[0]);
      const int64_t axis = op.softmax().axis;
      if (axis >= static_cast<int64_t>(std::max<size_t>(d0.size(), 1))) {
        refuse("softmax axis out of range");
      }
      memory src = as(op.inputs[0], plain_md(d0, dt::f32));
      if (!d0.empty() && axis == static_cast<int64_t>(d0.size()) - 1) {
        // Along the last dim: Ember's kernel, one pass a row (kernels/nan_exact.h).
        add_softmax_last_dim_step(src, make_output(op, src.get_desc()));
        return;
      }
      dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                    static_cast<int>(axis));
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::softmax_forward::primitive_desc pd(d, attr, engine_);
      memory dst = make_output(op, pd.dst_desc());
      add_step<dnnl::softmax_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
      // oneDNN gives [nan, 0, 0] for a row holding +inf; ATen a NaN row.
      add_softmax_rows_step(src, dst, axis);
      return;
    }
    case OpKind::LayerNorm:
      return build_layer_norm(op);
    case OpKind::Reduce:
      return build_reduce(op);
    case OpKind::Slice:
      return build_slice(op);
    case OpKind::Where:
      return build_where(op);
    case OpKind::BatchNorm:
      return build_batch_norm(op);
    case OpKind::Concat: {
      const memory::dims od = dims_of(op.output);
      const auto axis = static_cast<size_t>(op.concat().axis);
      if (axis >= od.size()) refuse("concat axis out of range");
      int64_t along = 0;
      for (int32_t in : op.inputs) {
        const memory::dims d = dims_of(in);
        if (d.size() != od.size()) refuse("concat ranks differ");
        for (size_t i = 0; i < d.size(); ++i) {
          if (i != axis && d[i] != od[i]) refuse("concat sizes differ");
        }
        along += d[axis];
      }
      if (along != od[axis]) refuse("concat output size disagrees");
      std::vector<memory> srcs;
      std::vector<memory::desc> mds;
      for (int32_t in : op.inputs) {
        srcs.push_back(src_memory(in));
        mds.push_back(srcs.back().get_desc());
      }
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::concat::primitive_desc pd(memory::desc(od, dt::f32, tag::any), static_cast<int>(axis),
                                      mds, engine_, attr);
      memory dst = make_output(op, pd.dst_desc());
      std::vector<std::pair<int, memory>> args = {{DNNL_ARG_DST, dst}};
      for (size_t i = 0; i < srcs.size(); ++i) {
        args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]);
      }
      add_step<dnnl::concat>(pd, std::move(args));
      return;
    }
    case OpKind::Reshape: {
      const TensorDesc& s = graph_.tensors[op.inputs[0]];
      const TensorDesc& o = graph_.tensors[op.output];
      if (checked_numel(s.dims) != checked_numel(o.dims)) refuse("reshape changes the size");
      // Row-major bytes of the source, reinterpreted with the new sizes: a view where the source
      // is row-major already (a delegate argument's view is bound to the caller's buffer at each
      // execute, as the argument is; a KV cache read as heads was copied whole every call).
      memory src = src_memory(op.inputs[0]);
      const memory::desc plain_src = plain_md(to_dims(s.dims), dt::f32);
      // A strided view (a permute's) stays one where the new sizes can be read with strides and
      // every reader takes strides (a matmul): K^T of a KV cache is never copied.
      const memory::dims ss = plain_strides(src.get_desc());
      if (src.get_desc() != plain_src && !ss.empty() && s.kind != TensorKind::Weight &&
          src.get_desc().dims() == to_dims(s.dims) && read_as_view_only_[op.output]) {
        const memory::dims ns = reshaped_strides(to_dims(s.dims), ss, to_dims(o.dims));
        if (!ns.empty()) {
          keep_as_view(op, view(src, memory::desc(to_dims(o.dims), dt::f32, ns)));
          return;
        }
      }
      memory dense;
      if (src.get_desc() == plain_src && s.kind != TensorKind::Weight) {
        dense = src;
      } else {
        dense =
            buffer(plain_src, s.kind == TensorKind::Weight ? Held::Transient : Held::Activations);
        if (s.kind == TensorKind::Weight) {
          reorder_now(src, dense);
        } else {
          add_reorder(src, dense);
        }
      }
      md_[op.output] = plain_md(to_dims(o.dims), dt::f32);
      mem_[op.output] = view(dense, md_[op.output]);
      if (dense == src) share_buffer(op.output, op.inputs[0]);
      return;
    }
    case OpKind::Permute: {
      const TensorDesc& s = graph_.tensors[op.inputs[0]];
      const TensorDesc& o = graph_.tensors[op.output];
      const std::vector<int64_t>& perm = op.permute().perm;
      if (perm.size() != s.dims.size()) refuse("permutation of the wrong rank");
      const memory::dims sd = to_dims(s.dims);
      // The source as it is where it is plain with any strides (a view), else made dense.
      memory src = src_memory(op.inputs[0]);
      memory::dims ss = plain_strides(src.get_desc());
      if (ss.empty() || src.get_desc().dims() != sd) {
        src = as(op.inputs[0], plain_md(sd, dt::f32));
        ss = dense_strides(sd, {});
      }
      memory::dims vd, vs;
      for (int64_t p : perm) {
        vd.push_back(sd[p]);
        vs.push_back(ss[p]);
      }
      if (vd != to_dims(o.dims)) refuse("permute output shape mismatch");
      memory permuted = view(src, memory::desc(vd, dt::f32, vs));
      if (s.kind != TensorKind::Weight && read_as_view_only_[op.output]) {
        // Read through strides by every reader (matmuls, through reshapes and permutes): the
        // permuted KV cache of attention is not copied twice a layer.
        keep_as_view(op, permuted);
        return;
      }
      memory::desc out_md = plain_md(vd, dt::f32);
      memory dst;
      for (size_t j = 0; j < graph_.outputs.size() && !dst; ++j) {
        if (graph_.outputs[j] == op.output && !direct_out_[j]) {
          direct_out_[j] = true;
          dst = out_mem_[j];
          out_md = dst.get_desc();
        }
      }
      if (!dst) dst = buffer(out_md, Held::Activations);
      add_reorder(permuted, dst);
      md_[op.output] = out_md;
      mem_[op.output] = dst;
      return;
    }
  }
}

void CpuDelegate::build_reduce(const OpDesc& op) {
  const memory::dims sd = dims_of(op.inputs[0]);
  const memory::dims od = dims_of(op.output);
  const ReduceParams& p = op.reduce();
  memory::dims kd = sd;  // the result with the reduced dims kept as 1
  for (int64_t d : p.dims) {
    if (d >= static_cast<int64_t>(sd.size())) refuse("reduction dim out of range");
    kd[d] = 1;
  }
  memory::dims dropped;
  for (size_t d = 0, i = 0; d < sd.size(); ++d) {
    if (i < p.dims.size() && p.dims[i] == static_cast<int64_t>(d)) {
      ++i;
    } else {
      dropped.push_back(kd[d]);
    }
  }
  if (od != kd && od != dropped) refuse("reduction output shape mismatch");
  memory src = as(op.inputs[0], plain_md(sd, dt::f32));
  const memory::desc kmd = plain_md(kd, dt::f32);
  const auto alg =
      p.alg == ReduceAlg::Mean ? dnnl::algorithm::reduction_mean : dnnl::algorithm::reduction_sum;
  dnnl::reduction::desc d(alg, src.get_desc(), kmd, 0.f, 0.f);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reduction::primitive_desc pd(d, attr, engine_);
  if (od == kd) {
    memory dst = make_output(op, kmd);
    add_step<dnnl::reduction>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    return;
  }
  // keepdim=False: the same elements, viewed without the reduced dims.
  memory dst = pooled(kmd, op.output);
  add_step<dnnl::reduction>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  md_[op.output] = plain_md(od, dt::f32);
  mem_[op.output] = view(dst, md_[op.output]);
}

void CpuDelegate::build_slice(const OpDesc& op) {
  const memory::dims sd = dims_of(op.inputs[0]);
  const memory::dims od = dims_of(op.output);
  const auto dim = static_cast<size_t>(op.slice().dim);
  const int64_t start = op.slice().start;
  if (dim >= sd.size() || od.size() != sd.size()) refuse("slice dim out of range");
  for (size_t i = 0; i < sd.size(); ++i) {
    if (i != dim && od[i] != sd[i]) refuse("slice output shape mismatch");
  }
  if (start > sd[dim] || od[dim] > sd[dim] - start) refuse("slice past the end of its source");
  // The source where it is, when it is plain with any strides (a view), else made dense; the
  // slice is a sub-block of it, copied (a view with an offset would reach readers, Ember's own
  // kernels among them, that take a base pointer and strides only).
  memory src = src_memory(op.inputs[0]);
  memory::dims ss = plain_strides(src.get_desc());
  if (ss.empty() || src.get_desc().dims() != sd) {
    src = as(op.inputs[0], plain_md(sd, dt::f32));
    ss = dense_strides(sd, {});
  }
  memory::dims offsets(sd.size(), 0);
  offsets[dim] = start;
  memory part = view(src, memory::desc(sd, dt::f32, ss).submemory_desc(od, offsets));
  memory dst = make_output(op, plain_md(od, dt::f32));
  add_reorder(part, dst);
}

void CpuDelegate::build_pool(const OpDesc& op) {
  // Written uint8 by its producer, which asked (max_pool_takes_u8).
  if (auto u8 = u8_tensors_.find(op.inputs[0]); u8 != u8_tensors_.end()) {
    return build_max_pool_u8(op, u8->second);
  }
  const PoolParams& p = op.pool();
  const PoolAlg alg = p.alg;
  const auto r = static_cast<int64_t>(p.rank());
  memory::dims dil = p.dilation;
  for (auto& d : dil) d -= 1;
  const memory::dims sd = dims_of(op.inputs[0]);
  const memory::dims od = dims_of(op.output);
  if (static_cast<int64_t>(sd.size()) != r + 2 || od.size() != sd.size()) {
    refuse("pooling ranks disagree");
  }
  if (od[0] != sd[0] || od[1] != sd[1]) refuse("pooling changes batch or channels");
  for (int64_t i = 0; i < r; ++i) {
    const int64_t k = (p.kernel[i] - 1) * p.dilation[i] + 1;
    const int64_t span = sd[2 + i] + p.pad_l[i] + p.pad_r[i] - k;
    if (span < 0 || od[2 + i] != span / p.stride[i] + 1) {
      refuse("pooling output size disagrees");
    }
  }
  memory src = src_memory(op.inputs[0]);
  const dnnl::algorithm a = alg == PoolAlg::Max ? dnnl::algorithm::pooling_max
                            : alg == PoolAlg::AvgIncludePad
                                ? dnnl::algorithm::pooling_avg_include_padding
                                : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, a, src.get_desc(),
                                   memory::desc(od, dt::f32, tag::any), p.stride, p.kernel, dil,
                                   p.pad_l, p.pad_r);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::pooling_v2_forward::primitive_desc pd(d, attr, engine_);
  // oneDNN's max pooling skips NaN; Ember's kernel writes the layout oneDNN's would.
  if (alg == PoolAlg::Max) return build_max_pool(op, src, pd.dst_desc());
  memory dst = make_output(op, pd.dst_desc());
  add_step<dnnl::pooling_v2_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  // oneDNN's float sums overflow near float32's maximum where ATen's mean does not.
  add_avg_pool_redo_step(op, src, dst, alg == PoolAlg::AvgIncludePad);
}

memory CpuDelegate::channel_param(int32_t id, int64_t channels) {
  if (id < 0) return memory();
  if (checked_numel(graph_.tensors[id].dims) != channels) refuse("parameter size differs");
  memory m = as(id, plain_md(dims_of(id), dt::f32));
  return view(m, memory::desc({channels}, dt::f32, tag::a));
}

void CpuDelegate::build_layer_norm(const OpDesc& op) {
  check_same_dims(op.inputs[0], op.output);
  const memory::dims sd = dims_of(op.inputs[0]);
  if (sd.empty()) refuse("layer norm of a scalar");
  // Not oneDNN's primitive: its float statistics are off by 0.3% for [65503.48, 65503.48,
  // 65500.66] and inf for rows near float32's maximum, where ATen's are exact (issue 20).
  const memory::desc md = plain_md(sd, dt::f32);
  memory src = as(op.inputs[0], md);
  memory g = channel_param(op.inputs[1], sd.back());
  memory b = channel_param(op.inputs[2], sd.back());
  memory dst = make_output(op, md);
  add_layer_norm_step(src, g, b, dst, op.norm().eps);
}

void CpuDelegate::build_batch_norm(const OpDesc& op) {
  check_same_dims(op.inputs[0], op.output);
  const memory::dims sd = dims_of(op.inputs[0]);
  if (sd.size() < 2) refuse("batch norm of rank < 2");
  memory src = src_memory(op.inputs[0]);
  const int64_t c = sd[1];
  memory g = channel_param(op.inputs[1], c);
  memory b = channel_param(op.inputs[2], c);
  memory mean = channel_param(op.inputs[3], c);
  memory var = channel_param(op.inputs[4], c);
  auto flags = dnnl::normalization_flags::use_global_stats;
  if (g) flags |= dnnl::normalization_flags::use_scale;
  if (b) flags |= dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                            op.norm().eps, flags);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::batch_normalization_forward::primitive_desc pd(d, attr, engine_);
  memory dst = make_output(op, pd.dst_desc());
  std::vector<std::pair<int, memory>> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}};
  if (g) args.emplace_back(DNNL_ARG_SCALE, g);
  if (b) args.emplace_back(DNNL_ARG_SHIFT, b);
  add_step<dnnl::batch_normalization_forward>(pd, std::move(args));
}
}  // namespace ember::cpu::delegate
