// torchao's dynamic per-token quantization of a linear's input (8da4w, 8da8w), as the ATen ops
// its decomposition writes (torchao's choose_qparams_affine, quantize_affine and
// dequantize_affine, ASYMMETRIC, int8 in [-128, 127], a block of one row), recognized whole so the
// grouped linear that reads it computes it (docs/backends/cpu.md, "Quantized programs"):
//
//   mn = minimum(amin(x, -1), 0)    mx = maximum(amax(x, -1), 0)     (through full_like(., 0))
//   scale = clamp((mx - mn) / 255, min=eps)
//   zp = int8(clamp(-128 - round(mn / scale), -128, 127))
//   q = int8(clamp(round(x * (reciprocal(scale) * 1)) + zp, -128, 127))
//   y = (float(q) - float(zp)) * scale                                (the anchor: sub, mul)
//
// Reshapes between the ops are followed. Every intermediate is read only inside the chain.
#include <algorithm>
#include <set>

#include "backends/cpu/compile/internal.h"

namespace ember::cpu::internal {

using ir::DType;
using ir::Node;
using ir::Value;

namespace {

// Walks a chain backwards, collecting its nodes; fails (ok = false) at the first mismatch.
struct Walk {
  std::vector<const Node*> nodes;
  std::vector<std::pair<const Value*, double>> constants;
  bool ok = true;

