// Rows as the engine's dynamic batch (translate.h, Translation::lead). ExecuTorch writes a
// dynamic dim into the payload as its upper bound, and XNNPACK reshapes its runtime to each call's
// sizes. The engine builds a graph at fixed sizes, except its dynamic batch: dim 0 of the tensors
// that carry a symbol, built anew (sharing the packed weights) for each size a call brings. A
// payload whose every node computes row by row, over values that all share their leading dims
// (an LLM's linears: [1, S, K] by [N, K], S the sequence), is translated as [rows, last] values,
// rows = the product of the leading dims, and its rows made that batch: any call whose leading dims
// hold at most as many rows runs, where only the upper bounds did.
//
// Row by row: fully connected (a constant 2-D filter), conversions (to dynamic int8 by rows, the
// row being every dim but the last), element-wise ops of one input, binary ones of two values of
// the same dims or of a value and a constant broadcast over the rows, softmax over the last dim.
// Anything else keeps the static translation (and the runtime's refusal of other sizes).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/xnnpack/translate_internal.h"

namespace ember::xnn::detail {

namespace {

bool unary_type(NodeType t) {
  switch (t) {
    case NodeType::Abs:
    case NodeType::Exp:
    case NodeType::Log:
    case NodeType::Floor:
    case NodeType::Ceiling:
    case NodeType::Sin:
    case NodeType::Cos:
    case NodeType::LeakyReLU:
    case NodeType::Clamp:
    case NodeType::Sigmoid:
    case NodeType::Tanh:
    case NodeType::Hardswish:
    case NodeType::Gelu:
    case NodeType::ELU:
    case NodeType::Square:
    case NodeType::SquareRoot:
    case NodeType::ReciprocalSquareRoot:
    case NodeType::Negate:
    case NodeType::Copy:
    case NodeType::Convert:
    case NodeType::Softmax:
      return true;
    default:
      return false;
  }
}

bool binary_type(NodeType t) {
  switch (t) {
    case NodeType::Add:
    case NodeType::Multiply:
    case NodeType::Subtract:
    case NodeType::Div:
    case NodeType::Minimum:
    case NodeType::Maximum:
      return true;
    default:
      return false;
  }
}

// Every dim but the last.
std::vector<int64_t> leading(const Value& v) {
  return {v.dims.begin(), v.dims.end() - (v.dims.empty() ? 0 : 1)};
}

// A constant operand that is the same for every row: its dims, right-aligned with the output's,
// are 1 everywhere but the last.
bool same_for_every_row(const Value& c) {
  for (size_t d = 0; d + 1 < c.dims.size(); ++d) {
    if (c.dims[d] != 1) return false;
  }
  return true;
}

// The leading dims every non-constant value of `p` shares, if `p` computes row by row; else
// empty.
std::vector<int64_t> row_wise_leading_dims(const Payload& p) {
  std::vector<int64_t> lead;
  bool first = true;
  for (const Value& v : p.values) {
    if (v.constant != 0) continue;
    if (v.dims.size() < 2) return {};
    if (v.quant.kind == Quant::Kind::PerToken && v.quant.num_nonbatch_dims != 1) return {};
    if (v.quant.kind == Quant::Kind::PerChannel || v.quant.kind == Quant::Kind::PerChannelGroup) {
      return {};
    }
    std::vector<int64_t> l = leading(v);
    if (first) {
      lead = std::move(l);
      first = false;
    } else if (l != lead) {
      return {};
    }
  }
  if (first || p.inputs.empty()) return {};
  for (const Node& n : p.nodes) {
    auto is_value = [&](uint32_t id) { return id < p.values.size() && p.values[id].constant == 0; };
    if (n.outputs.size() != 1 || !is_value(n.outputs[0])) return {};
    if (n.type == NodeType::FullyConnected) {
      if (n.inputs.size() < 2 || !is_value(n.inputs[0]) || is_value(n.inputs[1]) ||
          p.values[n.inputs[1]].dims.size() != 2) {
        return {};
      }
      if (n.inputs.size() > 2 && n.inputs[2] != kNoValue && is_value(n.inputs[2])) return {};
    } else if (unary_type(n.type)) {
      if (n.inputs.size() != 1 || !is_value(n.inputs[0])) return {};
    } else if (binary_type(n.type)) {
      if (n.inputs.size() != 2) return {};
      for (const uint32_t id : n.inputs) {
        if (id >= p.values.size()) return {};
        const Value& v = p.values[id];
        if (v.constant != 0 ? !same_for_every_row(v) : v.dims != p.values[n.outputs[0]].dims) {
          return {};
        }
      }
    } else {
      return {};
    }
  }
  return lead;
}

// Engine ops whose parameters do not depend on the number of rows (none reshapes or slices).
bool batch_free(OpKind k) {
  switch (k) {
    case OpKind::MatMul:
    case OpKind::Eltwise:
    case OpKind::Binary:
    case OpKind::Softmax:
    case OpKind::QuantMatMul:
    case OpKind::GroupQuantMatMul:
      return true;
    default:
      return false;
  }
}

// Marks the tensors computed from the delegate's inputs (whose dim 0 is then the rows) as the
// dynamic batch; false where one of them is not [rows, ...] or an op's parameters would depend
// on the rows.
bool mark_rows(CpuGraph& g, int64_t rows) {
  std::vector<bool> batch(g.tensors.size(), false);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    batch[i] = g.tensors[i].kind == TensorKind::Input;
  }
  for (const OpDesc& op : g.ops) {
    bool any = false;
    for (const int32_t t : op.inputs) any = any || (t >= 0 && batch[static_cast<size_t>(t)]);
    for (const cpu::PostOp& post : op.post_ops) {
      any = any || (post.tensor >= 0 && batch[static_cast<size_t>(post.tensor)]);
    }
    if (!any) continue;
    if (!batch_free(op.kind) || op.output < 0) return false;
    batch[static_cast<size_t>(op.output)] = true;
  }
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (!batch[i]) continue;
    TensorDesc& t = g.tensors[i];
    if (t.dims.empty() || t.dims[0] != rows || !t.dim_order.empty()) return false;
    t.batch_symbol = 0;
  }
  for (const int32_t t : g.outputs) {
    if (!batch[static_cast<size_t>(t)]) return false;  // an output every call must compute
  }
  g.num_symbols = 1;
  return true;
}

}  // namespace

Result<Translation> translate_rows(const Payload& p, const NamedDataMap* named) {
  std::vector<int64_t> lead = row_wise_leading_dims(p);
  if (lead.empty()) return fail(Error::NotFound, "not row-wise");
  int64_t rows = 1;
  for (const int64_t d : lead) rows *= d;
  Payload flat = p;  // its constant data still views the blob
  for (Value& v : flat.values) {
    if (v.constant == 0) {
      v.dims = {rows, v.dims.back()};
    } else if (v.dims.size() >= 2 && same_for_every_row(v)) {
      v.dims = {1, v.dims.back()};  // a binary node's constant operand: broadcast over the rows
    }
  }
  Result<Translation> t = Translator(flat, named).run();
  if (!t.ok()) return t.error();
  if (!mark_rows(t->graph, rows)) return fail(Error::NotFound, "not row-wise");
  t->lead = std::move(lead);
  return t;
}

}  // namespace ember::xnn::detail
