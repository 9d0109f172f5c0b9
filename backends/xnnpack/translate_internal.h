// What translate.cc and its parts share (internal to backends/xnnpack): the Translator, which
// walks a payload's nodes and writes the engine's steps, each XNNPACK value an engine tensor under
// a permutation (Mapped). Its members are defined by responsibility, in the files named below.
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/xnnpack/payload.h"
#include "backends/xnnpack/translate.h"
#include "runtime/core/error.h"
#include "runtime/executor/named_data_map.h"

namespace ember::xnn::detail {

using cpu::BinaryAlg;
using cpu::CpuGraph;
using cpu::EltwiseAlg;
using cpu::OpDesc;
using cpu::OpKind;
using cpu::TensorDesc;
using cpu::TensorKind;

using Perm = std::vector<int64_t>;  // XNNPACK dim i is the engine tensor's dim perm[i]

inline Perm identity(size_t rank) {
  Perm p(rank);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

inline const Perm kNhwc = {0, 2, 3, 1};  // an NHWC value held as an NCHW tensor

// An XNNPACK value as the engine holds it.
struct Mapped {
  int32_t tensor = -1;
  Perm perm;  // empty: not yet mapped
};

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// translate_rows.cc: `p` translated over [rows, last dim] values with its rows the engine's
// dynamic batch, where it computes row by row (Translation::lead); an error otherwise (then the
// static translation applies).
Result<Translation> translate_rows(const Payload& p, const NamedDataMap* named);

class Translator {
 public:
  Translator(const Payload& p, const NamedDataMap* named)
      : p_(p), named_(named), mapped_(p.values.size()) {
    out_.weights = std::make_unique<WeightTable>();
    out_.weights->set_named(named);
  }

  Result<Translation> run();

 private:
  const Value& value(uint32_t id) const { return p_.values[id]; }

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

  static bool same_grid(const Value& a, const Value& b) {
    return is_q8(a) && is_q8(b) && a.quant.scale == b.quant.scale &&
           a.quant.zero_point == b.quant.zero_point;
  }

  static cpu::QuantParams grid_of(const Value& v) {
    return {v.quant.scale, static_cast<float>(v.quant.zero_point)};
  }

  // translate.cc: refusals and checks, the node dispatch.

  // Refusals name the node being translated, if any.
  [[gnu::format(printf, 2, 3)]] Error refuse(const char* format, ...) const;

  Error check_rank(const Value& v, const char* what) const;

  // An int8 delegate input or output is converted at the boundary with its scale and zero
  // point: a grid the conversion can compute (a finite positive scale, a zero point in int8).
  static Error check_boundary_grid(const Value& v, const char* what, size_t index);

  static const char* quant_text(const Value& v);

  // Real values, checked per node: every input and output of a node that computes on floats
  // (float32 values, or static int8 values as their real values).
  Error real_values(const Node& n) const;

  Error node(const Node& n);

  // translate_values.cc: engine tensors, constants and weights, layouts.

  int32_t add_tensor(TensorDesc t);

  int32_t intermediate(std::vector<int64_t> dims);

  // A weight tensor of constant `v`'s bytes (in place: the payload's constant data, the named
  // data or a .ptd; inline bytes copied), of `storage`, its dims the value's.
  int32_t constant_weight(const Value& v, cpu::WeightStorage storage);

  // An op writing a new tensor of `dims`, then `post` (fused where the op takes post-ops, else
  // each its own element-wise step); returns the last tensor written.
  int32_t emit(OpKind kind, std::vector<int32_t> inputs, cpu::OpParams params,
               std::vector<int64_t> dims, std::vector<cpu::PostOp> post = {});

  // The engine tensor of a constant, its dims the value's (made once).
  Result<int32_t> constant(const Value& v);
  // The engine tensor of an int8 constant (a quantized filter), its bytes read in place, under
  // `want` (as held()).
  Result<int32_t> int8_constant(const Value& v, const Perm& want);

  // The elements of float constant `v` as float32 (fp16 and bf16 widened exactly), in its order.
  Result<std::vector<float>> float_values(const Value& v);

  // The engine tensor holding value `id` under `want` (XNNPACK dim i = the tensor's dim want[i]):
  // the value's own when it is so held, a re-described weight, or a Permute of it.
  Result<int32_t> as_perm(uint32_t id, const Perm& want);

  // As as_perm, reusing a Permute made before for the same value and layout.
  Result<int32_t> held(uint32_t id, const Perm& want);

  // The engine tensor of `id` in whatever layout it is held, with that layout.
  Result<Mapped> any(uint32_t id);

  // The engine dims of XNNPACK dims `dims` held under `perm`.
  static std::vector<int64_t> engine_dims(const std::vector<int64_t>& dims, const Perm& perm);

  // Value `id` with leading 1s to `rank`, held under `perm`.
  Result<int32_t> broadcast_operand(uint32_t id, size_t rank, const Perm& perm);

  // Whether permuting `dims` by `q` keeps the order of the dims larger than 1 (the same bytes).
  static bool only_ones_move(const std::vector<int64_t>& dims, const std::vector<int64_t>& q);

  // Value `id` is tensor t under perm. A static int8 value is put on its grid unless the caller
  // knows it is there (`on_grid`).
  void define(uint32_t id, int32_t tensor, Perm perm, bool on_grid = false);

  // Whether a node that only moves or selects values read them all from its output's grid.
  bool moves_on_grid(const Node& n) const;

  // The bytes of constant value `v`, checked to be `bytes_per_element` x its elements (int4:
  // pass 0, half a byte each).
  Result<std::vector<uint8_t>> constant_bytes(const Value& v, int bytes_per_element);

  // Constant `index`'s bytes, wherever they are.
  Result<std::vector<uint8_t>> bytes_of(uint32_t index);

  // A weight of bytes made here.
  int32_t owned_weight(const char* what, std::vector<uint8_t> bytes, std::vector<int64_t> dims,
                       cpu::WeightStorage storage);

  int32_t owned_floats(const char* what, const std::vector<float>& v, std::vector<int64_t> dims);

  // An element-wise node's output has its input's dims.
  Error same_dims(const Node& n) const;

  // Whether `v` broadcasts to `y` as NumPy does (dims aligned at the end, each 1 or equal).
  Error check_broadcast(const Value& v, const Value& y) const;

  static std::string dims_text(const std::vector<int64_t>& dims);

  // translate_fold.cc: post-ops, requantization, folding into quantized convolutions.

  // Whether the engine fuses post-ops into ops of `kind` (graph_verify.cc's rule).
  static bool takes_post_ops(OpKind kind);

  // Post-ops as element-wise steps after t.
  int32_t apply_post_ops(int32_t t, const std::vector<cpu::PostOp>& post);

  // Rounds tensor t to value y's int8 grid, as XNNPACK's requantization does (to nearest, ties
  // to even, saturated to [-128, 127]), keeping real values: a quantize and a dequantize, fused
  // into the op this node emitted when it takes post-ops.
  int32_t to_grid(const Value& y, int32_t t);

  // The node's fused output clamp as post-ops: none, a relu, or a clip.
  std::vector<cpu::PostOp> clamp_post_ops(const Node& n) const;

  // A clamp whose input, on the clamp's own output grid, is a quantized convolution's result
  // read by nothing else (ExecuTorch's quantized exports keep relu6 a node of its own): the clamp
  // joins the convolution's post-ops before its requantize, so that the engine can hand the
  // convolution's result on as uint8 (docs/quantization.md) instead of running a clamp, a
  // quantize and a dequantize. Exact: requantizing is non-decreasing, so a clamp of the
  // requantized value requantized again to the same grid, dq(q(clamp(dq(q(y)), lo, hi))) =
  // dq(clamp(q(y), q(lo), q(hi))), is the requantized clamp, dq(q(clamp(y, lo, hi))).
  bool fold_clamp(const Node& n, float lo, float hi);

  // Whether value `id` is read once, by node n, and is no output of the graph.
  bool read_once_by(uint32_t id, const Node& n) const;

  // The quantized convolution just emitted whose requantized result is value `id`, or null.
  OpDesc* requantizing_conv_of(uint32_t id);

  // An int8 add of a quantized convolution's result, read by nothing else, and a value of the
  // same dims and layout (a residual connection): the add joins the convolution's post-ops, as
  // a sum after its requantize, then the add's clamp and requantize, the form in which the
  // engine adds a residual to a convolution's uint8 result (onednn/quant_conv.cc, add_tail)
  // and hands both on as uint8. The same float arithmetic: the requantized result plus the
  // residual, clamped, requantized.
  bool fold_add(const Node& n);

  // translate_conv.cc: convolutions and linear layers.

  Error conv(const Node& n);

  // XNNPACK's deconvolution (ConvTranspose2d): PyTorch's conv_transpose2d of an NHWC value, the
  // engine's transposed Conv. Float values only: the engine's QuantConv has no transposed form.
  Error deconv(const Node& n);

  static int64_t window_out(int64_t in, int64_t pa, int64_t pb, int64_t k, int64_t d, int64_t s);

  // A float32 bias of `count` elements (kNoValue: none, -1).
  Result<int32_t> float_bias(uint32_t id, int64_t count);

  Error fully_connected(const Node& n);

  Error batch_matmul(const Node& n);

  // translate_quant.cc: quantized constants, dynamically quantized linear layers, conversions.

  // The float bias of an int8 node: XNNPACK adds int32 biases to the integer sums, on the grid
  // of scale input scale x weight scale (the bias's own scales, which the exporter writes so);
  // Ember adds their real values to the real sums. kNoValue: none, -1.
  Result<int32_t> quant_bias(uint32_t id, int64_t count, const Value& x,
                             const std::vector<float>& weight_scales);

  // A weight's scales, one per output channel along `channel_dim`: per channel, or one for all
  // (per tensor, zero point 0). Each finite and positive.
  Result<std::vector<float>> weight_scales(const Value& f, int64_t count, int channel_dim);

  // Per-channel (or per-group) scales of `v`: inline, or constant data (float32 per channel,
  // bf16 per group), `count` of them along `channel_dim`.
  Result<std::vector<float>> weight_scales_of(const Value& v, int64_t count, int channel_dim);

  // A linear layer of a dynamically quantized input (the exporter's Convert to qdint8: each row
  // quantized at run time, asymmetric int8) by int8 or int4 weights per channel or per block:
  // the engine's grouped linear, which quantizes each row (kernels/quant_gemm.h) and computes in
  // integers. `a` is the float input [m, k].
  Result<int32_t> dynamic_linear(const Node& n, int32_t a, const Value& f, int64_t m, int64_t k,
                                 int64_t nn, bool transposed);

  // Between float32, static int8 and dynamically quantized values.
  Error convert(const Node& n);

  // Whether every node reading value `id` is a linear layer (as its input).
  bool is_dynamic_reader_only(uint32_t id) const;

  // translate_nodes.cc: element-wise, pooling, resizing and data-movement nodes.

  // XNNPACK broadcasts as NumPy does (dims aligned at the end); the engine's Binary broadcasts b
  // to a, both of a's rank: the operand of the output's shape goes first, the other takes a's
  // rank and layout.
  Error binary(const Node& n, BinaryAlg alg);

  // PReLU: x where positive, else slope * x; XNNPACK's slope is one per channel (the innermost
  // dim of an NHWC value) or one for all.
  Error prelu(const Node& n);

  // XNNPACK's bilinear resize of an NHWC value: ATen's upsample_bilinear2d, corners aligned
  // (flag 8) or half pixels (no flag); TensorFlow's legacy positions (flag 4) are refused.
  Error resize(const Node& n);

  Error unary(const Node& n, EltwiseAlg alg, float alpha = 0, float beta = 0);

  Error clamp(const Node& n);

  Error softmax(const Node& n);

  Error pool(const Node& n);

  Error global_avg_pool(const Node& n);

  Error transpose(const Node& n);

  Error reshape(const Node& n);

  Error copy(const Node& n);

  Error concat(const Node& n);

  Error slice(const Node& n);

  Error pad(const Node& n);

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

}  // namespace ember::xnn::detail