  // v's producer through reshapes, when it is `op`; else a failed walk.
  const Node* producer(const Value* v, const char* op) {
    while (ok && v != nullptr && v->producer() != nullptr && is_reshape(*v->producer())) {
      nodes.push_back(v->producer());
      v = value_arg(*v->producer(), "self");
    }
    const Node* p = v == nullptr ? nullptr : v->producer();
    if (p == nullptr || p->op() != op) ok = false;
    if (ok) nodes.push_back(p);
    return ok ? p : nullptr;
  }
  // v through reshapes (the same data).
  const Value* root(const Value* v) {
    while (v != nullptr && v->producer() != nullptr && is_reshape(*v->producer())) {
      nodes.push_back(v->producer());
      v = value_arg(*v->producer(), "self");
    }
    return v;
  }
  // The same, where v is read by rows of k: the rows the chain quantizes are then runs of k
  // elements of its input in order (a reshape keeps the order), the rows the kernel reads.
  const Value* row_root(const Value* v) {
    if (v == nullptr || static_dims(*v).empty() || static_dims(*v).back() != k) ok = false;
    return root(v);
  }
  int64_t k = 0;  // the linear's input features
  // Argument `name` of n: the number `want`, or a 0-d constant the builder checks holds it.
  void number_arg(const Node* n, const char* name, double want) {
    if (!ok) return;
    const ir::Arg* a = n->arg(name);
    if (a != nullptr && a->kind() == ir::ArgKind::Value) {
      const Value* c = a->as_value();
      if (c->producer() != nullptr || c->tensor_type().rank() != 0) ok = false;
      constants.emplace_back(c, want);
      return;
    }
    const std::optional<double> got = number(*n, name, want + 1);
    if (!got || *got != want) ok = false;
  }
  void dtype_arg(const Node* n, DType want) {
    const ir::Arg* a = n == nullptr ? nullptr : n->arg("dtype");
    if (a == nullptr || a->kind() != ir::ArgKind::DType || a->as_dtype() != want) ok = false;
  }
  // min / max over the last dim of x, through full_like(., 0) and minimum / maximum.
  const Value* extreme(const Value* v, const char* outer, const char* reduce) {
    const Node* m = producer(v, outer);
    if (!ok) return nullptr;
    const Node* r = producer(value_arg(*m, "self"), reduce);
    const Node* zeros = producer(value_arg(*m, "other"), "aten::full_like");
    if (!ok || value_arg(*zeros, "self") != r->output()) ok = false;
    number_arg(zeros, "fill_value", 0);
    const auto dims = int_list(*r, "dim", 0, {});
    const Value* x = value_arg(*r, "self");
    const auto rank = x == nullptr ? 0 : static_cast<int64_t>(x->tensor_type().rank());
    if (!dims || dims->size() != 1 || ((*dims)[0] != -1 && (*dims)[0] != rank - 1) ||
        number(*r, "keepdim", 0).value_or(1) != 0) {
      ok = false;
    }
    const Value* rows = row_root(x);
    return ok ? rows : nullptr;
  }
  void clamp_int8(const Node* c) {
    number_arg(c, "min", -128);
    number_arg(c, "max", 127);
  }
};

}  // namespace

std::optional<ActivationChain> activation_chain(const Node& sub) {
  if (activation_dequantize_linear(sub) == nullptr) return std::nullopt;
  Walk w;
  w.k = static_dims(*value_arg(sub, "self")).back();  // activation_dequantize_linear: [..., K]
  ActivationChain chain;
  w.nodes.push_back(&sub);
  const Node* mul = sub.output()->users()[0];
  w.nodes.push_back(mul);
  const Value* scale_view =
      value_arg(*mul, "self") == sub.output() ? value_arg(*mul, "other") : value_arg(*mul, "self");
  // float(q) and float(zp): the copies of int8 tensors.
  const Node* q_float = w.producer(value_arg(sub, "self"), "aten::_to_copy");
  const Node* zp_float = w.producer(value_arg(sub, "other"), "aten::_to_copy");
  const Node* q = w.ok ? w.producer(value_arg(*q_float, "self"), "aten::_to_copy") : nullptr;
  const Node* zp = w.ok ? w.producer(value_arg(*zp_float, "self"), "aten::_to_copy") : nullptr;
  w.dtype_arg(q, DType::Int8);
  w.dtype_arg(zp, DType::Int8);
  // scale = clamp((mx - mn) / 255, min=eps)
  const Node* scale = w.ok ? w.producer(scale_view, "aten::clamp") : nullptr;
  const Node* div = w.ok ? w.producer(value_arg(*scale, "self"), "aten::div") : nullptr;
  if (w.ok) w.number_arg(div, "other", 255);
  const Node* range = w.ok ? w.producer(value_arg(*div, "self"), "aten::sub") : nullptr;
  const Value* x =
      w.ok ? w.extreme(value_arg(*range, "self"), "aten::maximum", "aten::amax") : nullptr;
  const Node* mn = w.ok ? value_arg(*range, "other")->producer() : nullptr;
  const Value* x2 =
      w.ok ? w.extreme(value_arg(*range, "other"), "aten::minimum", "aten::amin") : nullptr;
  // eps: a number (torchao's default, float32's smallest normal), no upper bound.
  const ir::Arg* max = w.ok ? scale->arg("max") : nullptr;
  if (w.ok && (x != x2 || number(*range, "alpha", 1).value_or(0) != 1 ||
               (max != nullptr && !max->is_none()) || !number(*scale, "min", -1) ||
               !(*number(*scale, "min", -1) >= 0))) {
    w.ok = false;
  }
  // zp = int8(clamp(-128 - round(mn / scale), -128, 127))
  const Node* zp_clamp = w.ok ? w.producer(value_arg(*zp, "self"), "aten::clamp") : nullptr;
  if (w.ok) w.clamp_int8(zp_clamp);
  const Node* zp_sub = w.ok ? w.producer(value_arg(*zp_clamp, "self"), "aten::sub") : nullptr;
  if (w.ok) w.number_arg(zp_sub, "self", -128);
  const Node* zp_round = w.ok ? w.producer(value_arg(*zp_sub, "other"), "aten::round") : nullptr;
  const Node* zp_div = w.ok ? w.producer(value_arg(*zp_round, "self"), "aten::div") : nullptr;
  if (w.ok && (value_arg(*zp_div, "self")->producer() != mn ||
               w.root(value_arg(*zp_div, "other")) != scale->output() ||
               number(*zp_sub, "alpha", 1).value_or(0) != 1)) {
    w.ok = false;
  }
  // q = int8(clamp(round(x * (reciprocal(scale) * 1)) + zp, -128, 127))
  const Node* q_clamp = w.ok ? w.producer(value_arg(*q, "self"), "aten::clamp") : nullptr;
  if (w.ok) w.clamp_int8(q_clamp);
  const Node* add = w.ok ? w.producer(value_arg(*q_clamp, "self"), "aten::add") : nullptr;
  const Node* q_round = w.ok ? w.producer(value_arg(*add, "self"), "aten::round") : nullptr;
  if (w.ok && (w.root(value_arg(*add, "other")) != zp->output() ||
               number(*add, "alpha", 1).value_or(0) != 1)) {
    w.ok = false;
  }
  const Node* scaled = w.ok ? w.producer(value_arg(*q_round, "self"), "aten::mul") : nullptr;
  const Node* inverse = w.ok ? w.producer(value_arg(*scaled, "other"), "aten::mul") : nullptr;
  if (w.ok) w.number_arg(inverse, "other", 1);
  const Node* reciprocal =
      w.ok ? w.producer(value_arg(*inverse, "self"), "aten::reciprocal") : nullptr;
  if (w.ok && (w.row_root(value_arg(*scaled, "self")) != x ||
               w.root(value_arg(*reciprocal, "self")) != scale->output())) {
    w.ok = false;
  }
  // Every value the chain makes is read only inside it (the anchor's result excepted), and the
  // zero point's and scale's copies read the same values as the quantization.
  if (!w.ok || w.root(value_arg(*zp_float, "self")) != zp->output()) return std::nullopt;
  std::set<const Node*> members(w.nodes.begin(), w.nodes.end());
  for (const Node* n : members) {
    if (n == mul) continue;
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const Value* out = n->output(i);
      if (out->is_graph_output()) return std::nullopt;
      for (const Node* user : out->users()) {
        if (members.count(user) == 0) return std::nullopt;
      }
    }
  }
  chain.nodes.assign(members.begin(), members.end());
  chain.x = const_cast<Value*>(x);
  chain.result = mul->output();
  chain.eps = *number(*scale, "min", 0);
  chain.constants = std::move(w.constants);
  return chain;
}

