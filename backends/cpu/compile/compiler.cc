#include "backends/cpu/cpu_compiler.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/compile/builder.h"
#include "backends/cpu/compile/internal.h"
#include "backends/cpu/graph/graph_format.h"

namespace ember::cpu::internal {

using ir::Arg;
using ir::ArgKind;
using Why = std::optional<std::string>;

ir::Status Builder::run() {
  const ir::Graph& g = program_.graph();
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    Value* v = g.inputs()[i];
    const ir::InputSpec& spec = program_.input_spec(i);
    if (spec.kind == ir::InputKind::UserInput) {
      if (v->type().kind == ir::ValueKind::Int) {
        ++graph_.num_inputs;  // a symbolic size a view reads: the build knows it (all_static)
        continue;
      }
      if (v->users().empty() && !v->is_graph_output()) {
        // A partition holding the whole graph takes every graph input (C17), used or not; an
        // unused one (of any dtype) keeps its place in the argument list and nothing reads it.
        ++graph_.num_inputs;
        continue;
      }
      if (!v->is_tensor() ||
          (v->tensor_type().dtype != DType::Float32 && v->tensor_type().dtype != DType::Bool) ||
          (!v->tensor_type().is_static() && !is_dynamic_batch(v->tensor_type()))) {
        return ir::Status::error("cpu backend: input %" + v->name() +
                                 " is not a float32 or bool tensor, static but for its batch");
      }
      // Contiguous, whatever the value's dim order: the program holds every activation in
      // row-major order (a transpose is materialized by a copy), and so passes it here.
      TensorDesc t{TensorKind::Input, graph_.num_inputs++, static_dims(*v), {}};
      t.batch_symbol = batch_symbol(*v);
      // A bool input is read only as a Where's condition (the support table's only bool use).
      if (v->tensor_type().dtype == DType::Bool) t.storage = WeightStorage::Bool;
      tensor_of_[v] = add_tensor(std::move(t));
    } else {
      const ir::Weight* w = program_.find_weight(spec.target);
      // A weight naming the same tensor as another may carry its bytes only there.
      for (int hops = 0; w != nullptr && !w->has_data() && !w->alias_of.empty() && hops < 8;
           ++hops) {
        w = program_.find_weight(w->alias_of);
      }
      if (w == nullptr || !w->has_data()) {
        return ir::Status::error("cpu backend: weight " + spec.target + " has no data");
      }
      weight_of_[v] = w;
    }
  }
  EMBER_IR_RETURN_IF_ERROR(find_activation_chains());
  for (const Node* n : g.nodes()) {
    if (activation_chain_nodes_.count(n) != 0) continue;  // the grouped linear computes them
    ir::Status s = lower(*n);
    if (!s.ok()) return ir::Status::error(n->describe() + ": " + s.message());
  }
  for (Value* v : g.outputs()) {
    auto t = tensor(v);
    if (!t.ok()) return t.status();
    graph_.outputs.push_back(*t);
    graph_.output_dim_orders.push_back({});  // row-major, as the program holds it (above)
  }
  compact();
  graph_.num_symbols = static_cast<uint32_t>(symbols_.size());
  for (const auto& [name, id] : symbols_) {
    bool bound = false;
    for (const TensorDesc& t : graph_.tensors) {
      bound = bound || (t.kind == TensorKind::Input && t.batch_symbol == id);
    }
    if (!bound) {
      return ir::Status::error("cpu backend: the dynamic batch " + name +
                               " is the batch of no partition input");
    }
  }
  return {};
}

ir::Status Builder::find_activation_chains() {
  for (const Node* n : program_.graph().nodes()) {
    if (std::optional<DynamicChain> chain = dynamic_chain(*n)) {
      activation_chain_nodes_.insert(chain->nodes.begin(), chain->nodes.end());
      activation_input_[chain->result] = {chain->x, chain->eps, true};
      continue;
    }
    if (n->op() != "aten::sub") continue;
    std::optional<ActivationChain> chain = activation_chain(*n);
    if (!chain) continue;
    // The 0-d constants must hold torchao's numbers: else the program is not its quantization,
    // and claiming it would be wrong (C33), so the compile fails naming the node.
    for (const auto& [value, want] : chain->constants) {
      auto w = weight_of_.find(value);
      double got = want + 1;
      if (w != weight_of_.end() &&
          w->second->bytes().size() == ir::dtype_size(w->second->type.dtype)) {
        const auto b = w->second->bytes();
        if (w->second->type.dtype == DType::Float32) {
          float f;
          std::memcpy(&f, b.data(), sizeof f);
          got = f;
        } else if (w->second->type.dtype == DType::Int64) {
          int64_t i;
          std::memcpy(&i, b.data(), sizeof i);
          got = static_cast<double>(i);
        }
      }
      if (got != want) {
        return ir::Status::error(n->describe() + ": %" + value->name() +
                                 " is not the constant of torchao's per-token quantization (" +
                                 std::to_string(want) + ")");
      }
    }
    for (const Node* member : chain->nodes) {
      if (member != n && member != chain->result->producer())
        activation_chain_nodes_.insert(member);
    }
    activation_chain_nodes_.insert(n);
    activation_chain_nodes_.insert(chain->result->producer());
    activation_input_[chain->result] = {chain->x, chain->eps, false};
  }
  return {};
}

