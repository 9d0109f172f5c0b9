// Element-wise ops: oneDNN's eltwise and binary primitives, Ember's kernels where oneDNN's lose
// ATen's semantics (is_own_eltwise, exact.cc), and where by Ember's kernel.
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/nan_exact.h"
#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {

Error build_eltwise(Build& b, const OpDesc& op) try {
  EMBER_TRY(b.check_same_dims(op.inputs[0], op.output));
  EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(op.inputs[0]));
  const EltwiseParams& p = op.eltwise();
  PostOp as_post;
  as_post.alg = p.alg;
  as_post.alpha = p.alpha;
  as_post.beta = p.beta;
  if (as_post.alg == EltwiseAlg::Quantize || as_post.alg == EltwiseAlg::Dequantize) {
    EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, src.get_desc()));
    return add_quantize_step(b, src, dst, as_post);
  }
  if (is_own_eltwise(as_post)) {
    EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, src.get_desc()));
    return add_own_eltwise_step(b, src, dst, as_post);
  }
  EMBER_ASSIGN_OR_RETURN(const auto pd, eltwise_primitive(b, src.get_desc(), as_post));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  EMBER_TRY(b.add_primitive<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

namespace {

// dst = minimum, maximum or prelu of a (the result's dims) and b broadcast to it, by Ember's kernel
// (oneDNN's binary_min and binary_max return the other operand where one is NaN; ATen's NaN; oneDNN
// 2.6 has no prelu); or add, sub, mul, div of a plain a and a broadcast b (build_binary: faster
// than oneDNN's generic broadcast). Its element-wise post-ops follow as steps; a sum post-op is
// refused.
Error add_broadcast_step(Build& b, const OpDesc& op, const memory::dims& b_dims,
                         const memory::dims& bd) try {
  for (const PostOp& p : op.post_ops) {
    if (p.is_sum) return refused("a sum fused after minimum, maximum or prelu");
  }
  const memory::dims ad = b.dims_of(op.inputs[0]);
  if (ad.size() > 6) return refused("minimum, maximum or prelu of rank above 6");
  EMBER_ASSIGN_OR_RETURN(memory a, b.as(op.inputs[0], plain_md(ad, dt::f32)));
  EMBER_ASSIGN_OR_RETURN(memory other, b.as(op.inputs[1], plain_md(b_dims, dt::f32)));
  BroadcastShape shape;
  shape.rank = static_cast<int64_t>(ad.size());
  const memory::dims strides = dense_strides(bd, {});
  for (size_t i = 0; i < ad.size(); ++i) {
    shape.dims[i] = ad[i];
    shape.b[i] = bd[i] == 1 ? 0 : strides[i];
  }
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, plain_md(ad, dt::f32)));
  // Ember's kernel and the profiler's name, by BinaryAlg (graph_format.h's order).
  struct Kernel {
    BroadcastOp op;
    const char* what;
  };
  static constexpr Kernel kKernels[kNumBinaryAlgs] = {
      {BroadcastOp::Add, "binary,ember:add,forward_inference,,"},
      {BroadcastOp::Mul, "binary,ember:mul,forward_inference,,"},
      {BroadcastOp::Sub, "binary,ember:sub,forward_inference,,"},
      {BroadcastOp::Div, "binary,ember:div,forward_inference,,"},
      {BroadcastOp::Minimum, "binary,ember:min,forward_inference,,"},
      {BroadcastOp::Maximum, "binary,ember:max,forward_inference,,"},
      {BroadcastOp::Prelu, "binary,ember:prelu,forward_inference,,"},
  };
  const auto [kernel, what] = kKernels[static_cast<size_t>(op.binary().alg)];
  OwnStep s{OwnKind::Exact, what, dims_text(ad) + ":" + dims_text(bd), {}};
  s.run = [a, other, dst, shape, kernel, threads = b.threads()](void*) {
    broadcast_binary(kernel, data_as<const float>(a), data_as<const float>(other),
                     data_as<float>(dst), shape, threads);
  };
  b.add_own_step(std::move(s), {a, other});
  return add_post_op_steps(b, op, 0, dst);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace

namespace {

// `bd` in the layout `md` (of dims `ad`) has, where that is a channel-blocked or channels-last
// layout of rank 3 to 5 and `bd` keeps the channels; else a zero desc.
memory::desc layout_like(const memory::desc& md, const memory::dims& ad, const memory::dims& bd) {
  using tag = memory::format_tag;
  std::vector<tag> tags;
  switch (ad.size()) {
    case 3:
      tags = {tag::aBc8b, tag::aBc16b, tag::acb};
      break;
    case 4:
      tags = {tag::aBcd8b, tag::aBcd16b, tag::acdb};
      break;
    case 5:
      tags = {tag::aBcde8b, tag::aBcde16b, tag::acdeb};
      break;
    default:
      return {};
  }
  if (bd[1] != ad[1]) return {};  // a broadcast of the channels too: plain serves
  for (const tag t : tags) {
    if (memory::desc(ad, dt::f32, t) == md) return memory::desc(bd, dt::f32, t);
  }
  return {};
}

}  // namespace

Error build_binary(Build& b, const OpDesc& op) try {
  EMBER_TRY(b.check_same_dims(op.inputs[0], op.output));
  EMBER_ASSIGN_OR_RETURN(memory src0, b.src_memory(op.inputs[0]));
  const memory::dims ad = b.dims_of(op.inputs[0]);
  const size_t rank = ad.size();
  const memory::dims bd = pad_rank(to_dims(b.tensor(op.inputs[1]).dims), rank);
  if (bd.size() != rank) return refused("binary operand of higher rank");
  for (size_t i = 0; i < rank; ++i) {
    if (bd[i] != 1 && bd[i] != ad[i]) return refused("binary operand does not broadcast");
  }
  if (op.binary().alg == BinaryAlg::Minimum || op.binary().alg == BinaryAlg::Maximum ||
      op.binary().alg == BinaryAlg::Prelu) {
    return add_broadcast_step(b, op, b.dims_of(op.inputs[1]), bd);
  }
  // Arithmetic with a broadcast operand of a plain source on Ember's kernel: oneDNN 2.6's binary
  // took 12-14 us on Swin's attention masks and scales of a few thousand values (its generic
  // broadcast), a microsecond's work. Same-shape operands and blocked sources stay oneDNN's.
  bool sum = false;
  for (const PostOp& p : op.post_ops) sum = sum || p.is_sum;
  if (bd != ad && !sum && rank <= 6 && own_kernels_supported() && b.own_kernels() &&
      src0.get_desc() == plain_md(ad, dt::f32)) {
    return add_broadcast_step(b, op, b.dims_of(op.inputs[1]), bd);
  }
  // An operand of the result's rank takes its layout; one of lower rank (a [16] weight
  // times a [1, 1, 16] activation) is viewed at the result's rank first: a reorder cannot
  // change the rank.
  const bool same_rank = b.dims_of(op.inputs[1]).size() == rank;
  memory src1;
  // A broadcast operand of a channel-blocked or channels-last source takes the source's layout
  // (a per-channel scale [N, C, 1, 1] padded to the block): with a plain one oneDNN 2.6 falls
  // back to its reference binary, measured 100x slower on MobileNetV3's squeeze-and-excite
  // multiplies.
  const memory::desc blocked_like =
      same_rank ? layout_like(src0.get_desc(), ad, bd) : memory::desc();
  if (bd == ad && same_rank) {
    EMBER_ASSIGN_OR_RETURN(src1, b.as(op.inputs[1], src0.get_desc()));
  } else if (!blocked_like.is_zero()) {
    EMBER_ASSIGN_OR_RETURN(src1, b.as(op.inputs[1], blocked_like));
  } else {
    EMBER_ASSIGN_OR_RETURN(memory plain,
                           b.as(op.inputs[1], plain_md(b.dims_of(op.inputs[1]), dt::f32)));
    EMBER_ASSIGN_OR_RETURN(src1, b.view(plain, plain_md(bd, dt::f32)));
  }
  const BinaryAlg which = op.binary().alg;
  dnnl::algorithm alg = dnnl::algorithm::binary_add;
  switch (which) {
    case BinaryAlg::Add:
      break;
    case BinaryAlg::Mul:
      alg = dnnl::algorithm::binary_mul;
      break;
    case BinaryAlg::Sub:  // IEEE's a - b and a / b, as ATen's (vsubps, vdivps)
      alg = dnnl::algorithm::binary_sub;
      break;
    case BinaryAlg::Div:
      alg = dnnl::algorithm::binary_div;
      break;
    case BinaryAlg::Minimum:
    case BinaryAlg::Maximum:
    case BinaryAlg::Prelu:
      return refused("minimum, maximum and prelu are Ember's kernel's");
  }
  dnnl::binary::desc d(alg, src0.get_desc(), src1.get_desc(), src0.get_desc());
  EMBER_ASSIGN_OR_RETURN(dnnl::primitive_attr attr, b.attr_for(op));
  dnnl::binary::primitive_desc pd(d, attr, b.engine());
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  EMBER_TRY(b.add_primitive<dnnl::binary>(
      pd, {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}}));
  return add_post_op_steps(b, op, Build::fused_post_ops(op).size(), dst);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_where(Build& b, const OpDesc& op) {
  const memory::dims od = b.dims_of(op.output);
  if (od.size() > 6) return refused("where of rank above 6");
  WhereShape shape;
  shape.rank = static_cast<int64_t>(od.size());
  for (size_t i = 0; i < od.size(); ++i) shape.dims[i] = od[i];
  // Each operand plain and dense at its own dims, read with stride 0 along a broadcast dim.
  std::vector<memory> reads;
  for (size_t k = 0; k < 3; ++k) {
    const int32_t id = op.inputs[k];
    const bool is_condition = k == 0;
    if ((b.tensor(id).storage == WeightStorage::Bool) != is_condition) {
      return refused("where: the condition must be bool and the values float32");
    }
    const memory::dims d = pad_rank(b.dims_of(id), od.size());
    if (d.size() != od.size()) return refused("where operand of higher rank than the result");
    const dt type = is_condition ? dt::u8 : dt::f32;
    EMBER_ASSIGN_OR_RETURN(memory read, b.as(id, plain_md(b.dims_of(id), type)));
    reads.push_back(read);
    const memory::dims strides = dense_strides(d, {});
    int64_t* out = k == 0 ? shape.c : (k == 1 ? shape.a : shape.b);
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] != od[i] && d[i] != 1) return refused("where operand does not broadcast");
      out[i] = d[i] == 1 ? 0 : strides[i];
    }
  }
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, plain_md(od, dt::f32)));
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact, "binary,ember:where,forward_inference,,", dims_text(od), {}};
  s.run = [c = reads[0], x = reads[1], y = reads[2], dst, shape, threads](void*) {
    where_broadcast(data_as<const uint8_t>(c), data_as<const float>(x), data_as<const float>(y),
                    data_as<float>(dst), shape, threads);
  };
  b.add_own_step(std::move(s), {reads[0], reads[1], reads[2]});
  return Error::Ok;
}

}  // namespace ember::cpu::delegate
