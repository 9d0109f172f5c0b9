// The cpu backend's preprocess, continued (compile/builder.h): the ops that compute, where
// element-wise ops and residual adds fuse: convolutions (integer ones where their input is on an
// int8 grid), batch norms folded into them, matmuls (integer and grouped-integer linears), and
// add and mul (a residual add a sum post-op of the convolution or matmul before it).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/compile/builder.h"

namespace ember::cpu::internal {

ir::Status Builder::conv(const Node& n) {
  Value* in = value_arg(n, "input");
  const int64_t r = static_cast<int64_t>(in->tensor_type().rank()) - 2;
  const std::vector<int64_t> zeros(r, 0), ones(r, 1);
  auto stride = *int_list(n, "stride", r, ones);
  auto padding = *int_list(n, "padding", r, zeros);
  auto dilation = *int_list(n, "dilation", r, ones);
  auto out_pad = *int_list(n, "output_padding", r, zeros);
  const bool transposed = *number(n, "transposed", 0) != 0;
  OpDesc d;
  d.kind = OpKind::Conv;
  QuantParams src_quant;
  // Quantized values by a symmetric int8 weight: the integer convolution (QuantConv).
  auto fq = fake_quant_of_.find(in);
  auto qw = quant_weights_.find(value_arg(n, "weight"));
  if (fq != fake_quant_of_.end() && qw != quant_weights_.end() && r == 2 && !transposed) {
    const QuantizedWeight& w = qw->second.weight;
    bool symmetric = true;
    for (int64_t z : w.zero_points) symmetric = symmetric && z == 0;
    if (symmetric) {
      d.kind = OpKind::QuantConv;
      src_quant = {static_cast<float>(fq->second.scale), static_cast<float>(fq->second.zero_point)};
    }
  }
  auto src = tensor(in);
  auto b = optional_tensor(n, "bias");
  if (!src.ok()) return src.status();
  if (!b.ok()) return b.status();
  if (d.kind == OpKind::QuantConv) {
    const auto [wq, scales] = add_int8_weight(qw->second);
    d.inputs = {*src, wq, *b, scales};
  } else {
    auto w = tensor(value_arg(n, "weight"));
    if (!w.ok()) return w.status();
    d.inputs = {*src, *w, *b};
  }
  ConvParams c;
  c.groups = static_cast<int64_t>(*number(n, "groups", 1));
  c.transposed = transposed;
  c.stride = stride;
  c.pad_l = padding;
  // Right padding: whatever makes oneDNN's output size the one the IR records (equal to the
  // left padding for every regular convolution; output_padding for transposed ones).
  const auto in_dims = static_dims(*in);
  const auto w_dims = static_dims(*value_arg(n, "weight"));
  const auto out_dims = static_dims(*n.output());
  for (int64_t i = 0; i < r; ++i) {
    const int64_t k = (w_dims[2 + i] - 1) * dilation[i] + 1;
    int64_t pr;
    if (!transposed) {
      pr = right_padding(in_dims[2 + i], out_dims[2 + i], k, stride[i], padding[i]);
    } else {
      // oneDNN's deconvolution: O = (I - 1) * s - pl - pr + k, so output_padding is a
      // smaller (possibly negative) right padding.
      pr = (in_dims[2 + i] - 1) * stride[i] + k - out_dims[2 + i] - padding[i];
    }
    if (pr < -4096) return ir::Status::error("output size not reachable by padding");
    c.pad_r.push_back(pr);
  }
  c.dilation = dilation;
  c.output_padding = out_pad;
  if (d.kind == OpKind::QuantConv) {
    d.params = QuantConvParams{std::move(c), src_quant};
  } else {
    d.params = std::move(c);
  }
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::batch_norm(const Node& n) {
  Value* in = value_arg(n, "input");
  Value* gamma = value_arg(n, "weight");
  Value* beta = value_arg(n, "bias");
  Value* mean = value_arg(n, "running_mean");
  Value* var = value_arg(n, "running_var");
  const double eps = *number(n, "eps", 1e-5);
  size_t conv_index = 0;
  auto is_const = [&](Value* v) { return v == nullptr || weight_of_.count(v) != 0; };
  if (fusable(in, {OpKind::Conv}, &conv_index) && graph_.ops[conv_index].post_ops.empty() &&
      !graph_.ops[conv_index].conv().transposed && is_const(gamma) && is_const(beta) &&
      is_const(mean) && is_const(var)) {
    OpDesc& c = graph_.ops[conv_index];
    const TensorDesc& wt = graph_.tensors[c.inputs[1]];
    const bool bias_const =
        c.inputs[2] < 0 || graph_.tensors[c.inputs[2]].kind == TensorKind::Weight;
    if (wt.kind == TensorKind::Weight && wt.dim_order.empty() && bias_const) {
      return fold_batch_norm(n, conv_index, gamma, beta, mean, var, eps);
    }
  }
  OpDesc d;
  d.kind = OpKind::BatchNorm;
  for (Value* v : {in, gamma, beta, mean, var}) {
    if (v == nullptr) {
      d.inputs.push_back(-1);
      continue;
    }
    auto t = tensor(v);
    if (!t.ok()) return t.status();
    d.inputs.push_back(*t);
  }
  d.params = NormParams{static_cast<float>(eps)};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output(0));
  return {};
}

ir::Status Builder::fold_batch_norm(const Node& n, size_t conv_index, Value* gamma, Value* beta,
                                    Value* mean, Value* var, double eps) {
  OpDesc& c = graph_.ops[conv_index];
  const TensorDesc wt = graph_.tensors[c.inputs[1]];
  const int64_t channels = wt.dims[0];
  const int64_t per_channel = checked_numel(wt.dims) / std::max<int64_t>(channels, 1);
  auto get = [&](Value* v, double fallback) -> std::vector<double> {
    if (v == nullptr) return std::vector<double>(channels, fallback);
    return floats_of(weight_of_.at(v), channels);
  };
  const std::vector<double> g = get(gamma, 1), b = get(beta, 0), m = get(mean, 0), s = get(var, 1);
  if (g.empty() || b.empty() || m.empty() || s.empty()) {
    return ir::Status::error("batch norm parameters do not match the convolution's channels");
  }
  const std::vector<uint8_t>& wsrc = weight_bytes(wt.index);
  std::vector<double> bias(channels, 0);
  if (c.inputs[2] >= 0) {
    const std::vector<uint8_t>& bsrc = weight_bytes(graph_.tensors[c.inputs[2]].index);
    for (int64_t o = 0; o < channels; ++o) {
      float f;
      std::memcpy(&f, bsrc.data() + 4 * o, 4);
      bias[o] = f;
    }
  }
  // In double: w' = w * g / sqrt(v + eps), b' = (b - m) * g / sqrt(v + eps) + beta.
  std::vector<uint8_t> new_w(wsrc.size()), new_b(channels * 4);
  for (int64_t o = 0; o < channels; ++o) {
    const double scale = g[o] / std::sqrt(s[o] + eps);
    for (int64_t k = 0; k < per_channel; ++k) {
      float f;
      std::memcpy(&f, wsrc.data() + 4 * (o * per_channel + k), 4);
      const auto r = static_cast<float>(static_cast<double>(f) * scale);
      std::memcpy(new_w.data() + 4 * (o * per_channel + k), &r, 4);
    }
    const auto rb = static_cast<float>((bias[o] - m[o]) * scale + b[o]);
    std::memcpy(new_b.data() + 4 * o, &rb, 4);
  }
  const std::string fqn = n.name() + ".folded";
  const uint32_t wi = add_weight_bytes(fqn + "_weight", std::move(new_w));
  const uint32_t bi = add_weight_bytes(fqn + "_bias", std::move(new_b));
  c.inputs[1] = add_tensor({TensorKind::Weight, wi, wt.dims, {}});
  c.inputs[2] = add_tensor({TensorKind::Weight, bi, {channels}, {}});
  alias(n.output(0), conv_index);
  return {};
}

ir::Status Builder::group_quant_matmul(const Node& n, const NamedQuantizedWeight& qw) {
  const QuantizedWeight& w = qw.weight;
  // A weight quantized per output channel is one group a row.
  const int64_t group = w.group > 0 ? w.group : w.dims[1];
  const bool addmm = n.op() == "aten::addmm";
  Value* x = value_arg(n, addmm ? "mat1" : "self");
  // A dequantized activation: its integers, zero points and scales, for the kernel to compute;
  // or its whole per-token quantization: the float input, quantized by the kernel.
  const auto act = activation_quant_.find(x);
  const bool dynamic = act != activation_quant_.end() && act->second.scale != nullptr;
  const auto whole = activation_input_.find(x);
  const bool quantize = whole != activation_input_.end();
  auto a = tensor(quantize ? whole->second.x : dynamic ? act->second.q : x);
  auto bias = addmm ? tensor(value_arg(n, "self")) : ir::StatusOr<int32_t>(-1);
  if (!a.ok()) return a.status();
  if (!bias.ok()) return bias.status();
  // Two integers a byte where they all fit 4 bits (torchao's int4 weights), else one.
  bool int4 = w.dims[1] % 2 == 0 && group % 2 == 0;
  for (float q : w.q) int4 = int4 && q >= -8.f && q <= 7.f;
  std::vector<uint8_t> bytes(int4 ? w.q.size() / 2 : w.q.size(), 0);
  for (size_t i = 0; i < w.q.size(); ++i) {
    const auto v = static_cast<uint8_t>(static_cast<int8_t>(w.q[i]));
    if (int4) {
      bytes[i / 2] = static_cast<uint8_t>(bytes[i / 2] | ((v & 0xF) << (i % 2 ? 4 : 0)));
    } else {
      bytes[i] = v;
    }
  }
  TensorDesc wt{TensorKind::Weight,
                add_weight_bytes(qw.name + (int4 ? "@int4" : "@int8_groups"), std::move(bytes)),
                w.dims,
                {}};
  wt.storage = int4 ? WeightStorage::Int4 : WeightStorage::Int8;
  const std::vector<int64_t> param_dims = {w.dims[0], w.dims[1] / group};
  OpDesc d;
  d.kind = OpKind::GroupQuantMatMul;
  d.inputs = {*a, add_tensor(std::move(wt)), *bias,
              add_tensor({TensorKind::Weight,
                          add_float_weight(qw.name + "@group_scales", w.scales),
                          param_dims,
                          {}}),
              -1};
  bool zeros = false;
  for (int64_t z : w.zero_points) zeros = zeros || z != 0;
  if (zeros) {
    const std::vector<float> z(w.zero_points.begin(), w.zero_points.end());
    d.inputs[4] = add_tensor(
        {TensorKind::Weight, add_float_weight(qw.name + "@group_zeros", z), param_dims, {}});
  }
  if (dynamic) {
    auto zero_point = tensor(act->second.zero_point);
    auto scale = tensor(act->second.scale);
    if (!zero_point.ok()) return zero_point.status();
    if (!scale.ok()) return scale.status();
    d.inputs.push_back(*zero_point);
    d.inputs.push_back(*scale);
  }
  GroupQuantMatMulParams p;
  p.group = group;
  if (quantize) {
    p.input_quant = whole->second.per_tensor ? InputQuant::PerTensor : InputQuant::PerToken;
    p.eps = static_cast<float>(whole->second.eps);
  }
  d.params = p;
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::matmul(const Node& n) {
  OpDesc d;
  d.kind = OpKind::MatMul;
  const bool addmm = n.op() == "aten::addmm";
  // Quantized values by the transpose of a symmetric int8 weight: a linear layer in integers.
  Value* mat1 = value_arg(n, addmm ? "mat1" : "self");
  auto fq = fake_quant_of_.find(mat1);
  auto qwt = quant_weights_t_.find(value_arg(n, "mat2"));
  // By a grouped weight, or of an input the linear quantizes (PT2E's dynamic quantization).
  if (n.op() != "aten::bmm" && qwt != quant_weights_t_.end() &&
      (qwt->second->weight.group > 0 || activation_input_.count(mat1) != 0) &&
      mat1->tensor_type().rank() == 2) {
    return group_quant_matmul(n, *qwt->second);
  }
  if (n.op() != "aten::bmm" && fq != fake_quant_of_.end() && qwt != quant_weights_t_.end() &&
      mat1->tensor_type().rank() == 2) {
    bool symmetric = true;
    for (int64_t z : qwt->second->weight.zero_points) symmetric = symmetric && z == 0;
    if (symmetric) {
      auto a = tensor(mat1);
      auto bias = addmm ? tensor(value_arg(n, "self")) : ir::StatusOr<int32_t>(-1);
      if (!a.ok()) return a.status();
      if (!bias.ok()) return bias.status();
      const auto [wq, scales] = add_int8_weight(*qwt->second);
      d.kind = OpKind::QuantMatMul;
      d.inputs = {*a, wq, *bias, scales};
      d.params = QuantMatMulParams{
          {static_cast<float>(fq->second.scale), static_cast<float>(fq->second.zero_point)}};
      d.output = new_intermediate(*n.output());
      emit(std::move(d), n.output());
      return {};
    }
  }
  Value* mat2 = value_arg(n, "mat2");
  auto a = tensor(mat1);
  auto b = tensor(mat2);
  auto bias = addmm ? tensor(value_arg(n, "self")) : ir::StatusOr<int32_t>(-1);
  if (!a.ok()) return a.status();
  if (!b.ok()) return b.status();
  if (!bias.ok()) return bias.status();
  d.inputs = {*a, *b, *bias};
  MatMulParams p;
  // Two operands on int8 grids (attention's, as PT2E quantizes a matmul): their parameters, for
  // the integer matmul.
  if (auto fb = fake_quant_of_.find(mat2);
      fq != fake_quant_of_.end() && fb != fake_quant_of_.end()) {
    p.quantized = true;
    p.a = {static_cast<float>(fq->second.scale), static_cast<float>(fq->second.zero_point)};
    p.b = {static_cast<float>(fb->second.scale), static_cast<float>(fb->second.zero_point)};
  }
  d.params = p;
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::binary(const Node& n) {
  Value* a = value_arg(n, "self");
  Value* b = value_arg(n, "other");
  // x * sigmoid(x), as export writes silu: one swish (eltwise()).
  for (auto [x, s] : {std::pair{a, b}, std::pair{b, a}}) {
    if (silu_sigmoids_.count(s) != 0 && value_arg(*s->producer(), "self") == x) {
      PostOp swish;
      swish.alg = EltwiseAlg::Swish;
      swish.alpha = 1;
      return emit_eltwise(x, swish, n.output());
    }
  }
  if (n.op() == "aten::mul") {  // an activation's dequantize: x * scale
    for (auto [x, scale] : {std::pair{a, b}, std::pair{b, a}}) {
      auto q = activation_quant_.find(x);
      if (q != activation_quant_.end() && q->second.scale == nullptr) {
        activation_quant_[n.output()] = {q->second.q, q->second.zero_point, scale};
        return {};
      }
    }
  }
  const auto out_dims = static_dims(*n.output());
  const bool is_add = n.op() == "aten::add";
  if (is_add && static_dims(*a) == out_dims && static_dims(*b) == out_dims) {
    // Residual add: a sum post-op on the later of the two producers, whose summand (the other
    // operand) is ready before it runs.
    std::optional<size_t> best;
    Value* summand = nullptr;
    for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      size_t op_index = 0;
      if (x == y ||
          !fusable(x, {OpKind::Conv, OpKind::QuantConv, OpKind::MatMul, OpKind::QuantMatMul},
                   &op_index))
        continue;
      auto ready = producer_op_.find(y);
      const bool y_ready = ready == producer_op_.end() || ready->second < op_index;
      if (!y_ready || (best && *best > op_index)) continue;
      if (has_sum(graph_.ops[op_index])) continue;
      best = op_index;
      summand = y;
    }
    if (best) {
      auto t = tensor(summand);
      if (!t.ok()) return t.status();
      PostOp p;
      p.is_sum = true;
      p.tensor = *t;
      graph_.ops[*best].post_ops.push_back(p);
      alias(n.output(), *best);
      return {};
    }
  }
  // add and mul commute; sub, div, minimum and maximum come with a of the result's shape
  // (check_ordered_binary).
  if (static_dims(*a) != out_dims) std::swap(a, b);
  auto ta = tensor(a);
  auto tb = tensor(b);
  if (!ta.ok()) return ta.status();
  if (!tb.ok()) return tb.status();
  OpDesc d;
  d.kind = OpKind::Binary;
  d.inputs = {*ta, *tb};
  const std::string& op = n.op();
  d.params = BinaryParams{is_add                  ? BinaryAlg::Add
                          : op == "aten::mul"     ? BinaryAlg::Mul
                          : op == "aten::sub"     ? BinaryAlg::Sub
                          : op == "aten::div"     ? BinaryAlg::Div
                          : op == "aten::minimum" ? BinaryAlg::Minimum
                                                  : BinaryAlg::Maximum};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

}  // namespace ember::cpu::internal
