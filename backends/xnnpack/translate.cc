// translate (translate.h): node by node, each XNNPACK node becomes the engine ops that compute it,
// each XNNPACK value an engine tensor under a permutation (Mapped). This file holds the weight
// table, the walk over inputs, nodes and outputs, refusals and the node dispatch; the Translator's
// other parts are in the files translate_internal.h names.
#include "backends/xnnpack/translate.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "backends/xnnpack/translate_internal.h"
#include "runtime/core/error.h"

namespace ember::xnn {

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

namespace detail {

Result<Translation> Translator::run() {
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

Error Translator::refuse(const char* format, ...) const {
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

Error Translator::check_rank(const Value& v, const char* what) const {
  if (v.dims.empty() || v.dims.size() > static_cast<size_t>(cpu::kMaxCpuRank)) {
    return fail(Error::NotSupported,
                "XNNPACK delegate: %s value %u has rank %zu; Ember's cpu "
                "engine takes ranks 1 to %d",
                what, v.id, v.dims.size(), cpu::kMaxCpuRank);
  }
  return Error::Ok;
}

Error Translator::check_boundary_grid(const Value& v, const char* what, size_t index) {
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

const char* Translator::quant_text(const Value& v) {
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

Error Translator::real_values(const Node& n) const {
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

Error Translator::node(const Node& n) {
  switch (n.type) {
    case NodeType::Conv2d:
    case NodeType::DepthwiseConv2d:
      return conv(n);
    case NodeType::ConvTranspose2d:
      return deconv(n);
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

}  // namespace detail

Result<Translation> translate(const Payload& p, const NamedDataMap* named) {
  if (Result<Translation> rows = detail::translate_rows(p, named); rows.ok()) return rows;
  return detail::Translator(p, named).run();
}

}  // namespace ember::xnn
