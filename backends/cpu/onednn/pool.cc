// Pooling: oneDNN's average pooling with the exact redo of its overflowed sums, max pooling by
// Ember's NaN-exact kernel (exact.cc), or on bytes where its producer writes uint8
// (quant_chain.cc).
#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {

Error build_pooling(Build& b, const OpDesc& op) try {
  // Written uint8 by its producer, which asked (max_pool_takes_u8).
  const auto& u8_tensors = b.quant_chain().u8_tensors;
  if (auto u8 = u8_tensors.find(op.inputs[0]); u8 != u8_tensors.end()) {
    return build_max_pool_u8(b, op, u8->second);
  }
  const PoolParams& p = op.pool();
  const PoolAlg alg = p.alg;
  const auto r = static_cast<int64_t>(p.rank());
  memory::dims dil = p.dilation;
  for (auto& d : dil) d -= 1;
  const memory::dims sd = b.dims_of(op.inputs[0]);
  const memory::dims od = b.dims_of(op.output);
  if (static_cast<int64_t>(sd.size()) != r + 2 || od.size() != sd.size()) {
    return refused("pooling ranks disagree");
  }
  if (od[0] != sd[0] || od[1] != sd[1]) return refused("pooling changes batch or channels");
  for (int64_t i = 0; i < r; ++i) {
    const int64_t k = (p.kernel[i] - 1) * p.dilation[i] + 1;
    const int64_t span = sd[2 + i] + p.pad_l[i] + p.pad_r[i] - k;
    if (span < 0 || od[2 + i] != span / p.stride[i] + 1) {
      return refused("pooling output size disagrees");
    }
  }
  EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(op.inputs[0]));
  const dnnl::algorithm a = alg == PoolAlg::Max ? dnnl::algorithm::pooling_max
                            : alg == PoolAlg::AvgIncludePad
                                ? dnnl::algorithm::pooling_avg_include_padding
                                : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, a, src.get_desc(),
                                   memory::desc(od, dt::f32, tag::any), p.stride, p.kernel, dil,
                                   p.pad_l, p.pad_r);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::pooling_v2_forward::primitive_desc pd(d, attr, b.engine());
  // oneDNN's max pooling skips NaN; Ember's kernel writes the layout oneDNN's would.
  if (alg == PoolAlg::Max) return build_max_pool(b, op, src, pd.dst_desc());
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  EMBER_TRY(
      b.add_primitive<dnnl::pooling_v2_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}));
  // oneDNN's float sums overflow near float32's maximum where ATen's mean does not.
  return add_avg_pool_redo_step(b, op, src, dst, alg == PoolAlg::AvgIncludePad);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
