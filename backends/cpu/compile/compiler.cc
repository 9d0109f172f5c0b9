// The cpu backend's preprocess (compile/builder.h): the walk over a partition (its inputs,
// weights and outputs), each node sent to its lowering, weights materialized as named data, and
// the graph compacted at the end. The lowerings are compile/builder_conv_matmul.cc's and
// compile/builder_ops.cc's.
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/compile/builder.h"
#include "backends/cpu/compile/internal.h"
#include "backends/cpu/cpu_compiler.h"
#include "backends/cpu/graph/graph_format.h"

namespace ember::cpu::internal {

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
  // An activation's dequantize (check_activation_dequantize; its int8 casts may be inputs of the
  // partition, and check_ordered_binary left no float subtraction of its shape).
  if (op == "aten::sub" && activation_dequantize_linear(n, /*casts=*/false) != nullptr) {
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
  if (op == "aten::constant_pad_nd") return pad(n);
  if (op == "aten::slice" || op == "aten::slice_copy" || op == "aten::select" ||
      op == "aten::select_copy") {
    return slice(n);
  }
  if (op == "aten::add" || op == "aten::mul" || op == "aten::sub" || op == "aten::div" ||
      op == "aten::minimum" || op == "aten::maximum") {
    return binary(n);
  }
  if (op == "aten::upsample_bilinear2d" || op == "aten::upsample_nearest2d") return resize(n);
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

ir::StatusOr<partition::PreprocessResult> build_graph(const ir::Program& partition,
                                                      Precision precision) {
  Builder b(partition, precision);
  EMBER_IR_RETURN_IF_ERROR(b.run());
  return b.take();
}

}  // namespace ember::cpu::internal
