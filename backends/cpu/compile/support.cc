// The cpu backend's support table: what it claims, op by op, and the reason for every node it
// leaves portable (exact or refused: contract C30).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/compile/internal.h"
#include "backends/cpu/cpu_compiler.h"
#include "backends/cpu/graph/graph_format.h"

namespace ember::cpu::internal {

using ir::Arg;
using ir::ArgKind;
using ir::DType;
using ir::Node;
using ir::Value;
using partition::OpRule;
using partition::OpSupportTable;

namespace {

// Every tensor the node reads or writes has static sizes but for a dynamic batch (dim 0 a bare
// symbol): the runtime half builds its primitives at init for the upper bounds, and again for
// each batch size a call brings, so every op is exact at every size. Any other dynamic size
// (a dynamic sequence length, a batch folded into another dim) stays portable.
// `reshape`: the node is a view or reshape, whose symbolic size arguments (a view to [batch, -1]
// reads sym_size) are taken where its output is a dynamic batch: the sizes of a build follow from
// its batch, so the value is not read.
Why all_static(const Node& n, bool reshape = false) {
  Why why;
  const bool sizes_follow_batch = reshape && n.num_outputs() == 1 && n.output()->is_tensor() &&
                                  is_dynamic_batch(n.output()->tensor_type());
  auto check = [&](const Value* v) {
    if (!why && !v->is_tensor() && !sizes_follow_batch) {
      why = "reads the symbolic size %" + v->name() +
            " (the cpu backend takes one only as a view's batch size)";
    }
    if (!why && v->is_tensor() && !v->tensor_type().is_static() &&
        !is_dynamic_batch(v->tensor_type())) {
      why = "dynamic shape on %" + v->name() + " (" + ir::to_string(v->type()) +
            "): the cpu backend takes a dynamic batch (dim 0) only";
    }
    // oneDNN takes no empty tensor (a zero-size batched matmul divides by zero inside it); the
    // portable kernels handle them. An empty dynamic batch is the runtime half's
    // (runtime/cpu_runtime.cc). Unused results are never computed (batch norm's empty statistics).
    const bool computed = v->producer() != &n || v->has_uses() || v == n.output(0);
    if (!why && v->is_tensor() && computed) {
      for (const ir::Dim& d : v->tensor_type().shape) {
        if (d.is_static() && d.value == 0) {
          why = "empty tensor %" + v->name() + " (" + ir::to_string(v->type()) +
                "): oneDNN takes none";
          break;
        }
      }
    }
  };
  for (const Value* v : n.operands()) check(v);
  for (size_t i = 0; i < n.num_outputs(); ++i) check(n.output(i));
  return why;
}

Why outputs_unused_from(const Node& n, size_t first, const char* what) {
  for (size_t i = first; i < n.num_outputs(); ++i) {
    if (n.output(i)->has_uses()) return std::string(what) + " output is used";
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Per-op checks beyond dtype and rank (the table's `extra`).

Why check_conv(const Node& n) {
  if (auto w = all_static(n)) return w;
  Value* in = value_arg(n, "input");
  Value* w = value_arg(n, "weight");
  if (in == nullptr || w == nullptr) return "input and weight must be tensors";
  const size_t rank = in->tensor_type().rank();
  if (rank < 3 || rank > 5) return "convolution of rank " + std::to_string(rank) + " input";
  const size_t r = rank - 2;
  for (const char* name : {"stride", "padding", "dilation", "output_padding"}) {
    if (!int_list(n, name, r, std::vector<int64_t>(r, 0)) ||
        int_list(n, name, r, std::vector<int64_t>(r, 0))->size() != r) {
      return std::string(name) + " is not a static list of " + std::to_string(r);
    }
  }
  if (!number(n, "groups", 1) || !number(n, "transposed", 0)) return "groups/transposed unknown";
  return std::nullopt;
}

Why check_batch_norm(const Node& n) {
  if (auto w = all_static(n)) return w;
  if (n.op() == "aten::native_batch_norm") {
    auto training = number(n, "training", 1);
    if (!training || *training != 0) return "batch norm in training mode";
  }
  if (value_arg(n, "running_mean") == nullptr || value_arg(n, "running_var") == nullptr) {
    return "batch norm without running statistics";
  }
  if (value_arg(n, "input")->tensor_type().rank() < 2) return "batch norm of rank < 2";
  return outputs_unused_from(n, 1, "batch norm statistics");
}

Why check_pool_common(const Node& n, size_t* r) {
  if (auto w = all_static(n)) return w;
  const size_t rank = value_arg(n, "self")->tensor_type().rank();
  if (rank != 4) return "pooling of a rank " + std::to_string(rank) + " input";
  *r = 2;
  for (const char* name : {"kernel_size", "stride", "padding", "dilation"}) {
    auto l = int_list(n, name, 2, {1, 1});
    if (!l || l->size() != 2) return std::string(name) + " is not a static list of 2";
  }
  return std::nullopt;
}

Why check_max_pool(const Node& n) {
  size_t r = 0;
  if (auto w = check_pool_common(n, &r)) return w;
  return outputs_unused_from(n, 1, "max pooling indices");
}

Why check_avg_pool(const Node& n) {
  size_t r = 0;
  if (auto w = check_pool_common(n, &r)) return w;
  auto ceil_mode = number(n, "ceil_mode", 0);
  if (!ceil_mode || *ceil_mode != 0) {
    return "avg_pool2d with ceil_mode (its divisor for clipped windows differs from oneDNN's)";
  }
  const Arg* div = n.arg("divisor_override");
  if (div != nullptr && !div->is_none()) return "avg_pool2d with divisor_override";
  return std::nullopt;
}

Why check_adaptive_avg_pool(const Node& n) {
  if (auto w = all_static(n)) return w;
  const auto in = static_dims(*value_arg(n, "self"));
  if (in.size() != 4) return "adaptive pooling of a rank " + std::to_string(in.size()) + " input";
  auto out = int_list(n, "output_size", 2, {});
  if (!out || out->size() != 2) return "output_size is not a static list of 2";
  for (size_t i = 0; i < 2; ++i) {
    if ((*out)[i] <= 0 || in[2 + i] % (*out)[i] != 0) {
      return "adaptive pooling whose windows differ in size (input not a multiple of output)";
    }
  }
  return std::nullopt;
}

// mean.dim and sum.dim_IntList: over H and W of NCHW a global pooling, over other dims a Reduce.
Why check_reduce(const Node& n) {
  if (auto w = all_static(n)) return w;
  const int64_t rank = static_cast<int64_t>(value_arg(n, "self")->tensor_type().rank());
  const auto dims = reduced_dims(n, rank);
  if (!dims) return "reduction dims are not static dims of the input";
  const std::vector<int64_t> sizes = static_dims(*value_arg(n, "self"));
  if (!is_global_pool_mean(n) &&
      std::all_of(dims->begin(), dims->end(), [&](int64_t d) { return sizes[d] == 1; })) {
    return "reduction over dims of size 1 only (oneDNN takes none)";
  }
  const Arg* dtype = n.arg("dtype");
  if (dtype != nullptr && !dtype->is_none()) return n.op() + " with a dtype";
  return std::nullopt;
}

// aten::pow.Tensor_Scalar with the exponents whose ATen result the backend computes exactly.
Why check_pow(const Node& n) {
  if (auto w = all_static(n)) return w;
  const Arg* e = n.arg("exponent");
  if (e == nullptr || (e->kind() != ArgKind::Int && e->kind() != ArgKind::Float)) {
    return "pow with a non-constant exponent";
  }
  const double x = e->kind() == ArgKind::Int ? double(e->as_int()) : e->as_float();
  if (x != 2 && x != 0.5 && x != -0.5) {
    return "pow with exponent " + std::to_string(x) + " (the cpu backend takes 2, 0.5 and -0.5)";
  }
  return std::nullopt;
}

Why check_slice(const Node& n) {
  if (auto w = all_static(n)) return w;
  auto p = slice_range(n);
  if (!p) return "slice with a step other than 1, or non-static bounds";
  if (p->dim == 0 && is_dynamic_batch(value_arg(n, "self")->tensor_type())) {
    return "slice of a dynamic batch dim";
  }
  return std::nullopt;
}

// A pad that crops (negative) or grows a dim by more than the blob holds stays portable.
Why check_pad(const Node& n) {
  if (auto w = all_static(n)) return w;
  const Value* in = value_arg(n, "self");
  if (in == nullptr) return "constant_pad_nd of a non-tensor";
  const size_t rank = in->tensor_type().rank();
  if (rank == 0) return "constant_pad_nd of a 0-d tensor";
  const auto p = pad_pairs(n, rank);
  if (!p) return "constant_pad_nd pads that are not a static list of pairs";
  for (size_t d = 0; d < rank; ++d) {
    if (p->before[d] < 0 || p->after[d] < 0) {
      return "constant_pad_nd with a negative pad (cropping): the cpu backend pads only";
    }
    if (p->before[d] > 4096 || p->after[d] > 4096) return "constant_pad_nd pad above 4096";
  }
  if ((p->before[0] != 0 || p->after[0] != 0) && is_dynamic_batch(in->tensor_type())) {
    return "constant_pad_nd of a dynamic batch dim";
  }
  if (!number(n, "value", 0)) return "constant_pad_nd value that is not a static number";
  return std::nullopt;
}

Why check_clone(const Node& n) {
  if (auto w = all_static(n)) return w;
  const Arg* f = n.arg("memory_format");
  if (f != nullptr && !f->is_none() && f->kind() == ArgKind::MemoryFormat &&
      f->as_text() == "channels_last") {
    return "clone to channels-last";
  }
  return std::nullopt;
}

Why check_binary(const Node& n) {
  if (auto w = all_static(n)) return w;
  Value* a = value_arg(n, "self");
  Value* b = value_arg(n, "other");
  if (a == nullptr || b == nullptr) return "scalar operand";
  const auto out = static_dims(*n.output());
  // One operand has the result's shape; the other broadcasts to it.
  const auto& full = static_dims(*a) == out ? *b : *a;
  if (static_dims(*a) != out && static_dims(*b) != out) return "both operands broadcast";
  const auto small = static_dims(full);
  if (small.size() > out.size()) return "operand of higher rank than the result";
  for (size_t i = 0; i < small.size(); ++i) {
    const int64_t o = out[out.size() - small.size() + i];
    if (small[i] != 1 && small[i] != o) return "operand does not broadcast";
  }
  return std::nullopt;
}

Why check_static(const Node& n) { return all_static(n); }

// sub.Tensor (alpha 1), div.Tensor, minimum, maximum: float32 operands, the first of the result's
// shape and the second broadcast to it (the engine's Binary; a first operand that broadcasts
// stays portable: these do not commute).
Why check_ordered_binary(const Node& n) {
  if (auto w = check_binary(n)) return w;
  for (const char* name : {"self", "other"}) {
    if (value_arg(n, name)->tensor_type().dtype != DType::Float32) {
      return n.op() + " of a non-float32 operand";
    }
  }
  if (static_dims(*value_arg(n, "self")) != static_dims(*n.output())) {
    return n.op() + " whose first operand broadcasts (the cpu backend broadcasts the second only)";
  }
  if (n.op() == "aten::sub") {
    const auto alpha = number(n, "alpha", 1);
    if (!alpha || *alpha != 1) return "sub with an alpha other than 1";
    // A partition holding it could not tell it from an int8 activation's dequantize whose casts
    // stay outside (Builder::lower reads the shape alone).
    if (activation_dequantize_linear(n, /*casts=*/false) != nullptr) {
      return "a subtraction shaped as an int8 activation's dequantize read by a grouped integer "
             "linear, of operands that are not int8 casts";
    }
  }
  return std::nullopt;
}

// A node of torchao's dynamically quantized activation (check_activation_quantize), with static
// sizes but a batch as every node the backend claims (all_static). Its reshapes of a dynamic
// batch read the batch's symbolic size (torch.export writes view(q, [sym_size(x, 0), k])), as
// any view of a batch may: without that, the int8 views stayed portable and split the chain
// between two partitions (an int8 partition input the builder refused). Each build of a dynamic
// batch quantizes the rows of its size, one by one, as the reference does.
Why check_static_activation_quantize(const Node& n) {
  if (auto w = all_static(n, /*reshape=*/is_reshape(n))) return w;
  return check_activation_quantize(n);
}

// The same node inside a dynamically quantized activation (static sizes but a batch), or else
// `check` (the op on its own).
std::function<Why(const Node&)> in_activation_quant_or(Why (*check)(const Node&)) {
  return [check](const Node& n) -> Why {
    if (!check_activation_quantize(n)) return all_static(n);
    return check(n);
  };
}

// upsample_bilinear2d and upsample_nearest2d (.default and .vec) of an NCHW float32 tensor to the
// output's static H and W. A scale factor is ATen's only where its 1 / scale is in / out in float
// (ATen computes the source positions with the scale where one is given); otherwise portable.
Why check_resize(const Node& n) {
  if (auto w = all_static(n)) return w;
  const Value* in = value_arg(n, "self") != nullptr ? value_arg(n, "self") : value_arg(n, "input");
  if (in == nullptr) return n.op() + " of a non-tensor";
  const std::vector<int64_t> sd = static_dims(*in), od = static_dims(*n.output());
  if (sd.size() != 4 || od.size() != 4) return n.op() + " of a tensor other than NCHW";
  for (size_t d = 2; d < 4; ++d) {
    if (od[d] < 1 || od[d] > (int64_t{1} << 20)) return n.op() + " to a size above 2^20";
  }
  const bool bilinear = n.op() == "aten::upsample_bilinear2d";
  if (bilinear) {
    const auto ac = number(n, "align_corners", 0);
    if (!ac) return "upsample_bilinear2d with a non-static align_corners";
    if (*ac != 0) return std::nullopt;  // the positions ignore any scale
  }
  std::optional<double> scales[2];
  if (n.overload() == "vec") {
    const ir::Arg* f = n.arg("scale_factors");
    if (f != nullptr && !f->is_none()) {
      if (f->kind() != ArgKind::List || f->as_list().size() != 2) {
        return n.op() + " scale_factors that are not a static list of 2";
      }
      for (size_t i = 0; i < 2; ++i) {
        const ir::Arg& a = f->as_list()[i];
        if (a.kind() != ArgKind::Float && a.kind() != ArgKind::Int) {
          return n.op() + " scale_factors that are not static numbers";
        }
        scales[i] = a.kind() == ArgKind::Float ? a.as_float() : double(a.as_int());
      }
    }
  } else {
    const char* names[2] = {"scales_h", "scales_w"};
    for (size_t i = 0; i < 2; ++i) {
      const ir::Arg* a = n.arg(names[i]);
      if (a == nullptr || a->is_none()) continue;
      scales[i] = number(n, names[i], 0);
      if (!scales[i]) return n.op() + " " + names[i] + " that is not a static number";
    }
  }
  for (size_t i = 0; i < 2; ++i) {
    const int64_t i_size = sd[2 + i], o_size = od[2 + i];
    if (!scales[i] || !(*scales[i] > 0) || i_size == o_size) continue;
    if (!bilinear && o_size == 2 * i_size) continue;  // ATen's nearest halves the index
    if (static_cast<float>(1.0 / *scales[i]) !=
        static_cast<float>(i_size) / static_cast<float>(o_size)) {
      return n.op() +
             " with a scale factor whose inverse is not in / out (ATen then computes "
             "its positions by the scale)";
    }
  }
  return std::nullopt;
}

// `check`, and int8 tensors only in torchao's per-token activation quantization.
std::function<Why(const Node&)> int8_only_in_activation_quant(Why (*check)(const Node&)) {
  return [check](const Node& n) -> Why {
    bool int8 = false;
    for (const ir::NamedArg& a : n.args()) {
      if (a.value.kind() == ArgKind::Value && a.value.as_value()->is_tensor()) {
        int8 = int8 || a.value.as_value()->tensor_type().dtype == DType::Int8;
      }
    }
    for (size_t i = 0; i < n.num_outputs(); ++i) {
      int8 = int8 || (n.output(i)->is_tensor() && n.output(i)->tensor_type().dtype == DType::Int8);
    }
    if (int8) return check_static_activation_quantize(n);
    return check(n);
  };
}

Why check_softmax(const Node& n) {
  if (auto w = all_static(n)) return w;
  auto h = number(n, "half_to_float", 0);
  if (!h || *h != 0) return "softmax with half_to_float";
  return std::nullopt;
}

Why check_layer_norm(const Node& n) {
  if (auto w = all_static(n)) return w;
  auto shape = int_list(n, "normalized_shape", 0, {});
  if (!shape || shape->size() != 1) return "layer norm over more than the last dim";
  // oneDNN 2.6's layer normalization takes tensors of rank 2 to 5 only (it refuses the
  // primitive at init otherwise).
  const size_t rank = value_arg(n, "input")->tensor_type().rank();
  if (rank < 2 || rank > 5) {
    return "layer norm of a rank " + std::to_string(rank) + " input (oneDNN takes ranks 2 to 5)";
  }
  return outputs_unused_from(n, 1, "layer norm statistics");
}

Why check_reshape_like(const Node& n) {
  if (auto w = all_static(n, /*reshape=*/true)) return w;
  if (n.op() == "aten::_reshape_alias") {
    // A reshape only when the strides are the contiguous ones of the new sizes.
    auto size = int_list(n, "size", 0, {});
    auto stride = int_list(n, "stride", 0, {});
    if (!size || !stride || size->size() != stride->size()) return "non-static reshape";
    int64_t expect = 1;
    for (size_t i = size->size(); i-- > 0;) {
      if ((*size)[i] != 1 && (*stride)[i] != expect) return "_reshape_alias with strides";
      expect *= (*size)[i];
    }
  }
  return std::nullopt;
}

}  // namespace

// A product over one element (K = 1, an outer product): ATen's result is the product itself,
// -0.0 for 0 * -x, where oneDNN's sum starts from +0.0 and gives +0.0 (a later division or atan2
// shows the sign: fuzzer seed 106352). The portable mm computes that product alone. `a` names the
// operand whose last dim is K.
Why check_depth(const Node& n, const char* a) {
  if (auto w = all_static(n)) return w;
  const Value* v = value_arg(n, a);
  if (v != nullptr && v->is_tensor() && v->tensor_type().rank() >= 1 &&
      static_dims(*v).back() == 1) {
    return "a matmul over one element (K = 1): oneDNN's sum of 0 * -x is +0.0, ATen's -0.0";
  }
  return std::nullopt;
}

const OpSupportTable& support_table() {
  static const OpSupportTable* table = [] {
    auto* t = new OpSupportTable("cpu", {DType::Float32}, kMaxCpuRank);
    const std::vector<DType> f32_i64 = {DType::Float32, DType::Int64};
    t->add({.op = "aten::convolution", .extra = check_conv});
    t->add({.op = "aten::native_batch_norm", .extra = check_batch_norm});
    t->add({.op = "aten::_native_batch_norm_legit_no_training", .extra = check_batch_norm});
    t->add({.op = "aten::addmm",
            .attrs = {{"beta", {1.0}}, {"alpha", {1.0}}},
            .extra = [](const Node& n) -> Why {
              if (auto w = check_depth(n, "mat1")) return w;
              Value* bias = value_arg(n, "self");
              if (bias == nullptr || bias->tensor_type().rank() > 2) return "addmm bias rank";
              const auto out = static_dims(*n.output());
              const auto b = static_dims(*bias);
              for (size_t i = 0; i < b.size(); ++i) {
                const int64_t o = out[out.size() - b.size() + i];
                if (b[i] != 1 && b[i] != o) return "addmm bias does not broadcast";
              }
              return std::nullopt;
            }});
    t->add({.op = "aten::mm", .extra = [](const Node& n) { return check_depth(n, "self"); }});
    t->add({.op = "aten::bmm", .extra = [](const Node& n) { return check_depth(n, "self"); }});
    t->add(
        {.op = "aten::max_pool2d_with_indices", .output_dtypes = f32_i64, .extra = check_max_pool});
    t->add({.op = "aten::avg_pool2d", .extra = check_avg_pool});
    t->add({.op = "aten::adaptive_avg_pool2d", .extra = check_adaptive_avg_pool});
    t->add({.op = "aten::_adaptive_avg_pool2d", .extra = check_adaptive_avg_pool});
    t->add({.op = "aten::mean", .overload = "dim", .extra = check_reduce});
    t->add({.op = "aten::sum", .overload = "dim_IntList", .extra = check_reduce});
    t->add({.op = "aten::pow", .overload = "Tensor_Scalar", .extra = check_pow});
    for (const char* op : {"aten::sqrt", "aten::rsqrt", "aten::neg"}) {
      t->add({.op = op, .overload = "default", .extra = check_static});
    }
    for (const char* op : {"aten::slice", "aten::slice_copy"}) {
      t->add({.op = op, .overload = "Tensor", .extra = check_slice});
    }
    for (const char* op : {"aten::select", "aten::select_copy"}) {
      t->add({.op = op, .overload = "int", .extra = check_slice});
    }
    t->add({.op = "aten::clone", .extra = check_clone});
    t->add({.op = "aten::constant_pad_nd", .extra = check_pad});
    // The condition a bool tensor (an input or a constant), the values float32; an attention
    // mask's masked_fill.
    t->add({.op = "aten::where",
            .overload = "self",
            .arg_dtypes = {{"condition", {DType::Bool}}},
            .extra = check_static});
    for (const char* op : {"aten::relu", "aten::sigmoid", "aten::silu", "aten::hardswish",
                           "aten::tanh", "aten::hardtanh"}) {
      t->add({.op = op, .overload = "default", .extra = check_static});
    }
    t->add({.op = "aten::gelu", .overload = "default", .extra = [](const Node& n) -> Why {
              if (auto w = all_static(n)) return w;
              const Arg* a = n.arg("approximate");
              if (a != nullptr && a->kind() == ArgKind::String && a->as_text() != "none" &&
                  a->as_text() != "tanh") {
                return "gelu approximate=" + a->as_text();
              }
              return std::nullopt;
            }});
    // C30: oneDNN's ELU has no scale or input_scale; only plain ELU (any alpha) is exact.
    t->add({.op = "aten::elu",
            .overload = "default",
            .attrs = {{"scale", {1.0}}, {"input_scale", {1.0}}},
            .extra = check_static});
    // An int8 operand only inside torchao's per-token quantization (compile/activation_quant.cc).
    t->add({.op = "aten::add",
            .overload = "Tensor",
            .dtypes = {DType::Float32, DType::Int8},
            .attrs = {{"alpha", {1.0}}},
            .extra = int8_only_in_activation_quant(check_binary)});
    t->add({.op = "aten::mul", .overload = "Tensor", .extra = check_binary});
    // In torchao's activation quantization these are its nodes (below); elsewhere the engine's
    // Binary (a NaN of either operand is minimum's and maximum's result, as ATen's).
    for (const auto& [op, overload] :
         {std::pair{"aten::div", "Tensor"}, std::pair{"aten::minimum", "default"},
          std::pair{"aten::maximum", "default"}}) {
      t->add(
          {.op = op, .overload = overload, .extra = in_activation_quant_or(check_ordered_binary)});
    }
    for (const char* op : {"aten::abs", "aten::exp", "aten::log", "aten::floor", "aten::ceil",
                           "aten::sin", "aten::cos"}) {
      t->add({.op = op, .overload = "default", .extra = check_static});
    }
    // round.default (halves to even) and reciprocal: also nodes of the activation quantization.
    for (const char* op : {"aten::round", "aten::reciprocal"}) {
      t->add({.op = op, .overload = "default", .extra = in_activation_quant_or(check_static)});
    }
    t->add({.op = "aten::leaky_relu", .overload = "default", .extra = [](const Node& n) -> Why {
              if (auto w = all_static(n)) return w;
              const auto slope = number(n, "negative_slope", 0.01);
              if (!slope || !std::isfinite(*slope)) return "leaky_relu with a non-static slope";
              return std::nullopt;
            }});
    for (const char* op : {"aten::upsample_bilinear2d", "aten::upsample_nearest2d"}) {
      for (const char* overload : {"default", "vec"}) {
        t->add({.op = op, .overload = overload, .extra = check_resize});
      }
    }
    t->add({.op = "aten::_softmax", .extra = check_softmax});
    t->add({.op = "aten::native_layer_norm", .extra = check_layer_norm});
    t->add({.op = "aten::cat", .extra = check_static});
    t->add({.op = "quantized_decomposed::quantize_per_tensor",
            .overload = "default",
            .output_dtypes = {DType::Int8},
            .extra = check_quantize});
    t->add({.op = "quantized_decomposed::dequantize_per_tensor",
            .overload = "default",
            .arg_dtypes = {{"input", {DType::Int8}}},
            .extra = check_dequantize});
    t->add({.op = "quantized_decomposed::dequantize_per_channel",
            .overload = "default",
            .arg_dtypes = {{"input", {DType::Int8}},
                           {"scales", {DType::Float32}},
                           {"zero_points", {DType::Int64, DType::Int32}}},
            .extra = check_dequantize});
    // torchao's dynamically quantized activation: its quantization (min, max, scale, zero point,
    // rounding) and dequantize, (float(q) - float(zero point)) * scale, only as the input of a
    // grouped integer linear (GroupQuantMatMul), which computes them (compile/activation_quant.cc).
    // Elsewhere a float subtraction (alpha 1): the engine's Binary.
    t->add({.op = "aten::sub",
            .overload = "Tensor",
            .arg_dtypes = {{"self", {DType::Float32, DType::Int64}}},
            .extra = in_activation_quant_or(check_ordered_binary)});
    for (const char* op :
         {"aten::amin", "aten::amax", "aten::full_like", "aten::minimum", "aten::maximum",
          "aten::div", "aten::clamp", "aten::round", "aten::reciprocal"}) {
      t->add({.op = op, .extra = check_static_activation_quantize});
    }
    t->add({.op = "aten::_to_copy",
            .dtypes = {DType::Float32, DType::Int8},
            .extra = check_static_activation_quantize});
    // PT2E's dynamically quantized activation (is_dynamic=True): its parameters, quantize and
    // dequantize, only as the input of linears by int8 weights (GroupQuantMatMul, per tensor),
    // which compute them (compile/quant_ops.cc, dynamic_chain).
    t->add({.op = "quantized_decomposed::choose_qparams",
            .overload = "tensor",
            .output_dtypes = {DType::Float64, DType::Int64},
            .extra = check_dynamic_quantize});
    t->add({.op = "quantized_decomposed::quantize_per_tensor",
            .overload = "tensor",
            .arg_dtypes = {{"scale", {DType::Float64}}, {"zero_point", {DType::Int64}}},
            .output_dtypes = {DType::Int8},
            .extra = check_dynamic_quantize});
    t->add({.op = "quantized_decomposed::dequantize_per_tensor",
            .overload = "tensor",
            .arg_dtypes = {{"input", {DType::Int8}},
                           {"scale", {DType::Float64}},
                           {"zero_point", {DType::Int64}}},
            .extra = check_dynamic_quantize});
    // int32 or int64 zero points only: PyTorch subtracts an int8 one in int8, wrapping around.
    t->add({.op = "quantized_decomposed::dequantize_per_channel_group",
            .overload = "default",
            .arg_dtypes = {{"input", {DType::Int8}},
                           {"scales", {DType::Float32}},
                           {"zero_points", {DType::Int64, DType::Int32}}},
            .extra = check_dequantize});
    for (const char* op :
         {"aten::view", "aten::view_copy", "aten::_unsafe_view", "aten::_reshape_alias",
          "aten::reshape", "aten::squeeze", "aten::unsqueeze", "aten::flatten", "aten::t",
          "aten::t_copy", "aten::permute", "aten::permute_copy", "aten::transpose"}) {
      t->add({.op = op,
              .dtypes = {DType::Float32, DType::Int8},
              .extra = int8_only_in_activation_quant(check_reshape_like)});
    }
    t->set_claimed_with(quantized_input_pattern);
    return t;
  }();
  return *table;
}

}  // namespace ember::cpu::internal

namespace ember::cpu {
namespace {

using internal::build_graph;
using internal::support_table;

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
      } else if (s.key == "fp32_winograd" || s.key == "ember_kernels" || s.key == "int8") {
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
    return build_graph(partition, precision);
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
