#include "backends/cpu/onednn/delegate.h"

#include <algorithm>
#include <memory>

#include "runtime/platform/cpu_isa.h"

namespace ember::cpu::delegate {

int64_t CpuDelegate::plain_conv2d_stride(const OpDesc& op, int64_t k) const {
  if (op.kind != OpKind::Conv) return 0;
  return plain_conv2d_stride(op.conv(), graph_.tensors[op.inputs[1]].dims, k);
}

int64_t CpuDelegate::plain_conv2d_stride(const ConvParams& c, const std::vector<int64_t>& wd,
                                         int64_t k) {
  if (c.rank() != 2 || c.transposed) return 0;
  const int64_t pad = (k - 1) / 2;
  const bool ok = wd.size() == 4 && wd[2] == k && wd[3] == k && c.stride[0] == c.stride[1] &&
                  c.pad_l[0] == pad && c.pad_l[1] == pad && c.pad_r[0] == pad &&
                  c.pad_r[1] == pad && c.dilation[0] == 1 && c.dilation[1] == 1;
  return ok ? c.stride[0] : 0;
}

bool CpuDelegate::private_to(int32_t t, size_t reader) const {
  return graph_.tensors[t].kind == TensorKind::Intermediate && readers_[t] == 1 &&
         last_use_[t] == static_cast<int>(reader) && !shares_storage_[t];
}

bool CpuDelegate::as_clamp(const std::vector<PostOp>& post, Clamp* c, int32_t* sum) {
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

const float* CpuDelegate::weight_data(int32_t id, std::vector<memory>* keep) {
  if (id < 0) return nullptr;
  keep->push_back(as(id, plain_md(dims_of(id), dt::f32)));
  return static_cast<const float*>(keep->back().get_data_handle());
}

size_t CpuDelegate::try_inverted_residual(size_t i) {
  const std::vector<OpDesc>& ops = graph_.ops;
  size_t at = i;
  const OpDesc* expand = nullptr;
  const OpDesc* stem = nullptr;  // MobileNet's first convolution, of an image
  const int64_t stem_stride = plain_conv2d_stride(ops[at], 3);
  if (plain_conv2d_stride(ops[at], 1) == 1 && ops[at].conv().groups == 1) {
    expand = &ops[at++];
  } else if ((stem_stride == 1 || stem_stride == 2) && ops[at].conv().groups == 1 &&
             graph_.tensors[ops[at].inputs[1]].dims[1] <= kMaxStemChannels) {
    stem = &ops[at++];
  }
  const OpDesc* first = expand != nullptr ? expand : stem;  // null: the depthwise op
  if (at + 1 >= ops.size()) return 0;
  const OpDesc& dw = ops[at];
  const OpDesc& project = ops[at + 1];
  const int64_t stride = plain_conv2d_stride(dw, 3);
  if ((stride != 1 && stride != 2) || plain_conv2d_stride(project, 1) != 1 ||
      project.conv().groups != 1 || project.inputs[0] != dw.output ||
      !private_to(dw.output, at + 1)) {
    return 0;
  }
  const std::vector<int64_t>& sd = graph_.tensors[(first ? first : &dw)->inputs[0]].dims;
  const std::vector<int64_t>& ed = graph_.tensors[dw.inputs[0]].dims;
  const std::vector<int64_t>& od = graph_.tensors[project.output].dims;
  const int64_t ce = ed.size() == 4 ? ed[1] : 0;
  if (sd.size() != 4 || ce < 1 || dw.conv().groups != ce ||
      graph_.tensors[dw.inputs[1]].dims[0] != ce || graph_.tensors[dw.inputs[1]].dims[1] != 1) {
    return 0;
  }
  InvertedResidual::Params p;
  if (first != nullptr) {
    if (first->output != dw.inputs[0] || !private_to(first->output, at) ||
        !is_constant(first->inputs[1]) || !is_constant(first->inputs[2]) ||
        !as_clamp(first->post_ops, &p.expand_act)) {
      return 0;
    }
  }
  int32_t residual = -1;
  if (!is_constant(dw.inputs[1]) || !is_constant(dw.inputs[2]) || !is_constant(project.inputs[1]) ||
      !is_constant(project.inputs[2]) || !as_clamp(dw.post_ops, &p.dw_act) ||
      !as_clamp(project.post_ops, &p.project_act, &residual)) {
    return 0;
  }
  if (residual >= 0 && graph_.tensors[residual].dims != od) return 0;
  // Only where the expanded tensor of one image outgrows a core's L2 cache: smaller, oneDNN's
  // three convolutions keep it in L2 and are as fast or faster (docs/backends/cpu.md).
  if (ce * ed[2] * ed[3] * static_cast<int64_t>(sizeof(float)) < l2_cache_bytes()) return 0;
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
  if (p.h < 1 || p.w < 1 || ed != want_e || od != want_o ||
      graph_.tensors[dw.output].dims != want_d ||
      graph_.tensors[project.inputs[1]].dims != std::vector<int64_t>{p.cout, ce, 1, 1} ||
      (first == nullptr ? p.cin != ce
                        : graph_.tensors[first->inputs[1]].dims !=
                              std::vector<int64_t>{ce, p.cin, stem ? 3 : 1, stem ? 3 : 1})) {
    return 0;
  }
  for (const OpDesc* op : {first, &dw, &project}) {
    if (op != nullptr && op->inputs[2] >= 0 &&
        checked_numel(graph_.tensors[op->inputs[2]].dims) !=
            graph_.tensors[op->inputs[1]].dims[0]) {
      return 0;
    }
  }
  std::vector<memory> keep;  // until the kernel has packed its copy
  if (expand != nullptr) {
    p.expand_w = weight_data(expand->inputs[1], &keep);
    p.expand_b = weight_data(expand->inputs[2], &keep);
  } else if (stem != nullptr) {
    p.stem_w = weight_data(stem->inputs[1], &keep);
    p.stem_b = weight_data(stem->inputs[2], &keep);
  }
  p.dw_w = weight_data(dw.inputs[1], &keep);
  p.dw_b = weight_data(dw.inputs[2], &keep);
  p.project_w = weight_data(project.inputs[1], &keep);
  p.project_b = weight_data(project.inputs[2], &keep);
  auto kernel = std::make_shared<InvertedResidual>(p, threads_, weight_storage());
  const int32_t in_id = (first ? first : &dw)->inputs[0];
  memory src = as(in_id, stem ? plain_md(to_dims(sd), dt::f32) : nhwc_md(sd));
  memory res = residual >= 0 ? as(residual, nhwc_md(od)) : memory();
  // cur_op_ is still i: the output's buffer is one that no tensor read by ops i.. uses (the
  // kernel reads its input and summand while it writes).
  const memory::desc out_md = nhwc_md(od);
  memory dst = pooled(out_md, project.output);
  md_[project.output] = out_md;
  mem_[project.output] = dst;
  add_own_step(inverted_residual_step(std::move(kernel), p, src, res, dst));
  return at + 2 - i;
}

memory::desc CpuDelegate::nhwc_md(const std::vector<int64_t>& dims) {
  return plain_md(to_dims(dims), dt::f32, {0, 2, 3, 1});
}

void CpuDelegate::add_own_step(OwnStep o, std::initializer_list<memory> reads) {
  // The build keeps the storage views were made of where a step holds it (a weight's view,
  // such as gamma's, is no owner); a kernel reads its memories through its closure.
  std::vector<memory> keep;
  for (const memory& m : reads) {
    if (m) keep.push_back(m);
  }
  add(std::make_unique<KernelStep>(std::move(o), std::move(keep)));
}

int64_t CpuDelegate::depthwise3x3_stride(const OpDesc& op) const {
  // A QuantConv's geometry is a Conv's.
  const int64_t stride = op.kind == OpKind::Conv || op.kind == OpKind::QuantConv
                             ? plain_conv2d_stride(op.conv(), graph_.tensors[op.inputs[1]].dims, 3)
                             : 0;
  const std::vector<int64_t>& sd = graph_.tensors[op.inputs[0]].dims;
  const std::vector<int64_t>& wd = graph_.tensors[op.inputs[1]].dims;
  const std::vector<int64_t>& od = graph_.tensors[op.output].dims;
  if (stride == 0 || sd.size() != 4 || !Depthwise3x3::supports(sd[1], stride) ||
      op.conv().groups != sd[1] || wd[0] != sd[1] || wd[1] != 1 || !is_constant(op.inputs[1]) ||
      !is_constant(op.inputs[2]) || sd[2] < 1 || sd[3] < 1 ||
      od !=
          std::vector<int64_t>{sd[0], sd[1], (sd[2] - 1) / stride + 1, (sd[3] - 1) / stride + 1} ||
      (op.inputs[2] >= 0 && checked_numel(graph_.tensors[op.inputs[2]].dims) != sd[1])) {
    return 0;
  }
  return stride;
}

bool CpuDelegate::try_depthwise(const OpDesc& op) {
  const int64_t stride = depthwise3x3_stride(op);
  const std::vector<int64_t>& sd = graph_.tensors[op.inputs[0]].dims;
  const std::vector<int64_t>& od = graph_.tensors[op.output].dims;
  Clamp act;
  if (stride == 0 || !as_clamp(op.post_ops, &act)) return false;
  std::vector<memory> keep;  // until the kernel has copied the weights
  const float* w = weight_data(op.inputs[1], &keep);
  const float* b = weight_data(op.inputs[2], &keep);
  auto kernel = std::make_shared<Depthwise3x3>(sd[0], sd[2], sd[3], sd[1], stride, w, b, act,
                                               threads_, weight_storage());
  memory src = as(op.inputs[0], nhwc_md(sd));
  memory dst = make_output(op, nhwc_md(od));
  add_own_step(depthwise_step(std::move(kernel), sd[0], sd[2], sd[3], sd[1], stride, src, dst));
  return true;
}

bool CpuDelegate::try_pointwise(const OpDesc& op) {
  const std::vector<int64_t>& sd = graph_.tensors[op.inputs[0]].dims;
  const std::vector<int64_t>& wd = graph_.tensors[op.inputs[1]].dims;
  const std::vector<int64_t>& od = graph_.tensors[op.output].dims;
  Clamp act;
  int32_t sum = -1;
  if (plain_conv2d_stride(op, 1) != 1 || op.conv().groups != 1 || sd.size() != 4 ||
      !is_constant(op.inputs[1]) || !is_constant(op.inputs[2]) ||
      !as_clamp(op.post_ops, &act, &sum) || !mem_[op.inputs[0]] ||
      src_memory(op.inputs[0]).get_desc() != nhwc_md(sd)) {
    return false;
  }
  if (wd != std::vector<int64_t>{od.size() == 4 ? od[1] : 0, sd[1], 1, 1} ||
      od != std::vector<int64_t>{sd[0], wd[0], sd[2], sd[3]} ||
      (op.inputs[2] >= 0 && checked_numel(graph_.tensors[op.inputs[2]].dims) != wd[0])) {
    return false;
  }
  const int64_t k = sd[1], n = wd[0];
  std::vector<memory> keep;  // until packed
  auto packed = std::make_shared<PackedMatrix>(PackedMatrix::pack(
      weight_data(op.inputs[1], &keep), weight_data(op.inputs[2], &keep), k, n, weight_storage()));
  memory src = src_memory(op.inputs[0]);
  memory res = sum >= 0 ? as(sum, nhwc_md(od)) : memory();
  // cur_op_ is this op: the output's buffer is not one its inputs use.
  const memory::desc out_md = nhwc_md(od);
  memory dst = pooled(out_md, op.output);
  md_[op.output] = out_md;
  mem_[op.output] = dst;
  add_own_step(
      pointwise_step(std::move(packed), sd[0], sd[2], sd[3], act, threads_, src, res, dst));
  return true;
}
}  // namespace ember::cpu::delegate
