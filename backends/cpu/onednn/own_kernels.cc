// The matching of Ember's own convolution kernels: the fused inverted residual block
// (kernels/inverted_residual.h), 3x3 depthwise (kernels/depthwise.h) and 1x1 pointwise
// convolutions (the packed GEMM), where they apply.
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/onednn/families.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu::delegate {
namespace {

// The stride of a plain 2-D convolution of geometry `c` by a weight of dims `wd` (a Conv's or a
// QuantConv's) with a square kernel `k` (weight dims [o, i, k, k]), equal strides, padding
// (k - 1) / 2 on every side and no dilation; 0 for anything else.
int64_t plain_conv2d_stride(const ConvParams& c, const std::vector<int64_t>& wd, int64_t k) {
  if (c.rank() != 2 || c.transposed) return 0;
  const int64_t pad = (k - 1) / 2;
  const bool ok = wd.size() == 4 && wd[2] == k && wd[3] == k && c.stride[0] == c.stride[1] &&
                  c.pad_l[0] == pad && c.pad_l[1] == pad && c.pad_r[0] == pad &&
                  c.pad_r[1] == pad && c.dilation[0] == 1 && c.dilation[1] == 1;
  return ok ? c.stride[0] : 0;
}

// The same of `op`: 0 when it is not a Conv.
int64_t plain_conv2d_stride(const Build& b, const OpDesc& op, int64_t k) {
  if (op.kind != OpKind::Conv) return 0;
  return plain_conv2d_stride(op.conv(), b.tensor(op.inputs[1]).dims, k);
}

}  // namespace

bool as_clamp(const std::vector<PostOp>& post, Clamp* c, int32_t* sum) {
  size_t k = 0;
  if (sum != nullptr) {
    *sum = -1;
    if (!post.empty() && post[0].is_sum) *sum = post[k++].tensor;
  }
  if (k == post.size()) return true;
  if (k + 1 != post.size() || post[k].is_sum) return false;
  if (post[k].alg == EltwiseAlg::Relu && post[k].alpha == 0.f) {
    c->lo = 0.f;
    return true;
  }
  if (post[k].alg == EltwiseAlg::Clip) {
    c->lo = post[k].alpha;
    c->hi = post[k].beta;
    return true;
  }
  return false;
}

Result<size_t> try_inverted_residual(Build& b, size_t i) {
  // Only where Ember's convolution kernels are chosen.
  if (!b.own_kernels() || !own_conv_kernels_chosen()) return size_t{0};
  const std::vector<OpDesc>& ops = b.graph().ops;
  size_t at = i;
  const OpDesc* expand = nullptr;
  const OpDesc* stem = nullptr;  // MobileNet's first convolution, of an image
  const int64_t stem_stride = plain_conv2d_stride(b, ops[at], 3);
  if (plain_conv2d_stride(b, ops[at], 1) == 1 && ops[at].conv().groups == 1) {
    expand = &ops[at++];
  } else if ((stem_stride == 1 || stem_stride == 2) && ops[at].conv().groups == 1 &&
             b.tensor(ops[at].inputs[1]).dims[1] <= kMaxStemChannels) {
    stem = &ops[at++];
  }
  const OpDesc* first = expand != nullptr ? expand : stem;  // null: the depthwise op
  if (at + 1 >= ops.size()) return size_t{0};
  const OpDesc& dw = ops[at];
  const OpDesc& project = ops[at + 1];
  const int64_t stride = plain_conv2d_stride(b, dw, 3);
  if ((stride != 1 && stride != 2) || plain_conv2d_stride(b, project, 1) != 1 ||
      project.conv().groups != 1 || project.inputs[0] != dw.output ||
      !b.private_to(dw.output, at + 1)) {
    return size_t{0};
  }
  const std::vector<int64_t>& sd = b.tensor((first ? first : &dw)->inputs[0]).dims;
  const std::vector<int64_t>& ed = b.tensor(dw.inputs[0]).dims;
  const std::vector<int64_t>& od = b.tensor(project.output).dims;
  const int64_t ce = ed.size() == 4 ? ed[1] : 0;
  if (sd.size() != 4 || ce < 1 || dw.conv().groups != ce || b.tensor(dw.inputs[1]).dims[0] != ce ||
      b.tensor(dw.inputs[1]).dims[1] != 1) {
    return size_t{0};
  }
  InvertedResidual::Params p;
  if (first != nullptr) {
    if (first->output != dw.inputs[0] || !b.private_to(first->output, at) ||
        !b.is_constant(first->inputs[1]) || !b.is_constant(first->inputs[2]) ||
        !as_clamp(first->post_ops, &p.expand_act)) {
      return size_t{0};
    }
  }
  int32_t residual = -1;
  if (!b.is_constant(dw.inputs[1]) || !b.is_constant(dw.inputs[2]) ||
      !b.is_constant(project.inputs[1]) || !b.is_constant(project.inputs[2]) ||
      !as_clamp(dw.post_ops, &p.dw_act) || !as_clamp(project.post_ops, &p.project_act, &residual)) {
    return size_t{0};
  }
  if (residual >= 0 && b.tensor(residual).dims != od) return size_t{0};
  // Only where the expanded tensor of one image outgrows a core's L2 cache: smaller, oneDNN's
  // three convolutions keep it in L2 and are as fast or faster (docs/backends/cpu.md).
  if (ce * ed[2] * ed[3] * static_cast<int64_t>(sizeof(float)) < l2_cache_bytes()) {
    return size_t{0};
  }
  // The sizes were checked against each other when the blob was parsed only as far as the
  // graph format goes; the kernel trusts them, so every one is checked here.
  p.batch = sd[0];
  p.cin = sd[1];
  p.h = sd[2];
  p.w = sd[3];
  if (stem != nullptr) {
    p.stem_stride = stem_stride;
    p.image_h = sd[2];
    p.image_w = sd[3];
    p.h = (sd[2] - 1) / stem_stride + 1;
    p.w = (sd[3] - 1) / stem_stride + 1;
  }
  p.ce = ce;
  p.cout = od.size() == 4 ? od[1] : 0;
  p.stride = stride;
  const int64_t oh = (p.h - 1) / stride + 1, ow = (p.w - 1) / stride + 1;
  const std::vector<int64_t> want_e = {p.batch, ce, p.h, p.w};
  const std::vector<int64_t> want_o = {p.batch, p.cout, oh, ow};
  const std::vector<int64_t> want_d = {p.batch, ce, oh, ow};
  if (p.h < 1 || p.w < 1 || ed != want_e || od != want_o || b.tensor(dw.output).dims != want_d ||
      b.tensor(project.inputs[1]).dims != std::vector<int64_t>{p.cout, ce, 1, 1} ||
      (first == nullptr ? p.cin != ce
                        : b.tensor(first->inputs[1]).dims !=
                              std::vector<int64_t>{ce, p.cin, stem ? 3 : 1, stem ? 3 : 1})) {
    return size_t{0};
  }
  for (const OpDesc* op : {first, &dw, &project}) {
    if (op != nullptr && op->inputs[2] >= 0 &&
        checked_numel(b.tensor(op->inputs[2]).dims) != b.tensor(op->inputs[1]).dims[0]) {
      return size_t{0};
    }
  }
  std::vector<memory> keep;  // until the kernel has packed its copy
  if (expand != nullptr) {
    EMBER_ASSIGN_OR_RETURN(p.expand_w, b.weight_data(expand->inputs[1], &keep));
    EMBER_ASSIGN_OR_RETURN(p.expand_b, b.weight_data(expand->inputs[2], &keep));
  } else if (stem != nullptr) {
    EMBER_ASSIGN_OR_RETURN(p.stem_w, b.weight_data(stem->inputs[1], &keep));
    EMBER_ASSIGN_OR_RETURN(p.stem_b, b.weight_data(stem->inputs[2], &keep));
  }
  EMBER_ASSIGN_OR_RETURN(p.dw_w, b.weight_data(dw.inputs[1], &keep));
  EMBER_ASSIGN_OR_RETURN(p.dw_b, b.weight_data(dw.inputs[2], &keep));
  EMBER_ASSIGN_OR_RETURN(p.project_w, b.weight_data(project.inputs[1], &keep));
  EMBER_ASSIGN_OR_RETURN(p.project_b, b.weight_data(project.inputs[2], &keep));
  auto kernel = std::make_shared<InvertedResidual>(p, b.threads(), b.weight_storage());
  EMBER_TRY(b.storage_error());
  const int32_t in_id = (first ? first : &dw)->inputs[0];
  EMBER_ASSIGN_OR_RETURN(memory src,
                         b.as(in_id, stem ? plain_md(to_dims(sd), dt::f32) : nhwc_md(sd)));
  memory res;
  if (residual >= 0) {
    EMBER_ASSIGN_OR_RETURN(res, b.as(residual, nhwc_md(od)));
  }
  // b.current_op() is still i: the output's buffer is one that no tensor read by ops i.. uses
  // (the kernel reads its input and summand while it writes).
  const memory::desc out_md = nhwc_md(od);
  EMBER_ASSIGN_OR_RETURN(memory dst, b.pooled(out_md, project.output));
  b.set_memory(project.output, dst);
  b.add_own_step(inverted_residual_step(std::move(kernel), p, src, res, dst));
  return at + 2 - i;
}

int64_t depthwise3x3_stride(const Build& b, const OpDesc& op) {
  // A QuantConv's geometry is a Conv's.
  const int64_t stride = op.kind == OpKind::Conv || op.kind == OpKind::QuantConv
                             ? plain_conv2d_stride(op.conv(), b.tensor(op.inputs[1]).dims, 3)
                             : 0;
  const std::vector<int64_t>& sd = b.tensor(op.inputs[0]).dims;
  const std::vector<int64_t>& wd = b.tensor(op.inputs[1]).dims;
  const std::vector<int64_t>& od = b.tensor(op.output).dims;
  if (stride == 0 || sd.size() != 4 || !Depthwise3x3::supports(sd[1], stride) ||
      op.conv().groups != sd[1] || wd[0] != sd[1] || wd[1] != 1 || !b.is_constant(op.inputs[1]) ||
      !b.is_constant(op.inputs[2]) || sd[2] < 1 || sd[3] < 1 ||
      od !=
          std::vector<int64_t>{sd[0], sd[1], (sd[2] - 1) / stride + 1, (sd[3] - 1) / stride + 1} ||
      (op.inputs[2] >= 0 && checked_numel(b.tensor(op.inputs[2]).dims) != sd[1])) {
    return 0;
  }
  return stride;
}

// A 3x3 depthwise convolution (padding 1, stride 1 or 2, channels a multiple of 16) with at most
// a relu/clip after it, through Ember's kernel (kernels/depthwise.h): faster than oneDNN 2.6's,
// and it splits the rows evenly between threads.
Result<bool> try_depthwise(Build& b, const OpDesc& op) {
  const int64_t stride = depthwise3x3_stride(b, op);
  const std::vector<int64_t>& sd = b.tensor(op.inputs[0]).dims;
  const std::vector<int64_t>& od = b.tensor(op.output).dims;
  Clamp act;
  if (stride == 0 || !as_clamp(op.post_ops, &act)) return false;
  std::vector<memory> keep;  // until the kernel has copied the weights
  EMBER_ASSIGN_OR_RETURN(const float* w, b.weight_data(op.inputs[1], &keep));
  EMBER_ASSIGN_OR_RETURN(const float* bias, b.weight_data(op.inputs[2], &keep));
  auto kernel = std::make_shared<Depthwise3x3>(sd[0], sd[2], sd[3], sd[1], stride, w, bias, act,
                                               b.threads(), b.weight_storage());
  EMBER_TRY(b.storage_error());
  EMBER_ASSIGN_OR_RETURN(memory src, b.as(op.inputs[0], nhwc_md(sd)));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, nhwc_md(od)));
  b.add_own_step(depthwise_step(std::move(kernel), sd[0], sd[2], sd[3], sd[1], stride, src, dst));
  return true;
}

