// translate (translate.h): node by node, each XNNPACK node becomes the engine ops that compute it,
// each XNNPACK value an engine tensor under a permutation (Mapped).
#include "backends/xnnpack/translate.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/half.h"

namespace ember::xnn {

using cpu::BinaryAlg;
using cpu::CpuGraph;
using cpu::EltwiseAlg;
using cpu::OpDesc;
using cpu::OpKind;
using cpu::TensorDesc;
using cpu::TensorKind;

// WeightTable

void WeightTable::add_view(std::string key, std::span<const uint8_t> bytes) {
  entries_[std::move(key)].view = bytes;
}

void WeightTable::add_owned(std::string key, std::vector<uint8_t> bytes) {
  entries_[std::move(key)].owned = std::move(bytes);
}

Result<TensorLayout> WeightTable::get_tensor_layout(std::string_view key) const {
  if (named_ != nullptr && entries_.find(key) == entries_.end()) {
    return named_->get_tensor_layout(key);
  }
  return fail(Error::NotFound, "'%.*s' has no tensor layout", static_cast<int>(key.size()),
              key.data());
}

Result<FreeableBuffer> WeightTable::get_data(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (named_ != nullptr) return named_->get_data(key);
    return fail(Error::NotFound, "'%.*s' is missing from named data", static_cast<int>(key.size()),
                key.data());
  }
  const std::span<const uint8_t> b = it->second.bytes();
  return FreeableBuffer(b.data(), b.size(), nullptr, nullptr);
}

Error WeightTable::load_data_into(std::string_view key, void* buffer, size_t size) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (named_ != nullptr) return named_->load_data_into(key, buffer, size);
    return fail(Error::NotFound, "'%.*s' is missing from named data", static_cast<int>(key.size()),
                key.data());
  }
  const std::span<const uint8_t> b = it->second.bytes();
  if (b.size() < size) {
    return fail(Error::InvalidArgument, "'%.*s' has %zu bytes, %zu asked",
                static_cast<int>(key.size()), key.data(), b.size(), size);
  }
  if (size > 0) std::memcpy(buffer, b.data(), size);
  return Error::Ok;
}

Result<std::string_view> WeightTable::key(size_t index) const {
  if (index >= entries_.size()) return fail(Error::InvalidArgument, "key %zu", index);
  auto it = entries_.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(index));
  return std::string_view(it->first);
}

