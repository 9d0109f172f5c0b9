// The cpu backend's reading of PyTorch's quantize and dequantize ops (docs/quantization.md):
// which of them it claims, their parameters, and the int8 weights behind a dequantize.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/compile/internal.h"

namespace ember::cpu::internal {

using ir::Arg;
using ir::ArgKind;
using ir::DType;
using ir::Node;
using ir::Value;

namespace {

bool is_op(const Node& n, const char* op) { return n.op() == op; }

// quant_min, quant_max and dtype: int8 over its whole range, the only grid the backend keeps for
// activations; a weight's integers may keep to a part of it ([-127, 127], symmetric).
Why int8_range(const Node& n, bool whole = true) {
  const Arg* dtype = n.arg("dtype");
  if (dtype == nullptr || dtype->kind() != ArgKind::DType || dtype->as_dtype() != DType::Int8) {
    return "quantizes to a dtype other than int8";
  }
  const double lo = number(n, "quant_min", 0).value_or(0),
               hi = number(n, "quant_max", 0).value_or(0);
  if (whole ? (lo != -128.0 || hi != 127.0) : (lo < -128.0 || hi > 127.0 || lo > hi)) {
    return "quantizes to a range other than int8's [-128, 127]";
  }
  return std::nullopt;
}

}  // namespace

std::optional<TensorQuant> int8_tensor_quant(const Node& n) {
  const Arg* scale = n.arg("scale");
  const Arg* zero_point = n.arg("zero_point");
  if (scale == nullptr || scale->kind() != ArgKind::Float || zero_point == nullptr ||
      zero_point->kind() != ArgKind::Int || int8_range(n)) {
    return std::nullopt;
  }
  const double s = scale->as_float();
  const int64_t zp = zero_point->as_int();
  // The reciprocal must be a finite float: PyTorch multiplies by (float)(1 / scale).
  if (!(s > 0) || !std::isfinite(static_cast<float>(1.0 / s)) ||
      !std::isfinite(static_cast<float>(s)) || zp < -128 || zp > 127) {
    return std::nullopt;
  }
  return TensorQuant{s, zp};
}

Why check_quantize(const Node& n) {
  if (auto w = int8_range(n)) return w;
  const std::optional<TensorQuant> q = int8_tensor_quant(n);
  if (!q) return "scale and zero point are not constants of int8's grid";
  if (n.output()->is_graph_output()) return "its int8 result is a program output";
  // Claimed with the dequantizes that read it: the int8 values never leave the backend.
  for (const Node* user : n.output()->users()) {
    const std::optional<TensorQuant> d = is_op(*user, "quantized_decomposed::dequantize_per_tensor")
                                             ? int8_tensor_quant(*user)
                                             : std::nullopt;
    if (!d || d->scale != q->scale || d->zero_point != q->zero_point) {
      return "its int8 result is read by " + user->describe() +
             ", not a dequantize of the same parameters";
    }
  }
  return std::nullopt;
}

Why check_dequantize(const Node& n) {
  Value* in = value_arg(n, "input");
  if (in == nullptr) return "input is not a tensor";
  const Node* producer = in->producer();
  if (auto w = int8_range(n, producer != nullptr)) return w;
  if (producer == nullptr) {
    // A constant int8 weight (the Builder checks that it is one, not a user input).
    if (is_op(n, "quantized_decomposed::dequantize_per_tensor")) {
      const Arg* scale = n.arg("scale");
      return scale != nullptr && scale->kind() == ArgKind::Float && scale->as_float() > 0
                 ? std::nullopt
                 : Why("a weight scale that is not a positive constant");
    }
    const bool grouped = is_op(n, "quantized_decomposed::dequantize_per_channel_group");
    const int64_t axis = static_cast<int64_t>(number(n, "axis", -1).value_or(-1));
    if (!grouped && axis != 0) return "a per-channel dequantize along axis " + std::to_string(axis);
    if (grouped) {
      const Arg* out = n.arg("output_dtype");
      if (out == nullptr || out->kind() != ArgKind::DType || out->as_dtype() != DType::Float32) {
        return "a grouped dequantize to a dtype other than float32";
      }
      if (number(n, "group_size", 0).value_or(0) < 2) return "a group size below 2";
    }
    if (value_arg(n, "scales") == nullptr || value_arg(n, "scales")->producer() != nullptr) {
      return "per-channel scales that are not constants";
    }
    Value* zps = value_arg(n, "zero_points");
    if (zps != nullptr && zps->producer() != nullptr) return "zero points that are not constants";
    return std::nullopt;
  }
  if (!is_op(*producer, "quantized_decomposed::quantize_per_tensor") ||
      !is_op(n, "quantized_decomposed::dequantize_per_tensor")) {
    return "dequantizes a result of " + producer->describe() + ", not of a quantize";
  }
  return check_quantize(*producer);
}

ir::StatusOr<QuantizedWeight> quantized_weight(const Node& n, const ir::Weight& data,
                                               const ir::Weight* scales,
                                               const ir::Weight* zero_points) {
  if (data.type.dtype != DType::Int8 || !data.type.is_static()) {
    return ir::Status::error("weight " + data.name + " is not a static int8 tensor");
  }
  QuantizedWeight w;
  for (const ir::Dim& d : data.type.shape) w.dims.push_back(d.value);
  const auto bytes = data.bytes();
  const int64_t channels = w.dims.empty() ? 1 : w.dims[0];
  const int64_t inner = channels == 0 ? 0 : static_cast<int64_t>(bytes.size()) / channels;
  if (is_op(n, "quantized_decomposed::dequantize_per_channel_group")) {
    // PyTorch's reference: a group larger than a row with one scale a row is the row.
    w.group = static_cast<int64_t>(number(n, "group_size", 0).value_or(0));
    if (w.group > inner && scales != nullptr && scales->type.rank() > 0 &&
        scales->type.shape.back().value == 1) {
      w.group = inner;
    }
    if (w.dims.size() != 2 || w.group < 2 || inner % w.group != 0) {
      return ir::Status::error("weight " + data.name + " is not [N, K] with K a multiple of the " +
                               "group size " + std::to_string(w.group));
    }
  }
  // One scale and zero point per channel, or per group of a row.
  const int64_t per = w.group > 0 ? w.group : std::max<int64_t>(inner, 1);
  const int64_t params = channels * (inner / per);
  if (is_op(n, "quantized_decomposed::dequantize_per_tensor")) {
    const Arg* scale = n.arg("scale");
    const Arg* zero_point = n.arg("zero_point");
    if (scale == nullptr || scale->kind() != ArgKind::Float || zero_point == nullptr ||
        zero_point->kind() != ArgKind::Int) {
      return ir::Status::error("dequantize parameters are not constants");
    }
    w.scales.assign(static_cast<size_t>(channels), static_cast<float>(scale->as_float()));
    w.zero_points.assign(static_cast<size_t>(channels), zero_point->as_int());
  } else {
    if (scales == nullptr || scales->type.dtype != DType::Float32 ||
        scales->bytes().size() != static_cast<size_t>(params) * sizeof(float)) {
      return ir::Status::error("scales of " + data.name +
                               " are not one float32 per output channel or group");
    }
    w.scales.resize(static_cast<size_t>(params));
    std::memcpy(w.scales.data(), scales->bytes().data(), scales->bytes().size());
    w.zero_points.assign(static_cast<size_t>(params), 0);
    std::vector<int64_t>& zeros = w.zero_points;
    if (zero_points != nullptr) {
      const auto z = zero_points->bytes();
      const size_t width = ir::dtype_size(zero_points->type.dtype);
      if ((zero_points->type.dtype != DType::Int64 && zero_points->type.dtype != DType::Int32) ||
          z.size() != static_cast<size_t>(params) * width) {
        return ir::Status::error("zero points of " + data.name +
                                 " are not one int32 or int64 per output channel or group");
      }
      for (int64_t c = 0; c < params; ++c) {
        int64_t v = 0;
        if (width == 8) {
          std::memcpy(&v, z.data() + c * 8, 8);
        } else {
          int32_t v32 = 0;
          std::memcpy(&v32, z.data() + c * 4, 4);
          v = v32;
        }
        zeros[static_cast<size_t>(c)] = v;
      }
    }
  }
  w.q.resize(bytes.size());
  w.dequantized.resize(bytes.size());
  const std::vector<int64_t>& zeros = w.zero_points;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < inner; ++i) {
      const size_t k = static_cast<size_t>(c * inner + i);
      const auto p = static_cast<size_t>(c * (inner / per) + i / per);
      w.q[k] = static_cast<float>(static_cast<int8_t>(bytes[k]));
      // PyTorch's dequantize: (q - zero_point) * scale, in float32 (the difference is exact).
      w.dequantized[k] = (w.q[k] - static_cast<float>(zeros[p])) * w.scales[p];
    }
  }
  return w;
}

