#include "backends/cpu/cpu_compiler.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_compiler_internal.h"
#include "backends/cpu/graph_format.h"

namespace ember::cpu {
namespace {

using ir::Arg;
using ir::ArgKind;
using ir::DType;
using ir::Node;
using ir::Value;
using partition::OpRule;
using partition::OpSupportTable;
using Why = std::optional<std::string>;
using namespace internal;  // NOLINT(google-build-using-namespace): this backend's own helpers

// ---------------------------------------------------------------------------------------------
// Preprocess: partition program -> CpuGraph + named data.

class Builder {
 public:
  Builder(const ir::Program& p, Precision precision) : program_(p) { graph_.precision = precision; }

  ir::Status run() {
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
        if (!v->is_tensor() || v->tensor_type().dtype != DType::Float32 ||
            (!v->tensor_type().is_static() && !is_dynamic_batch(v->tensor_type()))) {
          return ir::Status::error("cpu backend: input %" + v->name() +
                                   " is not a float32 tensor, static but for its batch");
        }
        // Contiguous, whatever the value's dim order: the program holds every activation in
        // row-major order (a transpose is materialized by a copy), and so passes it here.
        TensorDesc t{TensorKind::Input, graph_.num_inputs++, static_dims(*v), {}};
        t.batch_symbol = batch_symbol(*v);
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
    for (const Node* n : g.nodes()) {
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

  partition::PreprocessResult take() {
    partition::PreprocessResult r;
    r.processed = serialize(graph_);
    r.named_data = std::move(named_);
    return r;
  }

 private:
  static std::vector<uint8_t> dim_order(const Value& v) {
    const auto& o = v.tensor_type().dim_order;
    bool identity = true;
    for (size_t i = 0; i < o.size(); ++i) identity = identity && o[i] == static_cast<int32_t>(i);
    if (identity) return {};
    return std::vector<uint8_t>(o.begin(), o.end());
  }

  int32_t add_tensor(TensorDesc t) {
    graph_.tensors.push_back(std::move(t));
    return static_cast<int32_t>(graph_.tensors.size() - 1);
  }

  int32_t new_intermediate(const Value& v) {
    TensorDesc t{TensorKind::Intermediate, 0, static_dims(v), {}};
    t.batch_symbol = batch_symbol(v);
    return add_tensor(std::move(t));
  }

  // The blob's symbol for `v`'s dynamic batch, or -1 when `v` is static.
  int32_t batch_symbol(const Value& v) {
    if (!is_dynamic_batch(v.tensor_type())) return -1;
    return symbols_.emplace(v.tensor_type().shape[0].expr, static_cast<int32_t>(symbols_.size()))
        .first->second;
  }

  // The named-data slot for `bytes` (stored once per key).
  uint32_t add_weight_bytes(const std::string& fqn, std::vector<uint8_t> bytes) {
    std::string key = partition::weight_key(fqn, bytes);
    auto it = weight_index_.find(key);
    if (it != weight_index_.end()) return it->second;
    const auto index = static_cast<uint32_t>(graph_.weights.size());
    graph_.weights.push_back({key, bytes.size()});
    named_.push_back({key, std::move(bytes)});
    weight_index_[key] = index;
    return index;
  }

  // The tensor id of `v`, materializing a weight the first time it is read.
  ir::StatusOr<int32_t> tensor(Value* v) {
    auto it = tensor_of_.find(v);
    if (it != tensor_of_.end()) return it->second;
    auto w = weight_of_.find(v);
    if (w == weight_of_.end()) {
      return ir::Status::error("value %" + v->name() + " has no tensor in the cpu graph");
    }
    const ir::Weight& weight = *w->second;
    if (weight.type.dtype != DType::Float32 || !weight.type.is_static()) {
      return ir::Status::error("weight " + weight.name + " is not a static float32 tensor");
    }
    auto bytes = weight.bytes();
    const uint32_t index =
        add_weight_bytes(weight.name, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    const int32_t id = add_tensor({TensorKind::Weight, index, static_dims(*v), dim_order(*v)});
    tensor_of_[v] = id;
    return id;
  }

  ir::StatusOr<int32_t> optional_tensor(const Node& n, const char* name) {
    Value* v = value_arg(n, name);
    if (v == nullptr) return -1;
    return tensor(v);
  }

  // Fusable: `v` is the current result of op `*op_index`, read once, not a partition output.
  bool fusable(Value* v, std::initializer_list<OpKind> kinds, size_t* op_index) {
    auto it = producer_op_.find(v);
    if (it == producer_op_.end()) return false;
    const OpDesc& op = graph_.ops[it->second];
    if (v->users().size() != 1 || v->is_graph_output()) return false;
    if (std::find(kinds.begin(), kinds.end(), op.kind) == kinds.end()) return false;
    *op_index = it->second;
    return true;
  }

  int32_t emit(OpDesc op, Value* result) {
    graph_.ops.push_back(std::move(op));
    const int32_t out = graph_.ops.back().output;
    tensor_of_[result] = out;
    producer_op_[result] = graph_.ops.size() - 1;
    return out;
  }

  // `result` now names the output of op `op_index` (a fused node).
  void alias(Value* result, size_t op_index) {
    tensor_of_[result] = graph_.ops[op_index].output;
    producer_op_[result] = op_index;
  }

  ir::Status lower(const Node& n) {
    const std::string& op = n.op();
    if (op == "aten::convolution") return conv(n);
    if (op == "aten::native_batch_norm" || op == "aten::_native_batch_norm_legit_no_training") {
      return batch_norm(n);
    }
    if (op == "aten::addmm" || op == "aten::mm" || op == "aten::bmm") return matmul(n);
    if (op == "aten::max_pool2d_with_indices" || op == "aten::avg_pool2d") return pool(n);
    if (op == "aten::adaptive_avg_pool2d" || op == "aten::_adaptive_avg_pool2d" ||
        op == "aten::mean") {
      return global_pool(n);
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
        op == "aten::unsqueeze" || op == "aten::flatten") {
      return reshape(n);
    }
    return eltwise(n);
  }

  ir::Status conv(const Node& n) {
    Value* in = value_arg(n, "input");
    const int64_t r = static_cast<int64_t>(in->tensor_type().rank()) - 2;
    const std::vector<int64_t> zeros(r, 0), ones(r, 1);
    auto stride = *int_list(n, "stride", r, ones);
    auto padding = *int_list(n, "padding", r, zeros);
    auto dilation = *int_list(n, "dilation", r, ones);
    auto out_pad = *int_list(n, "output_padding", r, zeros);
    OpDesc d;
    d.kind = OpKind::Conv;
    auto src = tensor(in);
    auto w = tensor(value_arg(n, "weight"));
    auto b = optional_tensor(n, "bias");
    if (!src.ok()) return src.status();
    if (!w.ok()) return w.status();
    if (!b.ok()) return b.status();
    d.inputs = {*src, *w, *b};
    const bool transposed = *number(n, "transposed", 0) != 0;
    d.ints = {r, static_cast<int64_t>(*number(n, "groups", 1)), transposed ? 1 : 0};
    d.ints.insert(d.ints.end(), stride.begin(), stride.end());
    d.ints.insert(d.ints.end(), padding.begin(), padding.end());
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
      d.ints.push_back(pr);
    }
    d.ints.insert(d.ints.end(), dilation.begin(), dilation.end());
    d.ints.insert(d.ints.end(), out_pad.begin(), out_pad.end());
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }

  // Folds into the convolution before it when that convolution's weights are constants and its
  // result is read only here; otherwise a standalone inference batch norm.
  ir::Status batch_norm(const Node& n) {
    Value* in = value_arg(n, "input");
    Value* gamma = value_arg(n, "weight");
    Value* beta = value_arg(n, "bias");
    Value* mean = value_arg(n, "running_mean");
    Value* var = value_arg(n, "running_var");
    const double eps = *number(n, "eps", 1e-5);
    size_t conv_index = 0;
    auto is_const = [&](Value* v) { return v == nullptr || weight_of_.count(v) != 0; };
    if (fusable(in, {OpKind::Conv}, &conv_index) && graph_.ops[conv_index].post_ops.empty() &&
        graph_.ops[conv_index].ints[2] == 0 && is_const(gamma) && is_const(beta) &&
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
    d.floats = {static_cast<float>(eps)};
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output(0));
    return {};
  }

  static std::vector<double> floats_of(const ir::Weight* w, size_t expect) {
    std::vector<double> out(expect, 0);
    auto bytes = w->bytes();
    if (bytes.size() != expect * 4) return {};
    for (size_t i = 0; i < expect; ++i) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      out[i] = f;
    }
    return out;
  }

  ir::Status fold_batch_norm(const Node& n, size_t conv_index, Value* gamma, Value* beta,
                             Value* mean, Value* var, double eps) {
    OpDesc& c = graph_.ops[conv_index];
    const TensorDesc wt = graph_.tensors[c.inputs[1]];
    const int64_t channels = wt.dims[0];
    const int64_t per_channel = checked_numel(wt.dims) / std::max<int64_t>(channels, 1);
    auto get = [&](Value* v, double fallback) -> std::vector<double> {
      if (v == nullptr) return std::vector<double>(channels, fallback);
      return floats_of(weight_of_.at(v), channels);
    };
    const std::vector<double> g = get(gamma, 1), b = get(beta, 0), m = get(mean, 0),
                              s = get(var, 1);
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

  // Drops tensors and weights nothing reads any more (a convolution's weights replaced by their
  // batch-norm-folded copy), so each stored weight is one the runtime uses.
  void compact() {
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

  const std::vector<uint8_t>& weight_bytes(uint32_t index) {
    return named_[index].data;  // named_ and graph_.weights are parallel
  }

  ir::Status matmul(const Node& n) {
    OpDesc d;
    d.kind = OpKind::MatMul;
    const bool addmm = n.op() == "aten::addmm";
    auto a = tensor(value_arg(n, addmm ? "mat1" : "self"));
    auto b = tensor(value_arg(n, addmm ? "mat2" : (n.op() == "aten::mm" ? "mat2" : "mat2")));
    auto bias = addmm ? tensor(value_arg(n, "self")) : ir::StatusOr<int32_t>(-1);
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    if (!bias.ok()) return bias.status();
    d.inputs = {*a, *b, *bias};
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }

  ir::Status pool(const Node& n) {
    const bool max = n.op() == "aten::max_pool2d_with_indices";
    auto kernel = *int_list(n, "kernel_size", 2, {1, 1});
    auto stride = *int_list(n, "stride", 2, kernel);
    auto padding = *int_list(n, "padding", 2, {0, 0});
    auto dilation = *int_list(n, "dilation", 2, {1, 1});
    PoolAlg alg = PoolAlg::Max;
    if (!max) {
      alg =
          *number(n, "count_include_pad", 1) != 0 ? PoolAlg::AvgIncludePad : PoolAlg::AvgExcludePad;
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

  ir::Status emit_pool(const Node&, Value* in, Value* out, PoolAlg alg,
                       const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                       const std::vector<int64_t>& pad_l, const std::vector<int64_t>& pad_r,
                       const std::vector<int64_t>& dilation) {
    auto src = tensor(in);
    if (!src.ok()) return src.status();
    OpDesc d;
    d.kind = OpKind::Pool;
    d.inputs = {*src};
    d.ints = {static_cast<int64_t>(alg), 2};
    for (const auto* v : {&kernel, &stride, &pad_l, &pad_r, &dilation}) {
      d.ints.insert(d.ints.end(), v->begin(), v->end());
    }
    d.output = new_intermediate(*out);
    emit(std::move(d), out);
    return {};
  }

  // Global (or evenly split adaptive) average pooling; mean over H, W without keepdim adds a
  // reshape.
  ir::Status global_pool(const Node& n) {
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
    d.ints = {static_cast<int64_t>(PoolAlg::AvgExcludePad),
              2,
              kernel[0],
              kernel[1],
              kernel[0],
              kernel[1],
              0,
              0,
              0,
              0,
              1,
              1};
    TensorDesc pooled{TensorKind::Intermediate, 0, {in_dims[0], in_dims[1], 1, 1}, {}};
    pooled.batch_symbol = batch_symbol(*in);
    d.output = add_tensor(std::move(pooled));
    graph_.ops.push_back(std::move(d));
    OpDesc r;
    r.kind = OpKind::Reshape;
    r.inputs = {graph_.ops.back().output};
    r.output = new_intermediate(*n.output());
    emit(std::move(r), n.output());
    return {};
  }

  ir::Status binary(const Node& n) {
    Value* a = value_arg(n, "self");
    Value* b = value_arg(n, "other");
    const auto out_dims = static_dims(*n.output());
    const bool is_add = n.op() == "aten::add";
    if (is_add && static_dims(*a) == out_dims && static_dims(*b) == out_dims) {
      // Residual add: a sum post-op on the later of the two producers, whose summand (the other
      // operand) is ready before it runs.
      std::optional<size_t> best;
      Value* summand = nullptr;
      for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
        size_t op_index = 0;
        if (x == y || !fusable(x, {OpKind::Conv, OpKind::MatMul}, &op_index)) continue;
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
    d.ints = {static_cast<int64_t>(is_add ? BinaryAlg::Add : BinaryAlg::Mul)};
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }

  static bool has_sum(const OpDesc& op) {
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum) return true;
    }
    return false;
  }

  ir::Status eltwise(const Node& n) {
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
      p.alg = EltwiseAlg::Logistic;
    } else if (op == "aten::hardswish") {
      p.alg = EltwiseAlg::Hardswish;
    } else if (op == "aten::tanh") {
      p.alg = EltwiseAlg::Tanh;
    } else if (op == "aten::elu") {
      p.alg = EltwiseAlg::Elu;
      p.alpha = static_cast<float>(*number(n, "alpha", 1));
    } else {
      return ir::Status::error("op not supported by the cpu backend");
    }
    Value* in = value_arg(n, "self");
    size_t op_index = 0;
    if (fusable(in, {OpKind::Conv, OpKind::MatMul, OpKind::Binary}, &op_index)) {
      graph_.ops[op_index].post_ops.push_back(p);
      alias(n.output(), op_index);
      return {};
    }
    auto src = tensor(in);
    if (!src.ok()) return src.status();
    OpDesc d;
    d.kind = OpKind::Eltwise;
    d.inputs = {*src};
    d.ints = {static_cast<int64_t>(p.alg)};
    d.floats = {p.alpha, p.beta};
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }

  ir::Status softmax(const Node& n) {
    Value* in = value_arg(n, "self");
    auto src = tensor(in);
    if (!src.ok()) return src.status();
    const auto rank = static_cast<int64_t>(in->tensor_type().rank());
    OpDesc d;
    d.kind = OpKind::Softmax;
    d.inputs = {*src};
    d.ints = {normalize_dim(static_cast<int64_t>(*number(n, "dim", -1)), rank)};
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }

  ir::Status layer_norm(const Node& n) {
    OpDesc d;
    d.kind = OpKind::LayerNorm;
    auto src = tensor(value_arg(n, "input"));
    auto g = optional_tensor(n, "weight");
    auto b = optional_tensor(n, "bias");
    if (!src.ok()) return src.status();
    if (!g.ok()) return g.status();
    if (!b.ok()) return b.status();
    d.inputs = {*src, *g, *b};
    d.floats = {static_cast<float>(*number(n, "eps", 1e-5))};
    d.output = new_intermediate(*n.output(0));
    emit(std::move(d), n.output(0));
    return {};
  }

  ir::Status concat(const Node& n) {
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
    d.ints = {normalize_dim(static_cast<int64_t>(*number(n, "dim", 0)), rank)};
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }

  ir::Status permute(const Node& n) {
    Value* in = value_arg(n, "self");
    const auto rank = static_cast<int64_t>(in->tensor_type().rank());
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
    d.ints = perm;
    d.output = new_intermediate(*n.output());
    emit(std::move(d), n.output());
    return {};
  }

  ir::Status reshape(const Node& n) {
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
    return {};
  }

  const ir::Program& program_;
  CpuGraph graph_;
  std::map<const Value*, int32_t> tensor_of_;
  std::map<std::string, int32_t> symbols_;  // dynamic batch symbols, by name
  std::map<const Value*, const ir::Weight*> weight_of_;
  std::map<const Value*, size_t> producer_op_;
  std::map<std::string, uint32_t> weight_index_;
  std::vector<partition::NamedBlob> named_;
};

class CpuCompilerBackend final : public partition::CompilerBackend {
 public:
  std::string_view name() const override { return "cpu"; }
  const partition::BackendSupport& support() const override { return support_table(); }
  ir::StatusOr<partition::PreprocessResult> preprocess(
      const ir::Program& partition,
      std::span<const partition::CompileSpecEntry> specs) const override {
    Precision precision = Precision::Fp32;
    for (const auto& s : specs) {
      const std::string value(s.value.begin(), s.value.end());
      if (s.key == "precision") {
        if (value == "bf16") {
          precision = Precision::Bf16;
        } else if (value != "fp32") {
          return ir::Status::error("cpu backend: precision '" + value +
                                   "' (expected fp32 or bf16)");
        }
      } else if (s.key == "fp32_winograd" || s.key == "ember_kernels") {
        if (value != "on" && value != "off") {
          return ir::Status::error("cpu backend: " + s.key + " '" + value +
                                   "' (expected on or off)");
        }
      } else if (s.key == "num_threads") {
        if (value.empty() || value.size() > 4 ||
            value.find_first_not_of("0123456789") != std::string::npos) {
          return ir::Status::error("cpu backend: num_threads '" + value + "' is not a count");
        }
      } else {
        return ir::Status::error("cpu backend: unknown compile spec '" + s.key + "'");
      }
    }
    Builder b(partition, precision);
    EMBER_IR_RETURN_IF_ERROR(b.run());
    return b.take();
  }
};

}  // namespace

const partition::CompilerBackend* compiler_backend() {
  static const CpuCompilerBackend backend;
  return &backend;
}

ir::Status register_compiler_backend() {
  return partition::register_compiler_backend(compiler_backend());
}

}  // namespace ember::cpu