namespace {

using Perm = std::vector<int64_t>;  // XNNPACK dim i is the engine tensor's dim perm[i]

Perm identity(size_t rank) {
  Perm p(rank);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

const Perm kNhwc = {0, 2, 3, 1};  // an NHWC value held as an NCHW tensor

// An XNNPACK value as the engine holds it.
struct Mapped {
  int32_t tensor = -1;
  Perm perm;  // empty: not yet mapped
};

constexpr float kInf = std::numeric_limits<float>::infinity();

class Translator {
 public:
  Translator(const Payload& p, const NamedDataMap* named)
      : p_(p), named_(named), mapped_(p.values.size()) {
    out_.weights = std::make_unique<WeightTable>();
    out_.weights->set_named(named);
  }

  Result<Translation> run() {
    CpuGraph& g = out_.graph;
    // The engine computes no empty tensors (and every shape check below divides by dims).
    for (const Value& v : p_.values) {
      for (const int64_t d : v.dims) {
        if (d == 0) {
          return fail(Error::NotSupported,
                      "XNNPACK delegate: value %u has a dim of size 0; Ember's cpu engine runs "
                      "no empty tensors",
                      v.id);
        }
      }
    }
    g.num_inputs = static_cast<uint32_t>(p_.inputs.size());
    for (size_t k = 0; k < p_.inputs.size(); ++k) {
      const Value& v = p_.values[p_.inputs[k]];
      // The engine's input holds the value's real values in float32: the runtime converts the
      // caller's fp16, bf16 or int8 tensor at the boundary (xnnpack_runtime.cc).
      if (!is_boundary_value(v)) {
        return fail(Error::NotSupported,
                    "XNNPACK delegate: input %zu (value %u) is %s%s; Ember runs fp32, fp16, bf16 "
                    "and per-tensor int8 (qint8) delegate inputs",
                    k, v.id, datatype_name(v.dtype), quant_text(v));
      }
      EMBER_TRY(check_rank(v, "input"));
      EMBER_TRY(check_boundary_grid(v, "input", k));
      TensorDesc t;
      t.kind = TensorKind::Input;
      t.index = static_cast<uint32_t>(k);
      t.dims = v.dims;
      mapped_[v.id] = {add_tensor(std::move(t)), identity(v.dims.size())};
    }
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      node_ = i;
      node_first_op_ = out_.graph.ops.size();
      in_node_ = true;
      if (Error e = node(p_.nodes[i]); e != Error::Ok) return e;
    }
    in_node_ = false;
    for (size_t j = 0; j < p_.outputs.size(); ++j) {
      const Value& v = p_.values[p_.outputs[j]];
      if (!is_boundary_value(v)) {
        return fail(Error::NotSupported,
                    "XNNPACK delegate: output %zu (value %u) is %s%s; Ember writes fp32, fp16, "
                    "bf16 and per-tensor int8 (qint8) delegate outputs",
                    j, v.id, datatype_name(v.dtype), quant_text(v));
      }
      EMBER_TRY(check_boundary_grid(v, "output", j));
      EMBER_ASSIGN_OR_RETURN(const int32_t t, as_perm(v.id, identity(v.dims.size())));
      g.outputs.push_back(t);
      g.output_dim_orders.emplace_back();
    }
    return std::move(out_);
  }

 private:
  // Refusals name the node being translated, if any.
  [[gnu::format(printf, 2, 3)]] Error refuse(const char* format, ...) const {
    char text[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    if (!in_node_) return fail(Error::NotSupported, "XNNPACK delegate: %s", text);
    const Node& n = p_.nodes[node_];
    return fail(Error::NotSupported, "XNNPACK delegate: node %zu (%s, debug handle %u): %s", node_,
                node_type_name(n.type), n.debug_handle, text);
  }

  Error check_rank(const Value& v, const char* what) const {
    if (v.dims.empty() || v.dims.size() > static_cast<size_t>(cpu::kMaxCpuRank)) {
      return fail(Error::NotSupported,
                  "XNNPACK delegate: %s value %u has rank %zu; Ember's cpu "
                  "engine takes ranks 1 to %d",
                  what, v.id, v.dims.size(), cpu::kMaxCpuRank);
    }
    return Error::Ok;
  }

  // An int8 delegate input or output is converted at the boundary with its scale and zero
  // point: a grid the conversion can compute (a finite positive scale, a zero point in int8).
  static Error check_boundary_grid(const Value& v, const char* what, size_t index) {
    if (!is_q8(v)) return Error::Ok;
    const float s = v.quant.scale;
    if (!std::isfinite(s) || !(s > 0) || !std::isfinite(1.0f / s) || v.quant.zero_point < -128 ||
        v.quant.zero_point > 127) {
      return fail(Error::NotSupported,
                  "XNNPACK delegate: %s %zu (value %u) is qint8 with scale %g and zero point %d; "
                  "Ember converts int8 delegate values of a finite positive scale and a zero "
                  "point in [-128, 127]",
                  what, index, v.id, static_cast<double>(s), v.quant.zero_point);
    }
    return Error::Ok;
  }

  int32_t add_tensor(TensorDesc t) {
    out_.graph.tensors.push_back(std::move(t));
    return static_cast<int32_t>(out_.graph.tensors.size() - 1);
  }

  int32_t intermediate(std::vector<int64_t> dims) {
    TensorDesc t;
    t.kind = TensorKind::Intermediate;
    t.dims = std::move(dims);
    return add_tensor(std::move(t));
  }

  // Whether the engine fuses post-ops into ops of `kind` (graph_verify.cc's rule).
  static bool takes_post_ops(OpKind kind) {
    return kind == OpKind::Conv || kind == OpKind::MatMul || kind == OpKind::Binary ||
           kind == OpKind::QuantConv || kind == OpKind::QuantMatMul;
  }

  // An op writing a new tensor of `dims`, then `post` (fused where the op takes post-ops, else
  // each its own element-wise step); returns the last tensor written.
  int32_t emit(OpKind kind, std::vector<int32_t> inputs, cpu::OpParams params,
               std::vector<int64_t> dims, std::vector<cpu::PostOp> post = {}) {
    OpDesc d;
    d.kind = kind;
    d.inputs = std::move(inputs);
    d.params = std::move(params);
    d.output = intermediate(dims);
    const bool fused = takes_post_ops(kind);
    if (fused) d.post_ops = std::move(post);
    const int32_t t = d.output;
    out_.graph.ops.push_back(std::move(d));
    return fused ? t : apply_post_ops(t, post);
  }

  // Post-ops as element-wise steps after t.
  int32_t apply_post_ops(int32_t t, const std::vector<cpu::PostOp>& post) {
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

  const Value& value(uint32_t id) const { return p_.values[id]; }

  // The engine tensor of a constant, its dims the value's (made once).
  Result<int32_t> constant(const Value& v) {
    if (!is_float(v)) {
      return refuse("constant value %u is %s; this node takes float (fp32, fp16, bf16) constants",
                    v.id, datatype_name(v.dtype));
    }
    EMBER_TRY(check_rank(v, "constant"));
    const int64_t n = numel(v.dims);
    const Constant& c = p_.constants[v.constant];
    const uint64_t element = v.dtype == Datatype::Fp32 ? 4 : 2;
    if (static_cast<uint64_t>(n) * element != c.size) {
      return refuse("constant value %u has %lld elements but %llu bytes", v.id,
                    static_cast<long long>(n), static_cast<unsigned long long>(c.size));
    }
    if (v.dtype != Datatype::Fp32) {
      // The engine computes in float32: the fp16 or bf16 constant widened once, exactly.
      EMBER_ASSIGN_OR_RETURN(const std::vector<uint8_t> half, bytes_of(v.constant));
      std::vector<float> wide(static_cast<size_t>(n));
      for (size_t i = 0; i < wide.size(); ++i) {
        uint16_t bits;
        std::memcpy(&bits, half.data() + 2 * i, 2);
        wide[i] = v.dtype == Datatype::Fp16 ? static_cast<float>(Half::from_bits(bits))
                                            : static_cast<float>(BFloat16::from_bits(bits));
      }
      return owned_floats("constant", wide, v.dims);
    }
    std::string key;
    if (!c.named_key.empty()) {
      key = c.named_key;
    } else {
      key = "xnnpack/constant/" + std::to_string(v.constant);
      if (c.is_inline) {
        out_.weights->add_owned(key, c.inline_bytes);
      } else {
        out_.weights->add_view(key, p_.constant_data.subspan(c.offset, c.size));
      }
    }
    cpu::WeightRef ref{key, c.size};
    out_.graph.weights.push_back(ref);
    TensorDesc t;
    t.kind = TensorKind::Weight;
    t.index = static_cast<uint32_t>(out_.graph.weights.size() - 1);
    t.dims = v.dims;
    return add_tensor(std::move(t));
  }

  // The engine tensor holding value `id` under `want` (XNNPACK dim i = the tensor's dim want[i]):
  // the value's own when it is so held, a re-described weight, or a Permute of it.
  Result<int32_t> as_perm(uint32_t id, const Perm& want) {
    Mapped& m = mapped_[id];
    if (m.perm.empty()) {
      const Value& v = value(id);
      if (v.constant == 0) return refuse("value %u is read before it is written", id);
      EMBER_ASSIGN_OR_RETURN(m.tensor, constant(v));
      m.perm = identity(v.dims.size());
    }
    if (m.perm == want) return m.tensor;
    if (m.perm.size() != want.size()) return refuse("value %u: rank mismatch", id);
    const size_t r = want.size();
    // The new tensor's dim j is XNNPACK's dim k with want[k] = j, which is the old tensor's dim
    // m.perm[k]: a Permute whose output dim j is input dim q[j].
    std::vector<int64_t> q(r);
    for (size_t k = 0; k < r; ++k) q[want[k]] = m.perm[k];
    const TensorDesc src = out_.graph.tensors[m.tensor];
    std::vector<int64_t> dims(r);
    for (size_t j = 0; j < r; ++j) dims[j] = src.dims[q[j]];
    int32_t t;
    if (src.kind == TensorKind::Weight) {
      // The same bytes, re-described: dims permuted, the physical order kept.
      std::vector<int64_t> inv(r);
      for (size_t j = 0; j < r; ++j) inv[q[j]] = static_cast<int64_t>(j);
      TensorDesc w = src;
      w.dims = dims;
      w.dim_order.clear();
      for (size_t k = 0; k < r; ++k) {
        const int64_t old = src.dim_order.empty() ? static_cast<int64_t>(k) : src.dim_order[k];
        w.dim_order.push_back(static_cast<uint8_t>(inv[old]));
      }
      t = add_tensor(std::move(w));
    } else {
      t = emit(OpKind::Permute, {m.tensor}, cpu::PermuteParams{q}, dims);
    }
    // Later readers wanting `want` find it (one Permute per value and layout).
    alt_.push_back({id, want, t});
    return t;
  }

  // As as_perm, reusing a Permute made before for the same value and layout.
  Result<int32_t> held(uint32_t id, const Perm& want) {
    for (const auto& a : alt_) {
      if (a.id == id && a.perm == want) return a.tensor;
    }
    return as_perm(id, want);
  }

  // The engine tensor of `id` in whatever layout it is held, with that layout.
  Result<Mapped> any(uint32_t id) {
    if (mapped_[id].perm.empty()) EMBER_TRY(as_perm(id, identity(value(id).dims.size())).error());
    return mapped_[id];
  }

  // The engine dims of XNNPACK dims `dims` held under `perm`.
  static std::vector<int64_t> engine_dims(const std::vector<int64_t>& dims, const Perm& perm) {
    std::vector<int64_t> e(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) e[perm[i]] = dims[i];
    return e;
  }

  // A static int8 value (qint8, one scale and zero point): the engine tensor holds its real
  // values, (q - zero point) * scale, each exactly a float; ops that change them put them back
  // on the value's grid (define).
  static bool is_q8(const Value& v) {
    return v.dtype == Datatype::QInt8 && v.quant.kind == Quant::Kind::PerTensor;
  }
  // A float value: fp32, or fp16 and bf16, which the engine holds and computes in float32
  // (XNNPACK rounds each fp16 node's result to fp16; Ember rounds only at the delegate's outputs).
  static bool is_float(const Value& v) {
    return (v.dtype == Datatype::Fp32 || v.dtype == Datatype::Fp16 || v.dtype == Datatype::Bf16) &&
           !v.quantized();
  }
  static bool is_real(const Value& v) { return is_float(v) || (is_q8(v) && v.constant == 0); }
  // What a delegate input or output may be: the runtime converts it to and from the engine's
  // float32 real values.
  static bool is_boundary_value(const Value& v) { return v.constant == 0 && is_real(v); }
  static const char* quant_text(const Value& v) {
    switch (v.quant.kind) {
      case Quant::Kind::None:
        return "";
      case Quant::Kind::PerTensor:
        return " (per tensor)";
      case Quant::Kind::PerChannel:
        return " (per channel)";
      case Quant::Kind::PerToken:
        return " (per token)";
      case Quant::Kind::PerChannelGroup:
        return " (per channel group)";
    }
    return "";
  }

  // Real values, checked per node: every input and output of a node that computes on floats
  // (float32 values, or static int8 values as their real values).
  Error real_values(const Node& n) const {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] == kNoValue) continue;
      const Value& v = value(n.inputs[k]);
      if (!is_real(v)) {
        return refuse(
            "input %zu (value %u) is %s%s; Ember runs this node on float (fp32, fp16, bf16) and "
            "per-tensor int8 values",
            k, v.id, datatype_name(v.dtype), v.constant != 0 ? " (a constant)" : "");
      }
    }
    for (const uint32_t id : n.outputs) {
      const Value& v = value(id);
      if (!is_real(v)) {
        return refuse(
            "output value %u is %s; Ember runs this node on float (fp32, fp16, bf16) and "
            "per-tensor "
            "int8 values",
            v.id, datatype_name(v.dtype));
      }
      if (Error e = check_rank(v, "output"); e != Error::Ok) return e;
    }
    return Error::Ok;
  }

  static bool same_grid(const Value& a, const Value& b) {
    return is_q8(a) && is_q8(b) && a.quant.scale == b.quant.scale &&
           a.quant.zero_point == b.quant.zero_point;
  }

