// The Translator's post-ops (translate_internal.h): fused output clamps, the requantization of a
// static int8 node's result onto its grid, and the clamps and residual adds folded into a
// quantized convolution's post-ops.
#include "backends/xnnpack/translate_internal.h"

#include <utility>
#include <vector>

namespace ember::xnn::detail {

bool Translator::takes_post_ops(OpKind kind) {
  return kind == OpKind::Conv || kind == OpKind::MatMul || kind == OpKind::Binary ||
         kind == OpKind::QuantConv || kind == OpKind::QuantMatMul;
}

int32_t Translator::apply_post_ops(int32_t t, const std::vector<cpu::PostOp>& post) {
  for (const cpu::PostOp& p : post) {
    OpDesc d;
    d.kind = OpKind::Eltwise;
    d.inputs = {t};
    d.params = cpu::EltwiseParams{p.alg, p.alpha, p.beta};
    d.output = intermediate(out_.graph.tensors[t].dims);
    t = d.output;
    out_.graph.ops.push_back(std::move(d));
  }
  return t;
}

int32_t Translator::to_grid(const Value& y, int32_t t) {
  const cpu::PostOp q{false, -1, EltwiseAlg::Quantize, 1.0f / y.quant.scale,
                      static_cast<float>(y.quant.zero_point)};
  const cpu::PostOp dq{false, -1, EltwiseAlg::Dequantize, y.quant.scale,
                       static_cast<float>(y.quant.zero_point)};
  std::vector<OpDesc>& ops = out_.graph.ops;
  if (ops.size() > node_first_op_ && ops.back().output == t && takes_post_ops(ops.back().kind)) {
    ops.back().post_ops.push_back(q);
    ops.back().post_ops.push_back(dq);
    return t;
  }
  const std::vector<int64_t> dims = out_.graph.tensors[t].dims;
  t = emit(OpKind::Eltwise, {t}, cpu::EltwiseParams{q.alg, q.alpha, q.beta}, dims);
  return emit(OpKind::Eltwise, {t}, cpu::EltwiseParams{dq.alg, dq.alpha, dq.beta}, dims);
}

namespace {

// The engine's post-op clamping to [lo, hi]: a relu where that is [0, inf).
cpu::PostOp clamp_post_op(float lo, float hi) {
  cpu::PostOp p;
  if (lo == 0 && hi == kInf) {
    p.alg = EltwiseAlg::Relu;
  } else {
    p.alg = EltwiseAlg::Clip;
    p.alpha = lo;
    p.beta = hi;
  }
  return p;
}

}  // namespace

std::vector<cpu::PostOp> Translator::clamp_post_ops(const Node& n) const {
  if (!n.has_output_min_max) return {};
  const float lo = n.output_min, hi = n.output_max;
  if (lo == -kInf && hi == kInf) return {};
  return {clamp_post_op(lo, hi)};
}

bool Translator::fold_clamp(const Node& n, float lo, float hi) {
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  if (!same_grid(x, y) || x.dims != y.dims) return false;
  OpDesc* conv = requantizing_conv_of(x.id);
  if (conv == nullptr || !read_once_by(x.id, n)) return false;
  std::vector<cpu::PostOp>& post = conv->post_ops;
  post.insert(post.end() - 2, clamp_post_op(lo, hi));
  define(y.id, mapped_[x.id].tensor, mapped_[x.id].perm, /*on_grid=*/true);
  return true;
}

bool Translator::read_once_by(uint32_t id, const Node& n) const {
  int reads = 0;
  for (const Node& r : p_.nodes) {
    for (const uint32_t in : r.inputs) {
      if (in != id) continue;
      if (&r != &n) return false;
      ++reads;
    }
  }
  for (const uint32_t o : p_.outputs) {
    if (o == id) return false;
  }
  return reads == 1;
}

OpDesc* Translator::requantizing_conv_of(uint32_t id) {
  std::vector<OpDesc>& ops = out_.graph.ops;
  if (mapped_[id].perm.empty() || ops.empty() || ops.back().kind != OpKind::QuantConv ||
      ops.back().output != mapped_[id].tensor) {
    return nullptr;
  }
  const std::vector<cpu::PostOp>& post = ops.back().post_ops;
  if (post.size() < 2 || post[post.size() - 2].alg != EltwiseAlg::Quantize ||
      post[post.size() - 2].is_sum || post.back().alg != EltwiseAlg::Dequantize ||
      post.back().is_sum) {
    return nullptr;
  }
  return &ops.back();
}

bool Translator::fold_add(const Node& n) {
  const Value& y = value(n.outputs[0]);
  for (const int first : {0, 1}) {
    const Value& x = value(n.inputs[first]);
    const Value& other = value(n.inputs[1 - first]);
    if (!is_q8(x) || !is_q8(other) || !is_q8(y) || x.dims != y.dims || other.dims != y.dims ||
        x.id == other.id || mapped_[other.id].perm != mapped_[x.id].perm) {
      continue;
    }
    OpDesc* conv = requantizing_conv_of(x.id);
    if (conv == nullptr || !read_once_by(x.id, n)) continue;
    cpu::PostOp sum;
    sum.is_sum = true;
    sum.tensor = mapped_[other.id].tensor;
    conv->post_ops.push_back(sum);
    for (const cpu::PostOp& c : clamp_post_ops(n)) conv->post_ops.push_back(c);
    conv->post_ops.push_back(cpu::PostOp{false, -1, EltwiseAlg::Quantize, 1.0f / y.quant.scale,
                                         static_cast<float>(y.quant.zero_point)});
    conv->post_ops.push_back(cpu::PostOp{false, -1, EltwiseAlg::Dequantize, y.quant.scale,
                                         static_cast<float>(y.quant.zero_point)});
    define(y.id, conv->output, mapped_[x.id].perm, /*on_grid=*/true);
    return true;
  }
  return false;
}

}  // namespace ember::xnn::detail
