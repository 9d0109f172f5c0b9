// Softmax, the normalizations and reductions: oneDNN's primitives, with Ember's steps where
// oneDNN's float arithmetic departs from ATen's (exact.cc).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {
namespace {

// Per-channel parameter `id` (a norm's scale, shift, mean or variance) as `channels` dense
// floats; an empty memory for none (-1).
Result<memory> channel_param(Build& b, int32_t id, int64_t channels) try {
  if (id < 0) return memory();
  if (checked_numel(b.tensor(id).dims) != channels) return refused("parameter size differs");
  EMBER_ASSIGN_OR_RETURN(memory m, b.as(id, plain_md(b.dims_of(id), dt::f32)));
  return b.view(m, memory::desc({channels}, dt::f32, tag::a));
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace

Error build_softmax(Build& b, const OpDesc& op) try {
  EMBER_TRY(b.check_same_dims(op.inputs[0], op.output));
  const memory::dims d0 = b.dims_of(op.inputs[0]);
  const int64_t axis = op.softmax().axis;
  if (axis >= static_cast<int64_t>(std::max<size_t>(d0.size(), 1))) {
    return refused("softmax axis out of range");
  }
  EMBER_ASSIGN_OR_RETURN(memory src, b.as(op.inputs[0], plain_md(d0, dt::f32)));
  if (!d0.empty() && axis == static_cast<int64_t>(d0.size()) - 1) {
    // Along the last dim: Ember's kernel, one pass a row (kernels/nan_exact.h).
    EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, src.get_desc()));
    return add_softmax_last_dim_step(b, src, dst);
  }
  dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                static_cast<int>(axis));
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::softmax_forward::primitive_desc pd(d, attr, b.engine());
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  EMBER_TRY(b.add_primitive<dnnl::softmax_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}));
  // oneDNN gives [nan, 0, 0] for a row holding +inf; ATen a NaN row.
  return add_softmax_rows_step(b, src, dst, axis);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_reduce(Build& b, const OpDesc& op) try {
  const memory::dims sd = b.dims_of(op.inputs[0]);
  const memory::dims od = b.dims_of(op.output);
  const ReduceParams& p = op.reduce();
  memory::dims kd = sd;  // the result with the reduced dims kept as 1
  for (int64_t d : p.dims) {
    if (d >= static_cast<int64_t>(sd.size())) return refused("reduction dim out of range");
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
  if (od != kd && od != dropped) return refused("reduction output shape mismatch");
  EMBER_ASSIGN_OR_RETURN(memory src, b.as(op.inputs[0], plain_md(sd, dt::f32)));
  const memory::desc kmd = plain_md(kd, dt::f32);
  const auto alg =
      p.alg == ReduceAlg::Mean ? dnnl::algorithm::reduction_mean : dnnl::algorithm::reduction_sum;
  dnnl::reduction::desc d(alg, src.get_desc(), kmd, 0.f, 0.f);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reduction::primitive_desc pd(d, attr, b.engine());
  if (od == kd) {
    EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, kmd));
    return b.add_primitive<dnnl::reduction>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  }
  // keepdim=False: the same elements, viewed without the reduced dims.
  EMBER_ASSIGN_OR_RETURN(memory dst, b.pooled(kmd, op.output));
  EMBER_TRY(b.add_primitive<dnnl::reduction>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}));
  EMBER_ASSIGN_OR_RETURN(memory out, b.view(dst, plain_md(od, dt::f32)));
  b.set_memory(op.output, out);
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_layer_norm(Build& b, const OpDesc& op) try {
  EMBER_TRY(b.check_same_dims(op.inputs[0], op.output));
  const memory::dims sd = b.dims_of(op.inputs[0]);
  if (sd.empty()) return refused("layer norm of a scalar");
  // Not oneDNN's primitive: its float statistics are off by 0.3% for [65503.48, 65503.48,
  // 65500.66] and inf for rows near float32's maximum, where ATen's are exact.
  const memory::desc md = plain_md(sd, dt::f32);
  EMBER_ASSIGN_OR_RETURN(memory src, b.as(op.inputs[0], md));
  EMBER_ASSIGN_OR_RETURN(memory scale, channel_param(b, op.inputs[1], sd.back()));
  EMBER_ASSIGN_OR_RETURN(memory shift, channel_param(b, op.inputs[2], sd.back()));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, md));
  return add_layer_norm_step(b, src, scale, shift, dst, op.norm().eps);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_batch_norm(Build& b, const OpDesc& op) try {
  EMBER_TRY(b.check_same_dims(op.inputs[0], op.output));
  const memory::dims sd = b.dims_of(op.inputs[0]);
  if (sd.size() < 2) return refused("batch norm of rank < 2");
  EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(op.inputs[0]));
  const int64_t c = sd[1];
  EMBER_ASSIGN_OR_RETURN(memory scale, channel_param(b, op.inputs[1], c));
  EMBER_ASSIGN_OR_RETURN(memory shift, channel_param(b, op.inputs[2], c));
  EMBER_ASSIGN_OR_RETURN(memory mean, channel_param(b, op.inputs[3], c));
  EMBER_ASSIGN_OR_RETURN(memory var, channel_param(b, op.inputs[4], c));
  auto flags = dnnl::normalization_flags::use_global_stats;
  if (scale) flags |= dnnl::normalization_flags::use_scale;
  if (shift) flags |= dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                            op.norm().eps, flags);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::batch_normalization_forward::primitive_desc pd(d, attr, b.engine());
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  std::vector<std::pair<int, memory>> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}};
  if (scale) args.emplace_back(DNNL_ARG_SCALE, scale);
  if (shift) args.emplace_back(DNNL_ARG_SHIFT, shift);
  return b.add_primitive<dnnl::batch_normalization_forward>(pd, std::move(args));
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