  // Rounds tensor t to value y's int8 grid, as XNNPACK's requantization does (to nearest, ties
  // to even, saturated to [-128, 127]), keeping real values: a quantize and a dequantize, fused
  // into the op this node emitted when it takes post-ops.
  int32_t to_grid(const Value& y, int32_t t) {
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

  // Value `id` is tensor t under perm. A static int8 value is put on its grid unless the caller
  // knows it is there (`on_grid`).
  void define(uint32_t id, int32_t tensor, Perm perm, bool on_grid = false) {
    if (is_q8(value(id)) && !on_grid) tensor = to_grid(value(id), tensor);
    mapped_[id] = {tensor, std::move(perm)};
  }

  // Whether a node that only moves or selects values read them all from its output's grid.
  bool moves_on_grid(const Node& n) const {
    const Value& y = value(n.outputs[0]);
    for (const uint32_t in : n.inputs) {
      if (!same_grid(value(in), y)) return false;
    }
    return true;
  }

  // The node's fused output clamp as post-ops: none, a relu, or a clip.
  std::vector<cpu::PostOp> clamp_post_ops(const Node& n) const {
    if (!n.has_output_min_max) return {};
    const float lo = n.output_min, hi = n.output_max;
    if (lo == -kInf && hi == kInf) return {};
    cpu::PostOp p;
    if (lo == 0 && hi == kInf) {
      p.alg = EltwiseAlg::Relu;
    } else {
      p.alg = EltwiseAlg::Clip;
      p.alpha = lo;
      p.beta = hi;
    }
    return {p};
  }

  Error node(const Node& n) {
    switch (n.type) {
      case NodeType::Conv2d:
      case NodeType::DepthwiseConv2d:
        return conv(n);
      case NodeType::FullyConnected:
        return fully_connected(n);
      case NodeType::Convert:
        return convert(n);
      case NodeType::Add:
        return binary(n, BinaryAlg::Add);
      case NodeType::Multiply:
        return binary(n, BinaryAlg::Mul);
      case NodeType::Subtract:
        return binary(n, BinaryAlg::Sub);
      case NodeType::Div:
        return binary(n, BinaryAlg::Div);
      case NodeType::Minimum:
        return binary(n, BinaryAlg::Minimum);
      case NodeType::Maximum:
        return binary(n, BinaryAlg::Maximum);
      case NodeType::PReLU:
        return prelu(n);
      case NodeType::Abs:
        return unary(n, EltwiseAlg::Abs);
      case NodeType::Exp:
        return unary(n, EltwiseAlg::Exp);
      case NodeType::Log:
        return unary(n, EltwiseAlg::Log);
      case NodeType::Floor:
        return unary(n, EltwiseAlg::Floor);
      case NodeType::Ceiling:
        return unary(n, EltwiseAlg::Ceil);
      case NodeType::Sin:
        return unary(n, EltwiseAlg::Sin);
      case NodeType::Cos:
        return unary(n, EltwiseAlg::Cos);
      case NodeType::LeakyReLU:
        if (!std::isfinite(n.alpha)) return refuse("a slope of %g", static_cast<double>(n.alpha));
        return unary(n, EltwiseAlg::LeakyRelu, n.alpha);
      case NodeType::StaticResizeBilinear2D:
        return resize(n);
      case NodeType::Clamp:
        return clamp(n);
      case NodeType::Sigmoid:
        return unary(n, EltwiseAlg::Logistic);
      case NodeType::Tanh:
        return unary(n, EltwiseAlg::Tanh);
      case NodeType::Hardswish:
        return unary(n, EltwiseAlg::Hardswish);
      case NodeType::Gelu:
        return unary(n, EltwiseAlg::GeluErf);
      case NodeType::ELU:
        return unary(n, EltwiseAlg::Elu, n.alpha);
      case NodeType::Square:
        return unary(n, EltwiseAlg::Square);
      case NodeType::SquareRoot:
        return unary(n, EltwiseAlg::Sqrt);
      case NodeType::ReciprocalSquareRoot:
        return unary(n, EltwiseAlg::Rsqrt);
      case NodeType::Negate:
        return unary(n, EltwiseAlg::Neg);
      case NodeType::Softmax:
        return softmax(n);
      case NodeType::AvgPooling2d:
      case NodeType::MaxPooling2d:
        return pool(n);
      case NodeType::GlobalAvgPooling2d:
        return global_avg_pool(n);
      case NodeType::StaticTranspose:
        return transpose(n);
      case NodeType::StaticReshape:
        return reshape(n);
      case NodeType::Copy:
        return copy(n);
      case NodeType::Concatenate2:
      case NodeType::Concatenate3:
      case NodeType::Concatenate4:
      case NodeType::Concatenate5:
        return concat(n);
      case NodeType::StaticSlice:
        return slice(n);
      case NodeType::StaticConstantPad:
        return pad(n);
      case NodeType::BatchMatrixMultiply:
        return batch_matmul(n);
      default:
        return refuse("Ember's cpu engine has no translation of this node type");
    }
  }

  Error conv(const Node& n) {
    const Window& w = n.window;
    const Value& x = value(n.inputs[0]);
    const Value& f = value(n.inputs[1]);
    const Value& y = value(n.outputs[0]);
    if (!is_real(x) || !is_real(y)) {
      return refuse(
          "input %s and output %s; Ember runs convolutions of float32 and per-tensor "
          "int8 values",
          datatype_name(x.dtype), datatype_name(y.dtype));
    }
    if (x.dims.size() != 4 || f.dims.size() != 4 || y.dims.size() != 4) {
      return refuse("a 2-D convolution of rank-4 NHWC values, not ranks %zu, %zu, %zu",
                    x.dims.size(), f.dims.size(), y.dims.size());
    }
    if (f.constant == 0) return refuse("the filter (value %u) is not a constant", f.id);
    if (n.flags != 0) {
      return refuse("flags %u (TensorFlow SAME padding) are not supported", n.flags);
    }
    const bool depthwise = n.type == NodeType::DepthwiseConv2d;
    const int64_t groups = w.groups, gi = w.group_input_channels, go = w.group_output_channels;
    const int64_t kh = w.kernel_h, kw = w.kernel_w;
    // NHWC input [N, H, W, groups * gi]; filter OHWI [groups * go, kh, kw, gi], or a depthwise
    // one [1, kh, kw, groups * go] (gi = 1).
    const std::vector<int64_t> want_f = depthwise ? std::vector<int64_t>{1, kh, kw, groups * go}
                                                  : std::vector<int64_t>{groups * go, kh, kw, gi};
    if (groups < 1 || gi < 1 || go < 1 || (depthwise && gi != 1) || x.dims[3] != groups * gi ||
        f.dims != want_f || y.dims[3] != groups * go || w.stride_h < 1 || w.stride_w < 1 ||
        w.dilation_h < 1 || w.dilation_w < 1 || y.dims[0] != x.dims[0]) {
      return refuse(
          "inconsistent shapes: input %s, filter %s, output %s with %lld groups of %lld "
          "in and %lld out channels",
          dims_text(x.dims).c_str(), dims_text(f.dims).c_str(), dims_text(y.dims).c_str(),
          static_cast<long long>(groups), static_cast<long long>(gi), static_cast<long long>(go));
    }
    if (window_out(x.dims[1], w.pad_top, w.pad_bottom, kh, w.dilation_h, w.stride_h) != y.dims[1] ||
        window_out(x.dims[2], w.pad_left, w.pad_right, kw, w.dilation_w, w.stride_w) != y.dims[2]) {
      return refuse("output %s does not follow from input %s and the window",
                    dims_text(y.dims).c_str(), dims_text(x.dims).c_str());
    }
    EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
    cpu::ConvParams c;
    c.groups = groups;
    c.stride = {w.stride_h, w.stride_w};
    c.pad_l = {w.pad_top, w.pad_left};
    c.pad_r = {w.pad_bottom, w.pad_right};
    c.dilation = {w.dilation_h, w.dilation_w};
    c.output_padding = {0, 0};
    const int64_t oc = groups * go;
    const std::vector<int64_t> out_dims = engine_dims(y.dims, kNhwc);
    int32_t t;
    if (is_q8(x)) {
      // The integer convolution: an int8 filter (OIHW, its scales per output channel) of the
      // source's real values on its grid.
      EMBER_ASSIGN_OR_RETURN(const std::vector<float> scales,
                             weight_scales(f, oc, depthwise ? 3 : 0));
      EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> q, constant_bytes(f, 1));
      // OHWI (or 1HWO) bytes into OIHW.
      const int64_t ci = depthwise ? 1 : gi;
      std::vector<uint8_t> oihw(q.size());
      for (int64_t o = 0; o < oc; ++o) {
        for (int64_t h = 0; h < kh; ++h) {
          for (int64_t v = 0; v < kw; ++v) {
            for (int64_t i = 0; i < ci; ++i) {
              const int64_t from =
                  depthwise ? (h * kw + v) * oc + o : ((o * kh + h) * kw + v) * ci + i;
              oihw[((o * ci + i) * kh + h) * kw + v] = q[from];
            }
          }
        }
      }
      const int32_t weight =
          owned_weight("filter", std::move(oihw), {oc, ci, kh, kw}, cpu::WeightStorage::Int8);
      EMBER_ASSIGN_OR_RETURN(const int32_t bias, quant_bias(n.inputs[2], oc, x, scales));
      const int32_t scale_t = owned_floats("scales", scales, {oc});
      t = emit(OpKind::QuantConv, {src, weight, bias, scale_t}, cpu::QuantConvParams{c, grid_of(x)},
               out_dims, clamp_post_ops(n));
    } else {
      if (!is_real(f) || is_q8(f))
        return refuse("a float32 input with a %s filter", datatype_name(f.dtype));
      // The filter as PyTorch's OIHW.
      const Perm filter_perm = depthwise ? Perm{1, 2, 3, 0} : Perm{0, 2, 3, 1};
      EMBER_ASSIGN_OR_RETURN(const int32_t weight, held(f.id, filter_perm));
      EMBER_ASSIGN_OR_RETURN(const int32_t bias, float_bias(n.inputs[2], oc));
      t = emit(OpKind::Conv, {src, weight, bias}, c, out_dims, clamp_post_ops(n));
    }
    define(y.id, t, kNhwc);
    return Error::Ok;
  }