namespace {

// A float32 copy of int8 values: _to_copy(int8 -> float32).
bool is_int8_cast(const Value* v) {
  const Node* p = v == nullptr ? nullptr : v->producer();
  if (p == nullptr || p->op() != "aten::_to_copy" || v->tensor_type().dtype != DType::Float32) {
    return false;
  }
  const Value* in = value_arg(*p, "self");
  return in != nullptr && in->is_tensor() && in->tensor_type().dtype == DType::Int8;
}

// v's one user, or null.
const Node* only_user(const Value* v) {
  return v->users().size() == 1 && !v->is_graph_output() ? v->users()[0] : nullptr;
}

}  // namespace

bool is_reshape(const Node& n) {
  return n.op() == "aten::view" || n.op() == "aten::view_copy" || n.op() == "aten::_unsafe_view" ||
         n.op() == "aten::reshape";
}

const Node* transposed_weight_dequantize(const Value* wt) {
  const Node* permute = wt == nullptr ? nullptr : wt->producer();
  if (permute == nullptr) return nullptr;
  const auto dims = int_list(*permute, "dims", 0, {});
  if (permute->op() != "aten::t" &&
      (permute->op() != "aten::permute" || dims != std::vector<int64_t>{1, 0})) {
    return nullptr;
  }
  const Value* w = value_arg(*permute, "self");
  const Node* dq = w == nullptr ? nullptr : w->producer();
  if (dq == nullptr || value_arg(*dq, "input") == nullptr ||
      value_arg(*dq, "input")->producer() != nullptr || check_dequantize(*dq)) {
    return nullptr;
  }
  return dq;
}

