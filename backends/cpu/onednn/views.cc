// The ops that move data without computing on it: reshape and permute (views of their source's
// storage where every reader takes strides, else copies), concat and slice.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {

Error build_reshape(Build& b, const OpDesc& op) try {
  const TensorDesc& s = b.tensor(op.inputs[0]);
  const TensorDesc& o = b.tensor(op.output);
  if (checked_numel(s.dims) != checked_numel(o.dims)) return refused("reshape changes the size");
  // Row-major bytes of the source, reinterpreted with the new sizes: a view where the source
  // is row-major already (a delegate argument's view is bound to the caller's buffer at each
  // execute, as the argument is; a KV cache read as heads was copied whole every call).
  EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(op.inputs[0]));
  const memory::desc plain_src = plain_md(to_dims(s.dims), dt::f32);
  // A strided view (a permute's) stays one where the new sizes can be read with strides and
  // every reader takes strides (a matmul): K^T of a KV cache is never copied.
  const memory::dims ss = plain_strides(src.get_desc());
  if (src.get_desc() != plain_src && !ss.empty() && s.kind != TensorKind::Weight &&
      src.get_desc().dims() == to_dims(s.dims) && b.read_as_view_only(op.output)) {
    const memory::dims ns = reshaped_strides(to_dims(s.dims), ss, to_dims(o.dims));
    if (!ns.empty()) {
      EMBER_ASSIGN_OR_RETURN(memory v, b.view(src, memory::desc(to_dims(o.dims), dt::f32, ns)));
      b.keep_as_view(op, v);
      return Error::Ok;
    }
  }
  memory dense;
  if (src.get_desc() == plain_src && s.kind != TensorKind::Weight) {
    dense = src;
  } else {
    EMBER_ASSIGN_OR_RETURN(
        dense,
        b.buffer(plain_src, s.kind == TensorKind::Weight ? Held::Transient : Held::Activations));
    if (s.kind == TensorKind::Weight) {
      EMBER_TRY(b.reorder_now(src, dense));
    } else {
      EMBER_TRY(b.add_reorder(src, dense));
    }
  }
  EMBER_ASSIGN_OR_RETURN(memory out, b.view(dense, plain_md(to_dims(o.dims), dt::f32)));
  b.set_memory(op.output, out);
  if (dense == src) b.share_buffer(op.output, op.inputs[0]);
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_permute(Build& b, const OpDesc& op) try {
  const TensorDesc& s = b.tensor(op.inputs[0]);
  const TensorDesc& o = b.tensor(op.output);
  const std::vector<int64_t>& perm = op.permute().perm;
  if (perm.size() != s.dims.size()) return refused("permutation of the wrong rank");
  const memory::dims sd = to_dims(s.dims);
  // The source as it is where it is plain with any strides (a view), else made dense.
  EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(op.inputs[0]));
  memory::dims ss = plain_strides(src.get_desc());
  if (ss.empty() || src.get_desc().dims() != sd) {
    EMBER_ASSIGN_OR_RETURN(src, b.as(op.inputs[0], plain_md(sd, dt::f32)));
    ss = dense_strides(sd, {});
  }
  memory::dims vd, vs;
  for (int64_t p : perm) {
    vd.push_back(sd[p]);
    vs.push_back(ss[p]);
  }
  if (vd != to_dims(o.dims)) return refused("permute output shape mismatch");
  EMBER_ASSIGN_OR_RETURN(memory permuted, b.view(src, memory::desc(vd, dt::f32, vs)));
  if (s.kind != TensorKind::Weight && b.read_as_view_only(op.output)) {
    // Read through strides by every reader (matmuls, through reshapes and permutes): the
    // permuted KV cache of attention is not copied twice a layer.
    b.keep_as_view(op, permuted);
    return Error::Ok;
  }
  memory::desc out_md = plain_md(vd, dt::f32);
  memory dst = b.claim_output(op.output);
  if (dst) out_md = dst.get_desc();
  if (!dst) {
    EMBER_ASSIGN_OR_RETURN(dst, b.buffer(out_md, Held::Activations));
  }
  EMBER_TRY(b.add_reorder(permuted, dst));
  b.set_memory(op.output, dst);
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_concat(Build& b, const OpDesc& op) try {
  const memory::dims od = b.dims_of(op.output);
  const auto axis = static_cast<size_t>(op.concat().axis);
  if (axis >= od.size()) return refused("concat axis out of range");
  int64_t along = 0;
  for (int32_t in : op.inputs) {
    const memory::dims d = b.dims_of(in);
    if (d.size() != od.size()) return refused("concat ranks differ");
    for (size_t i = 0; i < d.size(); ++i) {
      if (i != axis && d[i] != od[i]) return refused("concat sizes differ");
    }
    along += d[axis];
  }
  if (along != od[axis]) return refused("concat output size disagrees");
  std::vector<memory> srcs;
  std::vector<memory::desc> mds;
  for (int32_t in : op.inputs) {
    EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(in));
    srcs.push_back(src);
    mds.push_back(srcs.back().get_desc());
  }
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::concat::primitive_desc pd(memory::desc(od, dt::f32, tag::any), static_cast<int>(axis), mds,
                                  b.engine(), attr);
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  std::vector<std::pair<int, memory>> args = {{DNNL_ARG_DST, dst}};
  for (size_t i = 0; i < srcs.size(); ++i) {
    args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]);
  }
  return b.add_primitive<dnnl::concat>(pd, std::move(args));
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_slice(Build& b, const OpDesc& op) try {
  const memory::dims sd = b.dims_of(op.inputs[0]);
  const memory::dims od = b.dims_of(op.output);
  const auto dim = static_cast<size_t>(op.slice().dim);
  const int64_t start = op.slice().start;
  if (dim >= sd.size() || od.size() != sd.size()) return refused("slice dim out of range");
  for (size_t i = 0; i < sd.size(); ++i) {
    if (i != dim && od[i] != sd[i]) return refused("slice output shape mismatch");
  }
  if (start > sd[dim] || od[dim] > sd[dim] - start) {
    return refused("slice past the end of its source");
  }
  // The source where it is, when it is plain with any strides (a view), else made dense; the
  // slice is a sub-block of it, copied (a view with an offset would reach readers, Ember's own
  // kernels among them, that take a base pointer and strides only).
  EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(op.inputs[0]));
  memory::dims ss = plain_strides(src.get_desc());
  if (ss.empty() || src.get_desc().dims() != sd) {
    EMBER_ASSIGN_OR_RETURN(src, b.as(op.inputs[0], plain_md(sd, dt::f32)));
    ss = dense_strides(sd, {});
  }
  memory::dims offsets(sd.size(), 0);
  offsets[dim] = start;
  EMBER_ASSIGN_OR_RETURN(memory part,
                         b.view(src, memory::desc(sd, dt::f32, ss).submemory_desc(od, offsets)));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, plain_md(od, dt::f32)));
  return b.add_reorder(part, dst);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