// The chain whose nodes include n: found from the subtractions a few users ahead.
std::optional<ActivationChain> activation_chain_of(const Node& n) {
  std::vector<const Node*> frontier = {&n};
  std::set<const Node*> seen;
  for (int depth = 0; depth < 24 && !frontier.empty(); ++depth) {
    std::vector<const Node*> next;
    for (const Node* at : frontier) {
      if (!seen.insert(at).second) continue;
      if (at->op() == "aten::sub") {
        if (auto chain = activation_chain(*at)) {
          if (std::find(chain->nodes.begin(), chain->nodes.end(), &n) != chain->nodes.end()) {
            return chain;
          }
        }
      }
      for (size_t i = 0; i < at->num_outputs(); ++i) {
        for (const Node* user : at->output(i)->users()) next.push_back(user);
      }
    }
    frontier = std::move(next);
  }
  return std::nullopt;
}

Why check_activation_quantize(const Node& n) {
  if (n.op() == "aten::sub" && !check_activation_dequantize(n)) return std::nullopt;
  if (activation_chain_of(n)) return std::nullopt;
  if (n.op() == "aten::sub") {
    // The backend has no float subtraction: it claims sub only inside that pattern.
    return "a subtraction; the cpu backend runs aten::sub only as part of a dynamically "
           "quantized activation (torchao's 8da) read by a grouped integer linear";
  }
  return "not part of a dynamically quantized activation (torchao's 8da) read by a grouped "
         "integer linear";
}

}  // namespace ember::cpu::internal
