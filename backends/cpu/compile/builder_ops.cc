// The cpu backend's preprocess, continued (compile/builder.h): quantize and dequantize, pooling,
// element-wise ops, softmax, layer norm, concat and views.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/compile/builder.h"

namespace ember::cpu::internal {

using ir::Arg;
using ir::ArgKind;

ir::Status Builder::dequantize(const Node& n) {
  Value* in = value_arg(n, "input");
  if (auto w = weight_of_.find(in); w != weight_of_.end()) {
    auto weight = [&](const char* name) -> const ir::Weight* {
      auto it = weight_of_.find(value_arg(n, name));
      return it == weight_of_.end() ? nullptr : it->second;
    };
    auto qw = quantized_weight(n, *w->second, weight("scales"), weight("zero_points"));
    if (!qw.ok()) return qw.status();
    quant_weights_[n.output()] = {w->second->name, std::move(*qw)};
    return {};
  }
  const std::optional<TensorQuant> params = int8_tensor_quant(n);
  if (in->producer() == nullptr || !params) {
    return ir::Status::error("dequantizes %" + in->name() + ", not a quantize in the partition");
  }
  fake_quant_of_[n.output()] = *params;
  if (auto done = fake_quant_tensor_.find(in); done != fake_quant_tensor_.end()) {
    tensor_of_[n.output()] = done->second;
    return {};
  }
  Value* x = value_arg(*in->producer(), "input");
  // Values already on this grid (a view of a dequantized tensor, requantized alike: PT2E's
  // shared parameters) quantize back to their own integers: the pair is the identity.
  if (auto fq = fake_quant_of_.find(x); fq != fake_quant_of_.end() &&
                                        fq->second.scale == params->scale &&
                                        fq->second.zero_point == params->zero_point) {
    auto t = tensor(x);
    if (!t.ok()) return t.status();
    tensor_of_[n.output()] = *t;
    fake_quant_tensor_[in] = *t;
    return {};
  }
  const float scale = static_cast<float>(params->scale);
  const auto zero_point = static_cast<float>(params->zero_point);
  const PostOp quantize{false, -1, EltwiseAlg::Quantize, static_cast<float>(1.0 / params->scale),
                        zero_point};
  const PostOp dequantize{false, -1, EltwiseAlg::Dequantize, scale, zero_point};
  auto fuse_into = [&](Value* v, size_t* op_index) {
    return fusable(
        v, {OpKind::Conv, OpKind::QuantConv, OpKind::MatMul, OpKind::QuantMatMul, OpKind::Binary},
        op_index);
  };
  size_t op_index = 0;
  bool fused = fuse_into(x, &op_index);
  // Or through a reshape read only here (the linear of a 3-D input: view, addmm, view): the
  // element-wise pair commutes with it.
  const bool through_reshape = !fused && producer_op_.count(x) != 0 &&
                               graph_.ops[producer_op_[x]].kind == OpKind::Reshape &&
                               x->users().size() == 1 && !x->is_graph_output() &&
                               fuse_into(value_arg(*x->producer(), "self"), &op_index);
  if (fused || through_reshape) {
    graph_.ops[op_index].post_ops.push_back(quantize);
    graph_.ops[op_index].post_ops.push_back(dequantize);
    if (through_reshape) {
      tensor_of_[n.output()] = tensor_of_[x];
    } else if (in->users().size() == 1) {
      alias(n.output(), op_index);
    } else {
      tensor_of_[n.output()] = graph_.ops[op_index].output;  // shared: fuses nothing more
    }
  } else {
    auto src = tensor(x);
    if (!src.ok()) return src.status();
    int32_t at = *src;
    for (const PostOp& p : {quantize, dequantize}) {
      OpDesc d;
      d.kind = OpKind::Eltwise;
      d.inputs = {at};
      d.params = EltwiseParams{p.alg, p.alpha, p.beta};
      d.output = new_intermediate(*n.output());
      at = d.output;
      graph_.ops.push_back(std::move(d));
    }
    tensor_of_[n.output()] = at;
  }
  fake_quant_tensor_[in] = tensor_of_[n.output()];
  return {};
}

ir::Status Builder::pool(const Node& n) {
  const bool max = n.op() == "aten::max_pool2d_with_indices";
  auto kernel = *int_list(n, "kernel_size", 2, {1, 1});
  auto stride = *int_list(n, "stride", 2, kernel);
  auto padding = *int_list(n, "padding", 2, {0, 0});
  auto dilation = *int_list(n, "dilation", 2, {1, 1});
  PoolAlg alg = PoolAlg::Max;
  if (!max) {
    alg = *number(n, "count_include_pad", 1) != 0 ? PoolAlg::AvgIncludePad : PoolAlg::AvgExcludePad;
  }
  const auto in_dims = static_dims(*value_arg(n, "self"));
  const auto out_dims = static_dims(*n.output(0));
  std::vector<int64_t> pad_r(2);
  for (int i = 0; i < 2; ++i) {
    // ceil_mode (max pooling) is a larger right padding that padded windows ignore.
    pad_r[i] = right_padding(in_dims[2 + i], out_dims[2 + i], (kernel[i] - 1) * dilation[i] + 1,
                             stride[i], padding[i]);
  }
  return emit_pool(n, value_arg(n, "self"), n.output(0), alg, kernel, stride, padding, pad_r,
                   dilation);
}

ir::Status Builder::emit_pool(const Node&, Value* in, Value* out, PoolAlg alg,
                              const std::vector<int64_t>& kernel,
                              const std::vector<int64_t>& stride, const std::vector<int64_t>& pad_l,
                              const std::vector<int64_t>& pad_r,
                              const std::vector<int64_t>& dilation) {
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  OpDesc d;
  d.kind = OpKind::Pool;
  d.inputs = {*src};
  d.params = PoolParams{alg, kernel, stride, pad_l, pad_r, dilation};
  d.output = new_intermediate(*out);
  emit(std::move(d), out);
  return {};
}

ir::Status Builder::global_pool(const Node& n) {
  Value* in = value_arg(n, "self");
  const auto in_dims = static_dims(*in);
  std::vector<int64_t> out_hw = {1, 1};
  if (n.op() != "aten::mean") out_hw = *int_list(n, "output_size", 2, {1, 1});
  std::vector<int64_t> kernel = {in_dims[2] / out_hw[0], in_dims[3] / out_hw[1]};
  const bool keepdim = n.op() != "aten::mean" || *number(n, "keepdim", 0) != 0;
  if (keepdim) {
    return emit_pool(n, in, n.output(), PoolAlg::AvgExcludePad, kernel, kernel, {0, 0}, {0, 0},
                     {1, 1});
  }
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  OpDesc d;
  d.kind = OpKind::Pool;
  d.inputs = {*src};
  d.params = PoolParams{PoolAlg::AvgExcludePad, kernel, kernel, {0, 0}, {0, 0}, {1, 1}};
  TensorDesc pooled{TensorKind::Intermediate, 0, {in_dims[0], in_dims[1], 1, 1}, {}};
  pooled.batch_symbol = batch_symbol(*in);
  return emit_reshaped(std::move(d), std::move(pooled), n);
}

ir::Status Builder::emit_reshaped(OpDesc d, TensorDesc result, const Node& n) {
  d.output = add_tensor(std::move(result));
  graph_.ops.push_back(std::move(d));
  OpDesc r;
  r.kind = OpKind::Reshape;
  r.inputs = {graph_.ops.back().output};
  r.output = new_intermediate(*n.output());
  emit(std::move(r), n.output());
  return {};
}

namespace {

// The element-wise ops of one tensor and no parameter.
struct UnaryAlg {
  const char* op;
  EltwiseAlg alg;
};
constexpr UnaryAlg kUnaryAlgs[] = {
    {"aten::abs", EltwiseAlg::Abs},     {"aten::exp", EltwiseAlg::Exp},
    {"aten::log", EltwiseAlg::Log},     {"aten::floor", EltwiseAlg::Floor},
    {"aten::ceil", EltwiseAlg::Ceil},   {"aten::sin", EltwiseAlg::Sin},
    {"aten::cos", EltwiseAlg::Cos},     {"aten::reciprocal", EltwiseAlg::Reciprocal},
    {"aten::round", EltwiseAlg::Round},
};

std::optional<EltwiseAlg> unary_alg(const std::string& op) {
  for (const UnaryAlg& u : kUnaryAlgs) {
    if (op == u.op) return u.alg;
  }
  return std::nullopt;
}

}  // namespace

ir::Status Builder::eltwise(const Node& n) {
  PostOp p;
  const std::string& op = n.op();
  if (op == "aten::relu") {
    p.alg = EltwiseAlg::Relu;
  } else if (op == "aten::hardtanh") {
    p.alg = EltwiseAlg::Clip;
    p.alpha = static_cast<float>(*number(n, "min_val", -1));
    p.beta = static_cast<float>(*number(n, "max_val", 1));
  } else if (op == "aten::gelu") {
    const Arg* a = n.arg("approximate");
    p.alg = a != nullptr && a->kind() == ArgKind::String && a->as_text() == "tanh"
                ? EltwiseAlg::GeluTanh
                : EltwiseAlg::GeluErf;
  } else if (op == "aten::silu") {
    p.alg = EltwiseAlg::Swish;
    p.alpha = 1;
  } else if (op == "aten::sigmoid") {
    if (is_silu_sigmoid(n)) {  // its mul computes x * sigmoid(x) as one silu
      silu_sigmoids_.insert(n.output());
      return {};
    }
    p.alg = EltwiseAlg::Logistic;
  } else if (op == "aten::hardswish") {
    p.alg = EltwiseAlg::Hardswish;
  } else if (op == "aten::tanh") {
    p.alg = EltwiseAlg::Tanh;
  } else if (op == "aten::elu") {
    p.alg = EltwiseAlg::Elu;
    p.alpha = static_cast<float>(*number(n, "alpha", 1));
  } else if (op == "aten::pow") {  // exponent 2, 0.5 or -0.5 (check_pow)
    const double e = *number(n, "exponent", 1);
    p.alg = e == 2 ? EltwiseAlg::Square : (e == 0.5 ? EltwiseAlg::Sqrt : EltwiseAlg::Rsqrt);
  } else if (op == "aten::sqrt") {
    p.alg = EltwiseAlg::Sqrt;
  } else if (op == "aten::rsqrt") {
    p.alg = EltwiseAlg::Rsqrt;
  } else if (op == "aten::neg") {
    p.alg = EltwiseAlg::Neg;
  } else if (op == "aten::leaky_relu") {
    p.alg = EltwiseAlg::LeakyRelu;
    p.alpha = static_cast<float>(*number(n, "negative_slope", 0.01));
  } else if (const std::optional<EltwiseAlg> u = unary_alg(op)) {
    p.alg = *u;
  } else {
    return ir::Status::error("op not supported by the cpu backend");
  }
  return emit_eltwise(value_arg(n, "self"), p, n.output());
}

bool Builder::is_silu_sigmoid(const Node& sigmoid) {
  Value* x = value_arg(sigmoid, "self");
  Value* s = sigmoid.output();
  if (x == nullptr || s->is_graph_output() || s->users().size() != 1) return false;
  const Node* mul = s->users()[0];
  if (mul->op() != "aten::mul" || mul->overload() != "Tensor") return false;
  Value* a = value_arg(*mul, "self");
  Value* b = value_arg(*mul, "other");
  return (a == x && b == s) || (a == s && b == x);
}

ir::Status Builder::emit_eltwise(Value* in, const PostOp& p, Value* out) {
  size_t op_index = 0;
  if (fusable(
          in,
          {OpKind::Conv, OpKind::QuantConv, OpKind::MatMul, OpKind::QuantMatMul, OpKind::Binary},
          &op_index)) {
    graph_.ops[op_index].post_ops.push_back(p);
    alias(out, op_index);
    return {};
  }
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  OpDesc d;
  d.kind = OpKind::Eltwise;
  d.inputs = {*src};
  d.params = EltwiseParams{p.alg, p.alpha, p.beta};
  d.output = new_intermediate(*out);
  emit(std::move(d), out);
  return {};
}

ir::Status Builder::reduce(const Node& n) {
  Value* in = value_arg(n, "self");
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  const auto rank = static_cast<int64_t>(in->tensor_type().rank());
  OpDesc d;
  d.kind = OpKind::Reduce;
  d.inputs = {*src};
  d.params = ReduceParams{n.op() == "aten::mean" ? ReduceAlg::Mean : ReduceAlg::Sum,
                          *reduced_dims(n, rank)};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::slice(const Node& n) {
  Value* in = value_arg(n, "self");
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  const SliceRange p = *slice_range(n);
  OpDesc d;
  d.kind = OpKind::Slice;
  d.inputs = {*src};
  d.params = SliceParams{p.dim, p.start};
  if (n.op() == "aten::slice" || n.op() == "aten::slice_copy") {
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }
  // select: the slice of length 1, then the dim dropped.
  TensorDesc part{TensorKind::Intermediate, 0, static_dims(*in), {}};
  part.dims[p.dim] = 1;
  part.batch_symbol = p.dim == 0 ? -1 : batch_symbol(*in);
  return emit_reshaped(std::move(d), std::move(part), n);
}

ir::Status Builder::pad(const Node& n) {
  Value* in = value_arg(n, "self");
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  const PadPairs p = *pad_pairs(n, in->tensor_type().rank());
  OpDesc d;
  d.kind = OpKind::Pad;
  d.inputs = {*src};
  d.params = PadParams{p.before, p.after, static_cast<float>(*number(n, "value", 0))};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::resize(const Node& n) {
  Value* in = value_arg(n, "self") != nullptr ? value_arg(n, "self") : value_arg(n, "input");
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  const std::vector<int64_t> od = static_dims(*n.output());
  ResizeParams p;
  p.alg = n.op() == "aten::upsample_bilinear2d" ? ResizeAlg::Bilinear : ResizeAlg::Nearest;
  p.align_corners = p.alg == ResizeAlg::Bilinear && *number(n, "align_corners", 0) != 0;
  p.height = od[2];
  p.width = od[3];
  OpDesc d;
  d.kind = OpKind::Resize;
  d.inputs = {*src};
  d.params = p;
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::where(const Node& n) {
  OpDesc d;
  d.kind = OpKind::Where;
  for (const char* name : {"condition", "self", "other"}) {
    auto t = tensor(value_arg(n, name));
    if (!t.ok()) return t.status();
    d.inputs.push_back(*t);
  }
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::softmax(const Node& n) {
  Value* in = value_arg(n, "self");
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  const auto rank = static_cast<int64_t>(in->tensor_type().rank());
  OpDesc d;
  d.kind = OpKind::Softmax;
  d.inputs = {*src};
  d.params = SoftmaxParams{normalize_dim(static_cast<int64_t>(*number(n, "dim", -1)), rank)};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::layer_norm(const Node& n) {
  OpDesc d;
  d.kind = OpKind::LayerNorm;
  auto src = tensor(value_arg(n, "input"));
  auto g = optional_tensor(n, "weight");
  auto b = optional_tensor(n, "bias");
  if (!src.ok()) return src.status();
  if (!g.ok()) return g.status();
  if (!b.ok()) return b.status();
  d.inputs = {*src, *g, *b};
  d.params = NormParams{static_cast<float>(*number(n, "eps", 1e-5))};
  d.output = new_intermediate(*n.output(0));
  emit(std::move(d), n.output(0));
  return {};
}

ir::Status Builder::concat(const Node& n) {
  const Arg* list = n.arg("tensors");
  if (list == nullptr || list->kind() != ArgKind::List) return ir::Status::error("no tensors");
  OpDesc d;
  d.kind = OpKind::Concat;
  for (const Arg& item : list->as_list()) {
    if (item.kind() != ArgKind::Value) return ir::Status::error("cat of a non-tensor");
    auto t = tensor(item.as_value());
    if (!t.ok()) return t.status();
    d.inputs.push_back(*t);
  }
  const auto rank = static_cast<int64_t>(n.output()->tensor_type().rank());
  d.params = ConcatParams{normalize_dim(static_cast<int64_t>(*number(n, "dim", 0)), rank)};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::Status Builder::permute(const Node& n) {
  Value* in = value_arg(n, "self");
  const auto rank = static_cast<int64_t>(in->tensor_type().rank());
  // A linear layer's transposed int8 weight: kept int8 for a QuantMatMul (matmul()), its floats
  // made only when an op reads it as floats (tensor()).
  if (auto q = quant_weights_.find(in);
      q != quant_weights_.end() && rank == 2 && q->second.weight.dims.size() == 2) {
    const bool swap =
        n.op() == "aten::t" || n.op() == "aten::t_copy" ||
        (n.op() == "aten::transpose" && *number(n, "dim0", 0) != *number(n, "dim1", 0)) ||
        (int_list(n, "dims", 0, {}).value_or(std::vector<int64_t>{}) == std::vector<int64_t>{1, 0});
    if (swap) {
      quant_weights_t_[n.output()] = &q->second;
      return {};
    }
  }
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  if (n.op() == "aten::t" || n.op() == "aten::t_copy") {
    if (rank == 2) std::swap(perm[0], perm[1]);
  } else if (n.op() == "aten::transpose") {
    const int64_t a = normalize_dim(static_cast<int64_t>(*number(n, "dim0", 0)), rank);
    const int64_t b = normalize_dim(static_cast<int64_t>(*number(n, "dim1", 0)), rank);
    if (a < 0 || a >= rank || b < 0 || b >= rank) return ir::Status::error("bad dims");
    std::swap(perm[a], perm[b]);
  } else {
    auto dims = int_list(n, "dims", 0, {});
    if (!dims || static_cast<int64_t>(dims->size()) != rank) {
      return ir::Status::error("bad permutation");
    }
    for (int64_t i = 0; i < rank; ++i) perm[i] = normalize_dim((*dims)[i], rank);
  }
  auto src = tensor(in);
  if (!src.ok()) return src.status();
  const TensorDesc s = graph_.tensors[*src];
  if (s.kind == TensorKind::Weight) {
    // A permuted view of a weight: same bytes, new dims and dim order (folded, no op).
    std::vector<int64_t> inv(rank);
    for (int64_t i = 0; i < rank; ++i) inv[perm[i]] = i;
    TensorDesc t{TensorKind::Weight, s.index, {}, {}};
    for (int64_t i = 0; i < rank; ++i) t.dims.push_back(s.dims[perm[i]]);
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t old = s.dim_order.empty() ? i : s.dim_order[i];
      t.dim_order.push_back(static_cast<uint8_t>(inv[old]));
    }
    tensor_of_[n.output()] = add_tensor(std::move(t));
    return {};
  }
  OpDesc d;
  d.kind = OpKind::Permute;
  d.inputs = {*src};
  d.params = PermuteParams{perm};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  keep_fake_quant(in, n.output());
  return {};
}

ir::Status Builder::reshape(const Node& n) {
  // An activation's dequantize, rows kept (activation_dequantize_linear): the linear reads it.
  if (auto q = activation_quant_.find(value_arg(n, "self")); q != activation_quant_.end()) {
    activation_quant_[n.output()] = q->second;
    return {};
  }
  if (auto q = activation_input_.find(value_arg(n, "self")); q != activation_input_.end()) {
    activation_input_[n.output()] = q->second;
    return {};
  }
  auto src = tensor(value_arg(n, "self"));
  if (!src.ok()) return src.status();
  const TensorDesc s = graph_.tensors[*src];
  if (s.kind == TensorKind::Weight && s.dim_order.empty()) {
    tensor_of_[n.output()] =
        add_tensor({TensorKind::Weight, s.index, static_dims(*n.output()), {}});
    return {};
  }
  OpDesc d;
  d.kind = OpKind::Reshape;
  d.inputs = {*src};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  keep_fake_quant(value_arg(n, "self"), n.output());
  return {};
}

}  // namespace ember::cpu::internal