ir::StatusOr<int32_t> Builder::tensor(Value* v) {
  auto it = tensor_of_.find(v);
  if (it != tensor_of_.end()) return it->second;
  if (activation_quant_.count(v) != 0 || activation_input_.count(v) != 0) {
    return ir::Status::error("%" + v->name() +
                             " dequantizes an activation for a grouped linear, and something "
                             "else reads it");
  }
  if (auto t = quant_weights_t_.find(v); t != quant_weights_t_.end()) {
    // The transpose of a dequantized int8 weight, read as floats: a view of its floats.
    const QuantizedWeight& qw = t->second->weight;
    const int32_t id =
        add_tensor({TensorKind::Weight,
                    add_float_weight(t->second->name + "@dequantized", qw.dequantized),
                    {qw.dims[1], qw.dims[0]},
                    {1, 0}});
    tensor_of_[v] = id;
    return id;
  }
  if (auto q = quant_weights_.find(v); q != quant_weights_.end()) {
    // A dequantized int8 weight, read as floats: PyTorch's dequantized values.
    const QuantizedWeight& qw = q->second.weight;
    const int32_t id =
        add_tensor({TensorKind::Weight,
                    add_float_weight(q->second.name + "@dequantized", qw.dequantized),
                    qw.dims,
                    {}});
    tensor_of_[v] = id;
    return id;
  }
  auto w = weight_of_.find(v);
  if (w == weight_of_.end()) {
    return ir::Status::error("value %" + v->name() + " has no tensor in the cpu graph");
  }
  const ir::Weight& weight = *w->second;
  const bool is_bool = weight.type.dtype == DType::Bool;  // a Where's condition
  if ((weight.type.dtype != DType::Float32 && !is_bool) || !weight.type.is_static()) {
    return ir::Status::error("weight " + weight.name + " is not a static float32 tensor");
  }
  auto bytes = weight.bytes();
  const uint32_t index =
      add_weight_bytes(weight.name, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  TensorDesc t{TensorKind::Weight, index, static_dims(*v), dim_order(*v)};
  if (is_bool) t.storage = WeightStorage::Bool;
  const int32_t id = add_tensor(std::move(t));
  tensor_of_[v] = id;
  return id;
}

ir::Status Builder::lower(const Node& n) {
  const std::string& op = n.op();
  if (op == "aten::convolution") return conv(n);
  // A quantize is computed by the dequantizes that read it (check_quantize).
  if (op == "quantized_decomposed::quantize_per_tensor") return {};
  if (op == "quantized_decomposed::dequantize_per_tensor" ||
      op == "quantized_decomposed::dequantize_per_channel" ||
      op == "quantized_decomposed::dequantize_per_channel_group") {
    return dequantize(n);
  }
  if (op == "aten::native_batch_norm" || op == "aten::_native_batch_norm_legit_no_training") {
    return batch_norm(n);
  }
  if (op == "aten::addmm" || op == "aten::mm" || op == "aten::bmm") return matmul(n);
  if (op == "aten::sub") {  // only an activation's dequantize (check_activation_dequantize)
    activation_quant_[n.output()] = {value_arg(n, "self"), value_arg(n, "other")};
    return {};
  }
  if (op == "aten::max_pool2d_with_indices" || op == "aten::avg_pool2d") return pool(n);
  if ((op == "aten::mean" || op == "aten::sum") && !is_global_pool_mean(n)) return reduce(n);
  if (op == "aten::adaptive_avg_pool2d" || op == "aten::_adaptive_avg_pool2d" ||
      op == "aten::mean") {
    return global_pool(n);
  }
  if (op == "aten::where") return where(n);
  if (op == "aten::slice" || op == "aten::slice_copy" || op == "aten::select" ||
      op == "aten::select_copy") {
    return slice(n);
  }
  if (op == "aten::add" || op == "aten::mul") return binary(n);
  if (op == "aten::_softmax") return softmax(n);
  if (op == "aten::native_layer_norm") return layer_norm(n);
  if (op == "aten::cat") return concat(n);
  if (op == "aten::t" || op == "aten::t_copy" || op == "aten::permute" ||
      op == "aten::permute_copy" || op == "aten::transpose") {
    return permute(n);
  }
  if (op == "aten::view" || op == "aten::view_copy" || op == "aten::_unsafe_view" ||
      op == "aten::_reshape_alias" || op == "aten::reshape" || op == "aten::squeeze" ||
      op == "aten::unsqueeze" || op == "aten::flatten" || op == "aten::clone") {
    return reshape(n);
  }
  return eltwise(n);
}

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

void Builder::compact() {
  std::vector<int32_t> tensor_map(graph_.tensors.size(), -1);
  std::vector<uint8_t> used(graph_.tensors.size(), 0);
  for (const OpDesc& op : graph_.ops) {
    for (int32_t t : op.inputs) {
      if (t >= 0) used[t] = 1;
    }
    used[op.output] = 1;
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum) used[p.tensor] = 1;
    }
  }
  for (int32_t t : graph_.outputs) used[t] = 1;
  for (size_t i = 0; i < used.size(); ++i) {
    if (graph_.tensors[i].kind == TensorKind::Input) used[i] = 1;  // positions are fixed (C17)
  }
  std::vector<int64_t> weight_map(graph_.weights.size(), -1);
  CpuGraph g;
  g.precision = graph_.precision;
  g.num_inputs = graph_.num_inputs;
  std::vector<partition::NamedBlob> named;
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) continue;
    TensorDesc t = graph_.tensors[i];
    if (t.kind == TensorKind::Weight) {
      if (weight_map[t.index] < 0) {
        weight_map[t.index] = static_cast<int64_t>(g.weights.size());
        g.weights.push_back(graph_.weights[t.index]);
        named.push_back(std::move(named_[t.index]));
      }
      t.index = static_cast<uint32_t>(weight_map[t.index]);
    }
    tensor_map[i] = static_cast<int32_t>(g.tensors.size());
    g.tensors.push_back(std::move(t));
  }
  for (OpDesc op : graph_.ops) {
    for (int32_t& t : op.inputs) {
      if (t >= 0) t = tensor_map[t];
    }
    op.output = tensor_map[op.output];
    for (PostOp& p : op.post_ops) {
      if (p.is_sum) p.tensor = tensor_map[p.tensor];
    }
    g.ops.push_back(std::move(op));
  }
  for (int32_t t : graph_.outputs) g.outputs.push_back(tensor_map[t]);
  g.output_dim_orders = graph_.output_dim_orders;
  graph_ = std::move(g);
  named_ = std::move(named);
}