// A 1x1 convolution (stride 1, no padding) of a channels-last tensor, with at most a leading
// residual sum and a relu/clip, through the packed GEMM (packed_gemm.h). Only where its input is
// channels-last already (MobileNet's blocks): it never adds a reorder.
Result<bool> try_pointwise(Build& b, const OpDesc& op) try {
  const std::vector<int64_t>& sd = b.tensor(op.inputs[0]).dims;
  const std::vector<int64_t>& wd = b.tensor(op.inputs[1]).dims;
  const std::vector<int64_t>& od = b.tensor(op.output).dims;
  Clamp act;
  int32_t sum = -1;
  if (plain_conv2d_stride(b, op, 1) != 1 || op.conv().groups != 1 || sd.size() != 4 ||
      !b.is_constant(op.inputs[1]) || !b.is_constant(op.inputs[2]) ||
      !as_clamp(op.post_ops, &act, &sum) || !b.has_memory(op.inputs[0])) {
    return false;
  }
  EMBER_ASSIGN_OR_RETURN(const memory src, b.src_memory(op.inputs[0]));
  if (src.get_desc() != nhwc_md(sd)) return false;
  if (wd != std::vector<int64_t>{od.size() == 4 ? od[1] : 0, sd[1], 1, 1} ||
      od != std::vector<int64_t>{sd[0], wd[0], sd[2], sd[3]} ||
      (op.inputs[2] >= 0 && checked_numel(b.tensor(op.inputs[2]).dims) != wd[0])) {
    return false;
  }
  const int64_t k = sd[1], n = wd[0];
  // Packed once for every batch size the graph is built for.
  EMBER_ASSIGN_OR_RETURN(
      std::shared_ptr<PackedMatrix> packed,
      b.shared<PackedMatrix>("pointwise", [&]() -> Result<std::shared_ptr<PackedMatrix>> {
        std::vector<memory> keep;  // until packed
        EMBER_ASSIGN_OR_RETURN(const float* w, b.weight_data(op.inputs[1], &keep));
        EMBER_ASSIGN_OR_RETURN(const float* bias, b.weight_data(op.inputs[2], &keep));
        auto p =
            std::make_shared<PackedMatrix>(PackedMatrix::pack(w, bias, k, n, b.weight_storage()));
        EMBER_TRY(b.storage_error());
        return p;
      }));
  memory res;
  if (sum >= 0) {
    EMBER_ASSIGN_OR_RETURN(res, b.as(sum, nhwc_md(od)));
  }
  // b.current_op() is this op: the output's buffer is not one its inputs use.
  const memory::desc out_md = nhwc_md(od);
  EMBER_ASSIGN_OR_RETURN(memory dst, b.pooled(out_md, op.output));
  b.set_memory(op.output, dst);
  b.add_own_step(
      pointwise_step(std::move(packed), sd[0], sd[2], sd[3], act, b.threads(), src, res, dst));
  return true;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