const Node* activation_dequantize_linear(const Node& sub, bool casts) {
  Value* q = value_arg(sub, "self");
  Value* zp = value_arg(sub, "other");
  const Node* mul = only_user(sub.output());
  if (q == nullptr || zp == nullptr || (casts && (!is_int8_cast(q) || !is_int8_cast(zp))) ||
      number(sub, "alpha", 1).value_or(0) != 1 || mul == nullptr || mul->op() != "aten::mul") {
    return nullptr;
  }
  Value* scale =
      value_arg(*mul, "self") == sub.output() ? value_arg(*mul, "other") : value_arg(*mul, "self");
  const std::vector<int64_t> dims = static_dims(*q);
  if (scale == nullptr || scale->tensor_type().dtype != DType::Float32 || dims.empty() ||
      static_dims(*sub.output()) != dims || static_dims(*mul->output()) != dims) {
    return nullptr;
  }
  std::vector<int64_t> per_row = dims;
  per_row.back() = 1;
  if (static_dims(*zp) != per_row || static_dims(*scale) != per_row) return nullptr;
  // Through reshapes that keep the rows (the last dim), to a linear's input.
  const Node* at = only_user(mul->output());
  const Value* x = mul->output();
  while (at != nullptr && is_reshape(*at)) {
    if (static_dims(*at->output()).empty() || static_dims(*at->output()).back() != dims.back()) {
      return nullptr;
    }
    x = at->output();
    at = only_user(x);
  }
  if (at == nullptr || (at->op() != "aten::addmm" && at->op() != "aten::mm")) return nullptr;
  if (value_arg(*at, at->op() == "aten::addmm" ? "mat1" : "self") != x) return nullptr;
  const Node* dq = transposed_weight_dequantize(value_arg(*at, "mat2"));
  if (dq == nullptr || dq->op() != "quantized_decomposed::dequantize_per_channel_group") {
    return nullptr;
  }
  return at;
}

Why check_activation_dequantize(const Node& sub) {
  if (activation_dequantize_linear(sub) == nullptr) {
    return "not the dequantize of an int8 activation read only by a linear by a grouped integer "
           "weight";
  }
  return std::nullopt;
}

namespace {

// v (through reshapes) is read only as the input of linears (addmm, mm) by the transpose of a
// dequantized constant int8 weight, at least one.
bool read_only_by_int8_linears(const Value* v) {
  if (v->is_graph_output() || v->users().empty()) return false;
  for (const Node* user : v->users()) {
    if (is_reshape(*user)) {
      if (!read_only_by_int8_linears(user->output())) return false;
      continue;
    }
    const bool addmm = user->op() == "aten::addmm";
    // (A per-channel weight is one group a row: rows of at least 2, GroupQuantMatMul's.)
    if ((!addmm && user->op() != "aten::mm") || value_arg(*user, addmm ? "mat1" : "self") != v ||
        (addmm && value_arg(*user, "self") == v) || static_dims(*v).size() != 2 ||
        static_dims(*v)[1] < 2) {
      return false;
    }
    const Node* dq = transposed_weight_dequantize(value_arg(*user, "mat2"));
    if (dq == nullptr || (dq->op() != "quantized_decomposed::dequantize_per_channel" &&
                          dq->op() != "quantized_decomposed::dequantize_per_tensor")) {
      return false;
    }
  }
  return true;
}

bool is_tensor_overload(const Node* n, const char* op) {
  return n != nullptr && n->op() == op && n->overload() == "tensor" && !int8_range(*n);
}

}  // namespace