std::pair<int32_t, int32_t> Builder::add_int8_weight(const NamedQuantizedWeight& qw) {
  const QuantizedWeight& w = qw.weight;
  std::vector<uint8_t> bytes(w.q.size());
  for (size_t i = 0; i < w.q.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(static_cast<int8_t>(w.q[i]));
  }
  TensorDesc wt{
      TensorKind::Weight, add_weight_bytes(qw.name + "@int8", std::move(bytes)), w.dims, {}};
  wt.storage = WeightStorage::Int8;
  const int32_t wq = add_tensor(std::move(wt));
  const int32_t scales = add_tensor({TensorKind::Weight,
                                     add_float_weight(qw.name + "@scales", w.scales),
                                     {static_cast<int64_t>(w.scales.size())},
                                     {}});
  return {wq, scales};
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
  if (static_dims(*a) != out_dims) std::swap(a, b);  // add and mul commute
  auto ta = tensor(a);
  auto tb = tensor(b);
  if (!ta.ok()) return ta.status();
  if (!tb.ok()) return tb.status();
  OpDesc d;
  d.kind = OpKind::Binary;
  d.inputs = {*ta, *tb};
  d.params = BinaryParams{is_add ? BinaryAlg::Add : BinaryAlg::Mul};
  d.output = new_intermediate(*n.output());
  emit(std::move(d), n.output());
  return {};
}

ir::StatusOr<partition::PreprocessResult> build_graph(const ir::Program& partition,
                                                      Precision precision) {
  Builder b(partition, precision);
  EMBER_IR_RETURN_IF_ERROR(b.run());
  return b.take();
}

}  // namespace ember::cpu::internal