  static int64_t window_out(int64_t in, int64_t pa, int64_t pb, int64_t k, int64_t d, int64_t s) {
    const int64_t span = (k - 1) * d + 1;
    return in + pa + pb < span ? int64_t{-1} : (in + pa + pb - span) / s + 1;
  }

  static cpu::QuantParams grid_of(const Value& v) {
    return {v.quant.scale, static_cast<float>(v.quant.zero_point)};
  }

  // A float32 bias of `count` elements (kNoValue: none, -1).
  Result<int32_t> float_bias(uint32_t id, int64_t count) {
    if (id == kNoValue) return -1;
    const Value& b = value(id);
    if (b.constant == 0 || numel(b.dims) != count || !is_real(b) || is_q8(b)) {
      return refuse("the bias (value %u) is not a float32 constant of %lld elements", id,
                    static_cast<long long>(count));
    }
    EMBER_ASSIGN_OR_RETURN(int32_t t, held(b.id, identity(b.dims.size())));
    if (b.dims.size() != 1) {
      TensorDesc flat = out_.graph.tensors[t];
      flat.dims = {count};
      flat.dim_order.clear();
      t = add_tensor(std::move(flat));
    }
    return t;
  }

  // The float bias of an int8 node: XNNPACK adds int32 biases to the integer sums, on the grid
  // of scale input scale x weight scale (the bias's own scales, which the exporter writes so);
  // Ember adds their real values to the real sums. kNoValue: none, -1.
  Result<int32_t> quant_bias(uint32_t id, int64_t count, const Value& x,
                             const std::vector<float>& weight_scales) {
    if (id == kNoValue) return -1;
    const Value& b = value(id);
    if (is_float(b)) return float_bias(id, count);
    if ((b.dtype != Datatype::QInt32 && b.dtype != Datatype::QCInt32) || b.constant == 0 ||
        numel(b.dims) != count) {
      return refuse("the bias (value %u) is %s, not an int32 constant of %lld elements", id,
                    datatype_name(b.dtype), static_cast<long long>(count));
    }
    std::vector<float> scales;
    if (b.quant.kind == Quant::Kind::PerTensor) {
      if (b.quant.zero_point != 0) return refuse("the bias has a zero point");
      scales.assign(static_cast<size_t>(count), b.quant.scale);
    } else {
      EMBER_ASSIGN_OR_RETURN(scales, weight_scales_of(b, count, 0));
    }
    for (int64_t c = 0; c < count; ++c) {
      // The exporter's bias grid; anything else would be a different sum than XNNPACK's.
      const float want = x.quant.scale * weight_scales[c];
      if (std::fabs(scales[c] - want) > 1e-6f * std::fabs(want)) {
        return refuse("the bias's scale %g of channel %lld is not input scale x weight scale %g",
                      static_cast<double>(scales[c]), static_cast<long long>(c),
                      static_cast<double>(want));
      }
    }
    EMBER_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, constant_bytes(b, 4));
    std::vector<float> real(static_cast<size_t>(count));
    for (int64_t c = 0; c < count; ++c) {
      int32_t v;
      std::memcpy(&v, bytes.data() + 4 * c, 4);
      real[c] = static_cast<float>(v) * scales[c];
    }
    return owned_floats("bias", real, {count});
  }

  // A weight's scales, one per output channel along `channel_dim`: per channel, or one for all
  // (per tensor, zero point 0). Each finite and positive.
  Result<std::vector<float>> weight_scales(const Value& f, int64_t count, int channel_dim) {
    if (f.dtype == Datatype::QInt8 && f.quant.kind == Quant::Kind::PerTensor) {
      if (f.quant.zero_point != 0) return refuse("an int8 filter with a zero point");
      if (!std::isfinite(f.quant.scale) || !(f.quant.scale > 0)) return refuse("filter scale");
      return std::vector<float>(static_cast<size_t>(count), f.quant.scale);
    }
    if (f.dtype != Datatype::QCInt8 || f.quant.kind != Quant::Kind::PerChannel) {
      return refuse("the filter (value %u) is %s; int8 nodes take qcint8 or qint8 filters", f.id,
                    datatype_name(f.dtype));
    }
    return weight_scales_of(f, count, channel_dim);
  }

  // Per-channel (or per-group) scales of `v`: inline, or constant data (float32 per channel,
  // bf16 per group), `count` of them along `channel_dim`.
  Result<std::vector<float>> weight_scales_of(const Value& v, int64_t count, int channel_dim) {
    const Quant& q = v.quant;
    if (q.kind != Quant::Kind::PerChannel && q.kind != Quant::Kind::PerChannelGroup) {
      return refuse("value %u is not quantized per channel", v.id);
    }
    if (q.channel_dim != channel_dim) {
      return refuse("value %u is quantized along dim %d, expected %d", v.id, q.channel_dim,
                    channel_dim);
    }
    std::vector<float> s = q.scales;
    if (q.scale_constant != 0) {
      const bool bf16 = q.kind == Quant::Kind::PerChannelGroup;
      const Constant& c = p_.constants[q.scale_constant];
      if (c.size != static_cast<uint64_t>(q.num_scales) * (bf16 ? 2 : 4)) {
        return refuse("value %u's %u scales are %llu bytes", v.id, q.num_scales,
                      static_cast<unsigned long long>(c.size));
      }
      EMBER_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, bytes_of(q.scale_constant));
      s.resize(q.num_scales);
      for (size_t i = 0; i < s.size(); ++i) {
        if (bf16) {
          uint16_t h;
          std::memcpy(&h, bytes.data() + 2 * i, 2);
          const uint32_t bits = uint32_t{h} << 16;
          std::memcpy(&s[i], &bits, 4);
        } else {
          std::memcpy(&s[i], bytes.data() + 4 * i, 4);
        }
      }
    }
    if (static_cast<int64_t>(s.size()) != count) {
      return refuse("value %u has %zu scales, expected %lld", v.id, s.size(),
                    static_cast<long long>(count));
    }
    for (const float x : s) {
      if (!std::isfinite(x) || !(x > 0)) return refuse("value %u has a scale %g", v.id, double{x});
    }
    return s;
  }

  // The bytes of constant value `v`, checked to be `bytes_per_element` x its elements (int4:
  // pass 0, half a byte each).
  Result<std::vector<uint8_t>> constant_bytes(const Value& v, int bytes_per_element) {
    const int64_t n = numel(v.dims);
    const uint64_t want = bytes_per_element == 0 ? static_cast<uint64_t>((n + 1) / 2)
                                                 : static_cast<uint64_t>(n) * bytes_per_element;
    if (p_.constants[v.constant].size != want) {
      return refuse("constant value %u (%s, %s) has %llu bytes, expected %llu", v.id,
                    datatype_name(v.dtype), dims_text(v.dims).c_str(),
                    static_cast<unsigned long long>(p_.constants[v.constant].size),
                    static_cast<unsigned long long>(want));
    }
    return bytes_of(v.constant);
  }

  // Constant `index`'s bytes, wherever they are.
  Result<std::vector<uint8_t>> bytes_of(uint32_t index) {
    const Constant& c = p_.constants[index];
    if (c.is_inline) return c.inline_bytes;
    if (c.named_key.empty()) {
      const std::span<const uint8_t> b = p_.constant_data.subspan(c.offset, c.size);
      return std::vector<uint8_t>(b.begin(), b.end());
    }
    if (named_ == nullptr) {
      return refuse("constant %u is named data '%s', and the program has none", index,
                    c.named_key.c_str());
    }
    std::vector<uint8_t> out(c.size);
    if (Error e = named_->load_data_into(c.named_key, out.data(), out.size()); e != Error::Ok) {
      return refuse("constant %u ('%s'): %s", index, c.named_key.c_str(), last_error_message());
    }
    return out;
  }

  // A weight of bytes made here.
  int32_t owned_weight(const char* what, std::vector<uint8_t> bytes, std::vector<int64_t> dims,
                       cpu::WeightStorage storage) {
    const std::string key =
        "xnnpack/node" + std::to_string(node_) + "/" + what + std::to_string(made_++);
    out_.graph.weights.push_back({key, bytes.size()});
    out_.weights->add_owned(key, std::move(bytes));
    TensorDesc t;
    t.kind = TensorKind::Weight;
    t.index = static_cast<uint32_t>(out_.graph.weights.size() - 1);
    t.dims = std::move(dims);
    t.storage = storage;
    return add_tensor(std::move(t));
  }

  int32_t owned_floats(const char* what, const std::vector<float>& v, std::vector<int64_t> dims) {
    std::vector<uint8_t> bytes(v.size() * 4);
    if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
    return owned_weight(what, std::move(bytes), std::move(dims), cpu::WeightStorage::Float32);
  }

  Error fully_connected(const Node& n) {
    const Value& x = value(n.inputs[0]);
    const Value& f = value(n.inputs[1]);
    const Value& y = value(n.outputs[0]);
    const bool dynamic = x.dtype == Datatype::QDInt8;
    if ((!is_real(x) && !dynamic) || !is_real(y)) {
      return refuse(
          "input %s and output %s; Ember runs linear layers of float32, per-tensor "
          "int8 and dynamically quantized (qdint8) values",
          datatype_name(x.dtype), datatype_name(y.dtype));
    }
    if (f.dims.size() != 2 || f.constant == 0) {
      return refuse("the filter (value %u) is not a rank-2 constant", f.id);
    }
    if ((n.flags & ~1u) != 0) return refuse("flags %u are not supported", n.flags);
    const bool transposed = (n.flags & 1u) != 0;  // the filter is [K, N]
    const int64_t k = transposed ? f.dims[0] : f.dims[1];
    const int64_t nn = transposed ? f.dims[1] : f.dims[0];
    if (k < 1 || nn < 1 || x.dims.empty() || x.dims.back() != k || y.dims.empty() ||
        y.dims.back() != nn || numel(x.dims) / k != numel(y.dims) / nn) {
      return refuse("inconsistent shapes: input %s, filter %s%s, output %s",
                    dims_text(x.dims).c_str(), dims_text(f.dims).c_str(),
                    transposed ? " (transposed)" : "", dims_text(y.dims).c_str());
    }
    const int64_t m = numel(x.dims) / k;
    EMBER_ASSIGN_OR_RETURN(int32_t a, held(x.id, identity(x.dims.size())));
    if (x.dims.size() != 2) a = emit(OpKind::Reshape, {a}, cpu::NoParams{}, {m, k});
    int32_t t;
    if (dynamic) {
      EMBER_ASSIGN_OR_RETURN(t, dynamic_linear(n, a, f, m, k, nn, transposed));
    } else if (is_q8(x)) {
      if (transposed) return refuse("a transposed int8 filter");
      EMBER_ASSIGN_OR_RETURN(const std::vector<float> scales, weight_scales(f, nn, 0));
      EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> q, constant_bytes(f, 1));
      const int32_t weight =
          owned_weight("filter", std::move(q), {nn, k}, cpu::WeightStorage::Int8);
      EMBER_ASSIGN_OR_RETURN(const int32_t bias, quant_bias(n.inputs[2], nn, x, scales));
      const int32_t scale_t = owned_floats("scales", scales, {nn});
      t = emit(OpKind::QuantMatMul, {a, weight, bias, scale_t}, cpu::QuantMatMulParams{grid_of(x)},
               {m, nn}, clamp_post_ops(n));
    } else {
      if (!is_real(f) || is_q8(f)) {
        return refuse("a float32 input with a %s filter", datatype_name(f.dtype));
      }
      // The engine's matmul takes b as [K, N].
      EMBER_ASSIGN_OR_RETURN(const int32_t b, held(f.id, transposed ? Perm{0, 1} : Perm{1, 0}));
      EMBER_ASSIGN_OR_RETURN(const int32_t bias, float_bias(n.inputs[2], nn));
      t = emit(OpKind::MatMul, {a, b, bias}, cpu::MatMulParams{}, {m, nn}, clamp_post_ops(n));
    }
    if (is_q8(y)) t = to_grid(y, t);
    if (y.dims.size() != 2) t = emit(OpKind::Reshape, {t}, cpu::NoParams{}, y.dims);
    define(y.id, t, identity(y.dims.size()), /*on_grid=*/true);
    return Error::Ok;
  }

  // A linear layer of a dynamically quantized input (the exporter's Convert to qdint8: each row
  // quantized at run time, asymmetric int8) by int8 or int4 weights per channel or per block:
  // the engine's grouped linear, which quantizes each row (kernels/quant_gemm.h) and computes in
  // integers. `a` is the float input [m, k].
  Result<int32_t> dynamic_linear(const Node& n, int32_t a, const Value& f, int64_t m, int64_t k,
                                 int64_t nn, bool transposed) {
    if (transposed) return refuse("a transposed quantized filter");
    const Value& x = value(n.inputs[0]);
    if (x.quant.kind != Quant::Kind::PerToken || x.quant.num_nonbatch_dims != 1) {
      return refuse(
          "a dynamically quantized input with %d non-batch dims; Ember quantizes rows "
          "(1)",
          x.quant.num_nonbatch_dims);
    }
    int64_t group = k;
    std::vector<float> scales;
    std::vector<uint8_t> q;
    cpu::WeightStorage storage = cpu::WeightStorage::Int8;
    if (f.dtype == Datatype::QCInt8 && f.quant.kind == Quant::Kind::PerChannel) {
      EMBER_ASSIGN_OR_RETURN(scales, weight_scales_of(f, nn, 0));
      EMBER_ASSIGN_OR_RETURN(q, constant_bytes(f, 1));
    } else if ((f.dtype == Datatype::QCInt4 && f.quant.kind == Quant::Kind::PerChannel) ||
               (f.dtype == Datatype::QBInt4 && f.quant.kind == Quant::Kind::PerChannelGroup)) {
      if (k % 2 != 0)
        return refuse("an int4 filter of an odd row length %lld", static_cast<long long>(k));
      if (f.dtype == Datatype::QBInt4) {
        group = f.quant.group_size;
        if (group < 2 || k % group != 0) {
          return refuse("group size %lld does not divide %lld", static_cast<long long>(group),
                        static_cast<long long>(k));
        }
      }
      EMBER_ASSIGN_OR_RETURN(scales, weight_scales_of(f, nn * (k / group), 0));
      EMBER_ASSIGN_OR_RETURN(q, constant_bytes(f, 0));
      // XNNPACK's int4 are stored + 8 (0..15), two a byte, the lower first; the engine's are
      // two's complement nibbles in the same places.
      for (uint8_t& byte : q) byte ^= 0x88;
      storage = cpu::WeightStorage::Int4;
    } else {
      return refuse(
          "the filter (value %u) is %s; dynamically quantized linear layers take "
          "qcint8, qcint4 or qbint4 filters",
          f.id, datatype_name(f.dtype));
    }
    if (group < 2) return refuse("a row length of %lld", static_cast<long long>(k));
    const int32_t weight = owned_weight("filter", std::move(q), {nn, k}, storage);
    EMBER_ASSIGN_OR_RETURN(const int32_t bias, float_bias(n.inputs[2], nn));
    const int32_t scale_t = owned_floats("scales", scales, {nn, k / group});
    cpu::GroupQuantMatMulParams p;
    p.group = group;
    p.input_quant = cpu::InputQuant::PerToken;
    // XNNPACK sets no floor on a row's scale (torchao's float32 epsilon would flatten rows of
    // values near 1e-9 to zero); the smallest normal float only keeps 1 / scale finite.
    p.eps = std::numeric_limits<float>::min();
    return emit(OpKind::GroupQuantMatMul, {a, weight, bias, scale_t, -1}, p, {m, nn},
                clamp_post_ops(n));
  }

  // Between float32, static int8 and dynamically quantized values.
  Error convert(const Node& n) {
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    if (y.dtype == Datatype::QDInt8 && x.dtype == Datatype::Fp32 && !x.quantized()) {
      // Quantized where it is read: the linear layer quantizes its float input itself.
      if (!is_dynamic_reader_only(y.id)) {
        return refuse(
            "value %u, quantized at run time, is read by a node other than a linear layer's "
            "input (Ember runs dynamically quantized linear layers, not dynamically quantized "
            "convolutions: quantize convolutions statically, or leave them in float)",
            y.id);
      }
    }
    if (x.dims != y.dims) return refuse("a conversion that changes dims");
    if (n.has_output_min_max) return refuse("a fused output clamp");
    if (y.dtype == Datatype::QDInt8 && x.dtype == Datatype::Fp32 && !x.quantized()) {
      EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
      mapped_[y.id] = m;
      return Error::Ok;
    }
    EMBER_TRY(real_values(n));
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
    // To int8: rounded to the grid (define); to float32: the real values already held.
    define(y.id, m.tensor, m.perm, same_grid(x, y));
    return Error::Ok;
  }

  // Whether every node reading value `id` is a linear layer (as its input).
  bool is_dynamic_reader_only(uint32_t id) const {
    for (const Node& r : p_.nodes) {
      for (size_t k = 0; k < r.inputs.size(); ++k) {
        if (r.inputs[k] == id && (r.type != NodeType::FullyConnected || k != 0)) return false;
      }
    }
    for (const uint32_t o : p_.outputs) {
      if (o == id) return false;
    }
    return true;
  }

  // XNNPACK broadcasts as NumPy does (dims aligned at the end); the engine's Binary broadcasts b
  // to a, both of a's rank: the operand of the output's shape goes first, the other takes a's
  // rank and layout.
  Error binary(const Node& n, BinaryAlg alg) {
    EMBER_TRY(real_values(n));
    if (alg == BinaryAlg::Add && !n.has_output_min_max && fold_add(n)) return Error::Ok;
    const Value& y = value(n.outputs[0]);
    uint32_t a = n.inputs[0], b = n.inputs[1];
    for (const uint32_t id : {a, b}) EMBER_TRY(check_broadcast(value(id), y));
    // The first operand broadcast: swapped where the op commutes and the second has the output's
    // dims, else expanded to the output's dims (a x 1 for each element: a's values exactly, -0,
    // inf and NaN kept).
    bool expand_a = false;
    if (value(a).dims != y.dims) {
      const bool commutes = alg == BinaryAlg::Add || alg == BinaryAlg::Mul ||
                            alg == BinaryAlg::Minimum || alg == BinaryAlg::Maximum;
      if (commutes && value(b).dims == y.dims) {
        std::swap(a, b);
      } else {
        expand_a = true;
      }
    }
    Mapped ma;
    if (expand_a) {
      // In the layout b is held in where b has the output's dims.
      Perm perm = identity(y.dims.size());
      if (value(b).dims == y.dims) {
        EMBER_ASSIGN_OR_RETURN(const Mapped mb, any(b));
        perm = mb.perm;
      }
      const int64_t count = numel(y.dims);
      if (count > (int64_t{1} << 24)) {
        return refuse("the first operand %s is broadcast to %s elements, too many to expand",
                      dims_text(value(a).dims).c_str(), dims_text(y.dims).c_str());
      }
      const std::vector<int64_t> dims = engine_dims(y.dims, perm);
      const int32_t ones =
          owned_floats("ones", std::vector<float>(static_cast<size_t>(count), 1.0f), dims);
      EMBER_ASSIGN_OR_RETURN(const int32_t ta, broadcast_operand(a, y.dims.size(), perm));
      ma = {emit(OpKind::Binary, {ones, ta}, cpu::BinaryParams{BinaryAlg::Mul}, dims), perm};
    } else {
      EMBER_ASSIGN_OR_RETURN(ma, any(a));
    }
    EMBER_ASSIGN_OR_RETURN(const int32_t tb, broadcast_operand(b, y.dims.size(), ma.perm));
    const int32_t t = emit(OpKind::Binary, {ma.tensor, tb}, cpu::BinaryParams{alg},
                           engine_dims(y.dims, ma.perm), clamp_post_ops(n));
    define(y.id, t, ma.perm);
    return Error::Ok;
  }

  // Whether `v` broadcasts to `y` as NumPy does (dims aligned at the end, each 1 or equal).
  Error check_broadcast(const Value& v, const Value& y) const {
    if (v.dims.size() > y.dims.size()) return refuse("an operand of higher rank than the output");
    for (size_t i = 0; i < v.dims.size(); ++i) {
      const int64_t d = v.dims[i], o = y.dims[y.dims.size() - v.dims.size() + i];
      if (d != o && d != 1) {
        return refuse("operand %s does not broadcast to %s", dims_text(v.dims).c_str(),
                      dims_text(y.dims).c_str());
      }
    }
    return Error::Ok;
  }

  // PReLU: x where positive, else slope * x; XNNPACK's slope is one per channel (the innermost
  // dim of an NHWC value) or one for all.
  Error prelu(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& x = value(n.inputs[0]);
    const Value& slope = value(n.inputs[1]);
    const Value& y = value(n.outputs[0]);
    if (x.dims != y.dims || slope.constant == 0 || x.dims.empty()) {
      return refuse("a slope constant and an output of the input's dims");
    }
    const int64_t channels = x.dims.back();
    if (numel(slope.dims) != channels && numel(slope.dims) != 1) {
      return refuse("a slope of %lld elements for %lld channels",
                    static_cast<long long>(numel(slope.dims)), static_cast<long long>(channels));
    }
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
    // The slope as a constant of x's rank, along x's innermost dim, held as x is.
    EMBER_ASSIGN_OR_RETURN(int32_t s, held(slope.id, identity(slope.dims.size())));
    std::vector<int64_t> full(x.dims.size(), 1);
    full.back() = numel(slope.dims);
    TensorDesc w = out_.graph.tensors[s];
    if (w.kind != TensorKind::Weight || !w.dim_order.empty()) return refuse("the slope's layout");
    w.dims = engine_dims(full, m.perm);
    s = add_tensor(std::move(w));
    const int32_t t = emit(OpKind::Binary, {m.tensor, s}, cpu::BinaryParams{BinaryAlg::Prelu},
                           engine_dims(y.dims, m.perm), clamp_post_ops(n));
    define(y.id, t, m.perm);
    return Error::Ok;
  }

  // XNNPACK's bilinear resize of an NHWC value: ATen's upsample_bilinear2d, corners aligned
  // (flag 8) or half pixels (no flag); TensorFlow's legacy positions (flag 4) are refused.
  Error resize(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    if (x.dims.size() != 4 || y.dims.size() != 4 || y.dims[0] != x.dims[0] ||
        y.dims[3] != x.dims[3] || y.dims[1] != n.new_height || y.dims[2] != n.new_width) {
      return refuse("output %s of input %s resized to %u x %u", dims_text(y.dims).c_str(),
                    dims_text(x.dims).c_str(), n.new_height, n.new_width);
    }
    if ((n.flags & ~0x8u) != 0) return refuse("flags %u are not supported", n.flags);
    EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
    cpu::ResizeParams r;
    r.alg = cpu::ResizeAlg::Bilinear;
    r.align_corners = (n.flags & 0x8u) != 0;
    r.height = n.new_height;
    r.width = n.new_width;
    const int32_t t = emit(OpKind::Resize, {src}, r, engine_dims(y.dims, kNhwc), clamp_post_ops(n));
    define(y.id, t, kNhwc);
    return Error::Ok;
  }

  // Value `id` with leading 1s to `rank`, held under `perm`.
  Result<int32_t> broadcast_operand(uint32_t id, size_t rank, const Perm& perm) {
    const Value& v = value(id);
    if (v.dims.size() == rank) return held(id, perm);
    std::vector<int64_t> full(rank - v.dims.size(), 1);
    full.insert(full.end(), v.dims.begin(), v.dims.end());
    EMBER_ASSIGN_OR_RETURN(const int32_t plain, held(id, identity(v.dims.size())));
    const TensorDesc& src = out_.graph.tensors[plain];
    int32_t t;
    if (src.kind == TensorKind::Weight && src.dim_order.empty()) {
      TensorDesc w = src;
      w.dims = full;
      t = add_tensor(std::move(w));
    } else {
      t = emit(OpKind::Reshape, {plain}, cpu::NoParams{}, full);
    }
    if (perm == identity(rank)) return t;
    // Leading 1s: the permuted tensor's dims, with the same elements in the same order where only
    // dims of size 1 move; otherwise a Permute.
    std::vector<int64_t> q(rank);
    for (size_t k = 0; k < rank; ++k) q[perm[k]] = static_cast<int64_t>(k);
    std::vector<int64_t> dims(rank);
    for (size_t j = 0; j < rank; ++j) dims[j] = full[q[j]];
    if (out_.graph.tensors[t].kind == TensorKind::Weight && only_ones_move(full, q)) {
      TensorDesc w = out_.graph.tensors[t];
      w.dims = dims;
      return add_tensor(std::move(w));
    }
    return emit(OpKind::Permute, {t}, cpu::PermuteParams{q}, dims);
  }

  // Whether permuting `dims` by `q` keeps the order of the dims larger than 1 (the same bytes).
  static bool only_ones_move(const std::vector<int64_t>& dims, const std::vector<int64_t>& q) {
    int64_t last = -1;
    for (const int64_t j : q) {
      if (dims[j] == 1) continue;
      if (j < last) return false;
      last = j;
    }
    return true;
  }

  Error unary(const Node& n, EltwiseAlg alg, float alpha = 0, float beta = 0) {
    EMBER_TRY(real_values(n));
    EMBER_TRY(same_dims(n));
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(n.inputs[0]));
    const Value& y = value(n.outputs[0]);
    const int32_t t = emit(OpKind::Eltwise, {m.tensor}, cpu::EltwiseParams{alg, alpha, beta},
                           engine_dims(y.dims, m.perm), clamp_post_ops(n));
    define(y.id, t, m.perm);
    return Error::Ok;
  }

  Error clamp(const Node& n) {
    const float lo = n.has_output_min_max ? n.output_min : -kInf;
    const float hi = n.has_output_min_max ? n.output_max : kInf;
    if (!std::isnan(lo) && !std::isnan(hi) && lo <= hi && fold_clamp(n, lo, hi)) return Error::Ok;
    if (lo == 0 && hi == kInf) return unary(n, EltwiseAlg::Relu);
    if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
      return refuse("bounds [%g, %g]", static_cast<double>(lo), static_cast<double>(hi));
    }
    Node plain = n;
    plain.has_output_min_max = false;  // the bounds are the clip's own
    return unary(plain, EltwiseAlg::Clip, lo, hi);
  }

  // A clamp whose input, on the clamp's own output grid, is a quantized convolution's result
  // read by nothing else (ExecuTorch's quantized exports keep relu6 a node of its own): the clamp
  // joins the convolution's post-ops before its requantize, so that the engine can hand the
  // convolution's result on as uint8 (docs/quantization.md) instead of running a clamp, a
  // quantize and a dequantize. Exact: requantizing is non-decreasing, so a clamp of the
  // requantized value requantized again to the same grid, dq(q(clamp(dq(q(y)), lo, hi))) =
  // dq(clamp(q(y), q(lo), q(hi))), is the requantized clamp, dq(q(clamp(y, lo, hi))).
  bool fold_clamp(const Node& n, float lo, float hi) {
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    if (!same_grid(x, y) || x.dims != y.dims) return false;
    OpDesc* conv = requantizing_conv_of(x.id);
    if (conv == nullptr || !read_once_by(x.id, n)) return false;
    std::vector<cpu::PostOp>& post = conv->post_ops;
    cpu::PostOp c;
    if (lo == 0 && hi == kInf) {
      c.alg = EltwiseAlg::Relu;
    } else {
      c.alg = EltwiseAlg::Clip;
      c.alpha = lo;
      c.beta = hi;
    }
    post.insert(post.end() - 2, c);
    define(y.id, mapped_[x.id].tensor, mapped_[x.id].perm, /*on_grid=*/true);
    return true;
  }

  // Whether value `id` is read once, by node n, and is no output of the graph.
  bool read_once_by(uint32_t id, const Node& n) const {
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

  // The quantized convolution just emitted whose requantized result is value `id`, or null.
  OpDesc* requantizing_conv_of(uint32_t id) {
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

  // An int8 add of a quantized convolution's result, read by nothing else, and a value of the
  // same dims and layout (a residual connection): the add joins the convolution's post-ops, as
  // a sum after its requantize, then the add's clamp and requantize, the form in which the
  // engine adds a residual to a convolution's uint8 result (onednn/quant_conv.cc, add_tail)
  // and hands both on as uint8. The same float arithmetic: the requantized result plus the
  // residual, clamped, requantized.
  bool fold_add(const Node& n) {
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

  // An element-wise node's output has its input's dims.
  Error same_dims(const Node& n) const {
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    if (x.dims != y.dims) {
      return refuse("output %s, input %s", dims_text(y.dims).c_str(), dims_text(x.dims).c_str());
    }
    return Error::Ok;
  }

  Error softmax(const Node& n) {
    EMBER_TRY(real_values(n));
    EMBER_TRY(same_dims(n));
    if (n.has_output_min_max) return refuse("a fused output clamp");
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(n.inputs[0]));
    const Value& y = value(n.outputs[0]);
    // XNNPACK normalizes over the innermost dim.
    const int32_t t = emit(OpKind::Softmax, {m.tensor}, cpu::SoftmaxParams{m.perm.back()},
                           engine_dims(y.dims, m.perm));
    define(y.id, t, m.perm);
    return Error::Ok;
  }

  Error pool(const Node& n) {
    EMBER_TRY(real_values(n));
    const Window& w = n.window;
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    const bool is_max = n.type == NodeType::MaxPooling2d;
    if (x.dims.size() != 4 || y.dims.size() != 4) return refuse("pooling of rank-4 NHWC values");
    const uint32_t dh = is_max ? w.dilation_h : 1, dw = is_max ? w.dilation_w : 1;
    if (w.kernel_h < 1 || w.kernel_w < 1 || w.stride_h < 1 || w.stride_w < 1 || dh < 1 || dw < 1 ||
        y.dims[0] != x.dims[0] || y.dims[3] != x.dims[3]) {
      return refuse("inconsistent window or shapes");
    }
    // XNNPACK's flag 0x40 keeps dims; its absence would flatten, which the exporter never writes.
    if ((n.flags & ~0x40u) != 0) return refuse("flags %u are not supported", n.flags);
    if (window_out(x.dims[1], w.pad_top, w.pad_bottom, w.kernel_h, dh, w.stride_h) != y.dims[1] ||
        window_out(x.dims[2], w.pad_left, w.pad_right, w.kernel_w, dw, w.stride_w) != y.dims[2]) {
      return refuse("output %s does not follow from input %s and the window",
                    dims_text(y.dims).c_str(), dims_text(x.dims).c_str());
    }
    const bool padded = w.pad_top + w.pad_bottom + w.pad_left + w.pad_right != 0;
    cpu::PoolParams p;
    // XNNPACK's average pooling divides by the count of elements inside the input (padding
    // excluded), PyTorch's count_include_pad=False; without padding the two agree.
    p.alg = is_max ? cpu::PoolAlg::Max
                   : (padded ? cpu::PoolAlg::AvgExcludePad : cpu::PoolAlg::AvgIncludePad);
    p.kernel = {w.kernel_h, w.kernel_w};
    p.stride = {w.stride_h, w.stride_w};
    p.pad_l = {w.pad_top, w.pad_left};
    p.pad_r = {w.pad_bottom, w.pad_right};
    p.dilation = {dh, dw};
    EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
    const std::vector<cpu::PostOp> post = clamp_post_ops(n);
    const int32_t t = emit(OpKind::Pool, {src}, p, engine_dims(y.dims, kNhwc), post);
    define(y.id, t, kNhwc, is_max && post.empty() && moves_on_grid(n));
    return Error::Ok;
  }

  Error global_avg_pool(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    if (x.dims.size() != 4) return refuse("global pooling of a rank-%zu value", x.dims.size());
    const bool keep = (n.flags & 0x40u) != 0;
    if ((n.flags & ~0x40u) != 0) return refuse("flags %u are not supported", n.flags);
    const std::vector<int64_t> want = keep ? std::vector<int64_t>{x.dims[0], 1, 1, x.dims[3]}
                                           : std::vector<int64_t>{x.dims[0], x.dims[3]};
    if (y.dims != want)
      return refuse("output %s, expected %s", dims_text(y.dims).c_str(), dims_text(want).c_str());
    EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
    // A pooling over the whole plane: oneDNN's pooling reads the blocked layouts convolutions
    // write, where its reduction is several times slower (MobileNetV3's squeeze-and-excite).
    cpu::PoolParams p;
    p.alg = cpu::PoolAlg::AvgIncludePad;
    p.kernel = {x.dims[1], x.dims[2]};
    p.stride = {1, 1};
    p.pad_l = {0, 0};
    p.pad_r = {0, 0};
    p.dilation = {1, 1};
    int32_t t = emit(OpKind::Pool, {src}, p, {x.dims[0], x.dims[3], 1, 1}, clamp_post_ops(n));
    if (!keep) t = emit(OpKind::Reshape, {t}, cpu::NoParams{}, {x.dims[0], x.dims[3]});
    define(y.id, t, keep ? kNhwc : identity(2));
    return Error::Ok;
  }

  Error transpose(const Node& n) {
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    EMBER_TRY(real_values(n));
    const size_t r = x.dims.size();
    if (n.ints.size() != r || y.dims.size() != r) return refuse("a permutation of %zu dims", r);
    std::vector<bool> seen(r, false);
    for (size_t i = 0; i < r; ++i) {
      if (n.ints[i] >= r || seen[n.ints[i]] || y.dims[i] != x.dims[n.ints[i]]) {
        return refuse("not a permutation of the input's dims onto the output's");
      }
      seen[n.ints[i]] = true;
    }
    if (n.has_output_min_max) return refuse("a fused output clamp");
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
    // Output dim i is input dim ints[i], which is the tensor's dim m.perm[ints[i]]: no step.
    Perm p(r);
    for (size_t i = 0; i < r; ++i) p[i] = m.perm[n.ints[i]];
    define(y.id, m.tensor, std::move(p), moves_on_grid(n));
    return Error::Ok;
  }

  Error reshape(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    if (numel(x.dims) != numel(y.dims)) {
      return refuse("%s to %s changes the number of elements", dims_text(x.dims).c_str(),
                    dims_text(y.dims).c_str());
    }
    if (n.has_output_min_max) return refuse("a fused output clamp");
    EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, identity(x.dims.size())));
    const TensorDesc& s = out_.graph.tensors[src];
    int32_t t;
    if (s.kind == TensorKind::Weight && s.dim_order.empty()) {
      TensorDesc w = s;
      w.dims = y.dims;
      t = add_tensor(std::move(w));
    } else {
      t = emit(OpKind::Reshape, {src}, cpu::NoParams{}, y.dims);
    }
    define(y.id, t, identity(y.dims.size()), moves_on_grid(n));
    return Error::Ok;
  }

  Error copy(const Node& n) {
    EMBER_TRY(real_values(n));
    if (value(n.inputs[0]).dims != value(n.outputs[0]).dims) return refuse("a copy of new dims");
    if (n.has_output_min_max) return unary(n, EltwiseAlg::Clip, -kInf, kInf);
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(n.inputs[0]));
    define(n.outputs[0], m.tensor, m.perm, moves_on_grid(n));
    return Error::Ok;
  }

  Error concat(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& y = value(n.outputs[0]);
    const size_t r = y.dims.size();
    if (n.axis >= r) return refuse("axis %u of a rank-%zu output", n.axis, r);
    int64_t total = 0;
    for (const uint32_t id : n.inputs) {
      const Value& v = value(id);
      if (v.dims.size() != r) return refuse("inputs of different ranks");
      for (size_t d = 0; d < r; ++d) {
        if (d != n.axis && v.dims[d] != y.dims[d]) return refuse("inputs of different dims");
      }
      total += v.dims[n.axis];
    }
    if (total != y.dims[n.axis])
      return refuse("the output's dim %u is not the inputs' sum", n.axis);
    if (n.has_output_min_max) return refuse("a fused output clamp");
    EMBER_ASSIGN_OR_RETURN(const Mapped first, any(n.inputs[0]));
    std::vector<int32_t> srcs;
    for (const uint32_t id : n.inputs) {
      EMBER_ASSIGN_OR_RETURN(const int32_t t, held(id, first.perm));
      srcs.push_back(t);
    }
    const int32_t t = emit(OpKind::Concat, srcs, cpu::ConcatParams{first.perm[n.axis]},
                           engine_dims(y.dims, first.perm));
    define(y.id, t, first.perm, moves_on_grid(n));
    return Error::Ok;
  }

  Error slice(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    const size_t r = x.dims.size();
    if (n.ints.size() != r || n.ints2.size() != r || y.dims.size() != r) {
      return refuse("offsets and sizes for each of %zu dims", r);
    }
    for (size_t d = 0; d < r; ++d) {
      const int64_t off = n.ints[d], size = n.ints2[d];
      if (size != y.dims[d] || off + size > x.dims[d]) {
        return refuse("dim %zu: [%lld, +%lld) of %lld", d, static_cast<long long>(off),
                      static_cast<long long>(size), static_cast<long long>(x.dims[d]));
      }
    }
    if (n.has_output_min_max) return refuse("a fused output clamp");
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
    int32_t t = m.tensor;
    std::vector<int64_t> dims = out_.graph.tensors[t].dims;
    for (size_t d = 0; d < r; ++d) {
      if (n.ints2[d] == x.dims[d]) continue;
      const int64_t e = m.perm[d];
      dims[e] = n.ints2[d];
      t = emit(OpKind::Slice, {t}, cpu::SliceParams{e, n.ints[d]}, dims);
    }
    if (t == m.tensor) t = emit(OpKind::Reshape, {t}, cpu::NoParams{}, dims);  // a copy
    define(y.id, t, m.perm, moves_on_grid(n));
    return Error::Ok;
  }

  Error pad(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& x = value(n.inputs[0]);
    const Value& y = value(n.outputs[0]);
    const size_t r = x.dims.size();
    if (n.ints.size() != r || n.ints2.size() != r || y.dims.size() != r) {
      return refuse("paddings for each of %zu dims", r);
    }
    for (size_t d = 0; d < r; ++d) {
      if (x.dims[d] + n.ints[d] + n.ints2[d] != y.dims[d]) return refuse("dim %zu: bad padding", d);
    }
    if (n.has_output_min_max) return refuse("a fused output clamp");
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
    cpu::PadParams p;
    p.before.assign(r, 0);
    p.after.assign(r, 0);
    for (size_t d = 0; d < r; ++d) {
      p.before[m.perm[d]] = n.ints[d];
      p.after[m.perm[d]] = n.ints2[d];
    }
    p.value = n.alpha;
    const int32_t t = emit(OpKind::Pad, {m.tensor}, p, engine_dims(y.dims, m.perm));
    define(y.id, t, m.perm);
    return Error::Ok;
  }

  Error batch_matmul(const Node& n) {
    EMBER_TRY(real_values(n));
    const Value& a = value(n.inputs[0]);
    const Value& b = value(n.inputs[1]);
    const Value& y = value(n.outputs[0]);
    const size_t r = a.dims.size();
    if (r < 2 || b.dims.size() != r || y.dims.size() != r) {
      return refuse("operands of equal rank, at least 2");
    }
    if (n.flags != 0) return refuse("flags %u (a transposed operand) are not supported", n.flags);
    for (size_t d = 0; d + 2 < r; ++d) {
      if (a.dims[d] != b.dims[d] || y.dims[d] != a.dims[d]) {
        return refuse("broadcast batch dims are not supported");
      }
    }
    if (a.dims[r - 1] != b.dims[r - 2] || y.dims[r - 2] != a.dims[r - 2] ||
        y.dims[r - 1] != b.dims[r - 1]) {
      return refuse("inconsistent shapes %s x %s -> %s", dims_text(a.dims).c_str(),
                    dims_text(b.dims).c_str(), dims_text(y.dims).c_str());
    }
    EMBER_ASSIGN_OR_RETURN(const int32_t ta, held(a.id, identity(r)));
    EMBER_ASSIGN_OR_RETURN(const int32_t tb, held(b.id, identity(r)));
    const int32_t t =
        emit(OpKind::MatMul, {ta, tb, -1}, cpu::MatMulParams{}, y.dims, clamp_post_ops(n));
    define(y.id, t, identity(r));
    return Error::Ok;
  }

  static std::string dims_text(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i > 0) s += ", ";
      s += std::to_string(dims[i]);
    }
    return s + "]";
  }

  struct Alt {
    uint32_t id;
    Perm perm;
    int32_t tensor;
  };

  const Payload& p_;
  const NamedDataMap* named_;
  Translation out_;
  std::vector<Mapped> mapped_;
  std::vector<Alt> alt_;
  size_t node_ = 0;
  size_t node_first_op_ = 0;  // the first op the current node emits
  bool in_node_ = false;      // translating nodes_[node_] (else the delegate's inputs or outputs)
  int made_ = 0;              // weights made so far (their keys' numbers)
};

}  // namespace

Result<Translation> translate(const Payload& p, const NamedDataMap* named) {
  return Translator(p, named).run();
}

}  // namespace ember::xnn