std::optional<DynamicChain> dynamic_chain(const Node& dequantize) {
  if (!is_tensor_overload(&dequantize, "quantized_decomposed::dequantize_per_tensor")) {
    return std::nullopt;
  }
  const Arg* out_dtype = dequantize.arg("out_dtype");
  if (out_dtype != nullptr && !out_dtype->is_none() &&
      (out_dtype->kind() != ArgKind::DType || out_dtype->as_dtype() != DType::Float32)) {
    return std::nullopt;
  }
  Value* q = value_arg(dequantize, "input");
  Value* scale = value_arg(dequantize, "scale");
  Value* zero_point = value_arg(dequantize, "zero_point");
  const Node* quantize = q == nullptr ? nullptr : q->producer();
  const Node* choose = scale == nullptr ? nullptr : scale->producer();
  if (!is_tensor_overload(quantize, "quantized_decomposed::quantize_per_tensor") ||
      !is_tensor_overload(choose, "quantized_decomposed::choose_qparams") ||
      value_arg(*quantize, "scale") != scale || value_arg(*quantize, "zero_point") != zero_point ||
      choose->num_outputs() != 2 || choose->output(0) != scale || choose->output(1) != zero_point ||
      only_user(q) != &dequantize) {
    return std::nullopt;
  }
  // The float input, whole: its range is the whole tensor's (a dynamic batch too: the delegate
  // builds for each batch size it runs, so its steps see the call's rows). eps > 0: a zero
  // scale has no reciprocal (PyTorch's quantize raises on it).
  Value* x = value_arg(*quantize, "input");
  const std::optional<double> eps = number(*choose, "eps", -1);
  if (x == nullptr || value_arg(*choose, "input") != x ||
      x->tensor_type().dtype != DType::Float32 ||
      (!x->tensor_type().is_static() && !is_dynamic_batch(x->tensor_type())) || !eps ||
      !(*eps > 0)) {
    return std::nullopt;
  }
  // The parameters are read only by the pair.
  for (const Value* v : {scale, zero_point}) {
    if (v->is_graph_output()) return std::nullopt;
    for (const Node* user : v->users()) {
      if (user != quantize && user != &dequantize) return std::nullopt;
    }
  }
  if (!read_only_by_int8_linears(dequantize.output())) return std::nullopt;
  return DynamicChain{{choose, quantize, &dequantize}, x, dequantize.output(), *eps};
}

namespace {

// The dynamic chain n (its choose_qparams, quantize or dequantize) would belong to.
std::optional<DynamicChain> dynamic_chain_of(const Node& n) {
  const Node* dequantize = &n;
  if (n.op() == "quantized_decomposed::choose_qparams") {
    dequantize = nullptr;  // the one its scale's readers include (dynamic_chain checks)
    for (const Node* user : n.num_outputs() > 0 ? n.output(0)->users() : std::vector<Node*>{}) {
      if (user->op() == "quantized_decomposed::dequantize_per_tensor") dequantize = user;
    }
  } else if (n.op() == "quantized_decomposed::quantize_per_tensor") {
    dequantize = only_user(n.output());
  }
  return dequantize != nullptr ? dynamic_chain(*dequantize) : std::nullopt;
}

// The reshapes and linears that read v, through reshapes.
void add_readers(const Value* v, std::vector<const Node*>* out) {
  for (const Node* user : v->users()) {
    out->push_back(user);
    if (is_reshape(*user)) add_readers(user->output(), out);
  }
}

}  // namespace

Why check_dynamic_quantize(const Node& n) {
  if (dynamic_chain_of(n)) return std::nullopt;
  return "not PT2E's dynamic int8 quantization of an input (choose_qparams, quantize and "
         "dequantize per tensor) read only by linears by int8 weights";
}

std::vector<const Node*> quantized_input_pattern(const Node& n) {
  std::optional<DynamicChain> dynamic = dynamic_chain_of(n);
  std::optional<ActivationChain> per_token = dynamic ? std::nullopt : activation_chain_of(n);
  if (!dynamic && !per_token) return {};
  std::vector<const Node*> out = dynamic ? dynamic->nodes : per_token->nodes;
  add_readers(dynamic ? dynamic->result : per_token->result, &out);
  return out;
}

}  // namespace ember::cpu::internal
