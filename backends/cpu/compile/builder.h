// The cpu backend's preprocess (internal to backends/cpu): one partition program becomes a
// CpuGraph (graph/graph_format.h) and the named data of its weights. Builder lowers node by node,
// fusing element-wise ops and residual adds into the op producing their input where it can.
//
//   Builder b(partition, Precision::Fp32);
//   EMBER_IR_RETURN_IF_ERROR(b.run());
//   partition::PreprocessResult r = b.take();
//
// Its methods are defined in compile/compiler.cc (the walk, weights, compaction),
// compile/builder_conv_matmul.cc (convolutions, batch norms, matmuls, binary ops) and
// compile/builder_ops.cc (quantize/dequantize, pooling, element-wise, softmax, layer norm, concat
// and views).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/compile/internal.h"
#include "backends/cpu/graph/graph_format.h"

namespace ember::cpu::internal {

using ir::DType;
using ir::Node;
using ir::Value;

class Builder {
 public:
  Builder(const ir::Program& p, Precision precision) : program_(p) { graph_.precision = precision; }

  ir::Status run();

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
  ir::StatusOr<int32_t> tensor(Value* v);

  struct NamedQuantizedWeight {
    std::string name;
    QuantizedWeight weight;
  };
  // The int8 bytes of `w` as a weight tensor of PyTorch's dims, and its scales as a [N] one.
  std::pair<int32_t, int32_t> add_int8_weight(const NamedQuantizedWeight& w);

  uint32_t add_float_weight(const std::string& fqn, const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return add_weight_bytes(fqn, std::move(bytes));
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

  ir::Status lower(const Node& n);

  // A dequantize of a constant int8 weight is a weight (its floats materialize only for an op
  // that reads them as floats, tensor()). One of a quantize rounds a float to int8's grid: two
  // element-wise steps, fused after the op computing the float when they can be. Every further
  // dequantize of that quantize reads the same tensor.
  ir::Status dequantize(const Node& n);

  ir::Status conv(const Node& n);

  // Folds into the convolution before it when that convolution's weights are constants and its
  // result is read only here; otherwise a standalone inference batch norm.
  ir::Status batch_norm(const Node& n);

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
                             Value* mean, Value* var, double eps);

  // Drops tensors and weights nothing reads any more (a convolution's weights replaced by their
  // batch-norm-folded copy), so each stored weight is one the runtime uses.
  void compact();

  const std::vector<uint8_t>& weight_bytes(uint32_t index) {
    return named_[index].data;  // named_ and graph_.weights are parallel
  }

  ir::Status matmul(const Node& n);
  // addmm/mm of a 2-D input by a transposed grouped-integer weight: a GroupQuantMatMul.
  ir::Status group_quant_matmul(const Node& n, const NamedQuantizedWeight& qw);

  ir::Status pool(const Node& n);

  ir::Status emit_pool(const Node&, Value* in, Value* out, PoolAlg alg,
                       const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                       const std::vector<int64_t>& pad_l, const std::vector<int64_t>& pad_r,
                       const std::vector<int64_t>& dilation);

  // Global (or evenly split adaptive) average pooling; mean over H, W without keepdim adds a
  // reshape.
  ir::Status global_pool(const Node& n);

  // Op `d` into a new intermediate `result`, then a Reshape of it to n's output (an op whose
  // natural result keeps a dim n's drops).
  ir::Status emit_reshaped(OpDesc d, TensorDesc result, const Node& n);

  ir::Status binary(const Node& n);

  static bool has_sum(const OpDesc& op) {
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum) return true;
    }
    return false;
  }

  ir::Status eltwise(const Node& n);
  // p on `in` as `out`: a post-op of the op producing `in` where it may be, else an Eltwise op.
  ir::Status emit_eltwise(Value* in, const PostOp& p, Value* out);
  // A sigmoid of x read only by a mul of x by it (silu, as export writes it): the mul becomes a
  // swish, and the sigmoid nothing (silu_sigmoids_).
  static bool is_silu_sigmoid(const Node& sigmoid);

  // mean.dim or sum.dim_IntList (other than a global pooling): a Reduce.
  ir::Status reduce(const Node& n);

  // slice (step 1) or select: a Slice, and for select a Reshape dropping the dim.
  // constant_pad_nd: a Pad (support.cc's check_pad took only non-negative static pads).
  ir::Status pad(const Node& n);
  ir::Status slice(const Node& n);

  ir::Status where(const Node& n);

  // upsample_bilinear2d / upsample_nearest2d (support.cc's check_resize): a Resize to the output's
  // H and W.
  ir::Status resize(const Node& n);

  ir::Status softmax(const Node& n);

  ir::Status layer_norm(const Node& n);

  ir::Status concat(const Node& n);

  ir::Status permute(const Node& n);

  ir::Status reshape(const Node& n);

  const ir::Program& program_;
  CpuGraph graph_;
  std::map<const Value*, int32_t> tensor_of_;
  std::map<std::string, int32_t> symbols_;  // dynamic batch symbols, by name
  std::map<const Value*, const ir::Weight*> weight_of_;
  std::map<const Value*, size_t> producer_op_;
  std::map<const Value*, NamedQuantizedWeight> quant_weights_;           // dequantized int8 weights
  std::map<const Value*, const NamedQuantizedWeight*> quant_weights_t_;  // their transposes
  std::map<const Value*, TensorQuant> fake_quant_of_;  // floats on int8's grid: their parameters
  // A view (reshape, permute) moves values: those of `in` on an int8 grid stay on it in `out`.
  void keep_fake_quant(const Value* in, const Value* out) {
    if (auto fq = fake_quant_of_.find(in); fq != fake_quant_of_.end()) {
      fake_quant_of_[out] = fq->second;
    }
  }
  // A dynamically quantized activation's dequantize (activation_dequantize_linear), computed by
  // the grouped linear that reads it: its integers (as floats), zero points and scales (null
  // until the multiplication).
  struct ActivationQuant {
    Value* q;
    Value* zero_point;
    Value* scale = nullptr;
  };
  std::map<const Value*, ActivationQuant> activation_quant_;
  // A linear's input quantized whole in the program, torchao's per token (activation_chain) or
  // PT2E's dynamic per tensor (dynamic_chain): its nodes, computed by the linear, and for its
  // dequantized result (and reshapes of it) the float input, eps and which quantization.
  struct ActivationInput {
    Value* x;
    double eps;
    bool per_tensor;
  };
  std::set<const Node*> activation_chain_nodes_;
  std::set<const Value*> silu_sigmoids_;
  std::map<const Value*, ActivationInput> activation_input_;
  ir::Status find_activation_chains();
  std::map<const Value*, int32_t> fake_quant_tensor_;  // per quantize: its dequantized tensor
  std::map<std::string, uint32_t> weight_index_;
  std::vector<partition::NamedBlob> named_;
};

}  // namespace ember::cpu::internal
