// The cpu backend's compile half, shared between its files: the argument helpers
// (compile/args.cc) and the support table (compile/support.cc), read by preprocess
// (compile/compiler.cc and the builder's other files).
//
//   const partition::OpSupportTable& t = internal::support_table();
//   if (internal::is_dynamic_batch(v.tensor_type())) { ... }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "compiler/ir/graph.h"
#include "compiler/partition/backend.h"
#include "compiler/partition/backend_support.h"

namespace ember::cpu::internal {

using Why = std::optional<std::string>;

// An int list argument of `n` (of `count` items when count > 0, a single int broadcast to it),
// `fallback` when absent; nullopt when not a static list.
std::optional<std::vector<int64_t>> int_list(const ir::Node& n, const char* name, size_t count,
                                             std::vector<int64_t> fallback);
// constant_pad_nd's pads of `n` as (before, after) per dim of an input of rank `rank` (ATen's
// list runs from the last dim to the first, a dim it does not name is not padded); nullopt when
// the list is not static, of odd length or longer than two a dim.
struct PadPairs {
  std::vector<int64_t> before, after;
};
std::optional<PadPairs> pad_pairs(const ir::Node& n, size_t rank);
// A number argument of `n`, `fallback` when absent; nullopt when not a static number.
std::optional<double> number(const ir::Node& n, const char* name, double fallback);
// The Value argument `name` of `n`, or null.
ir::Value* value_arg(const ir::Node& n, const char* name);
// The sizes of `v`, dynamic ones at their upper bound.
std::vector<int64_t> static_dims(const ir::Value& v);
// The right padding that gives `out` positions with oneDNN's floor division.
int64_t right_padding(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad);
int64_t normalize_dim(int64_t d, int64_t rank);
// The dims a mean.dim or sum.dim_IntList of a rank `rank` input reduces: normalized, ascending,
// all of them for an empty list; nullopt when not static or out of range.
std::optional<std::vector<int64_t>> reduced_dims(const ir::Node& n, int64_t rank);
// A mean over H and W of an NCHW input: a global pooling, not a Reduce.
bool is_global_pool_mean(const ir::Node& n);
// What a slice (step 1) or select takes of its input: elements [start, start + length) of dim.
struct SliceRange {
  int64_t dim = 0, start = 0, length = 0;
};
std::optional<SliceRange> slice_range(const ir::Node& n);
// A dynamic batch: dim 0 of `t` is a bare symbol and every other dim is static.
bool is_dynamic_batch(const ir::TensorType& t);
// What the cpu backend claims, op by op, with the reason for every refusal.
const partition::OpSupportTable& support_table();

// Preprocess proper (compile/compiler.cc): one partition's CpuGraph blob and named data.
ir::StatusOr<partition::PreprocessResult> build_graph(const ir::Program& partition,
                                                      Precision precision);

// --- Quantization (compile/quant_ops.cc) -------------------------------------------------------
// The parameters of an int8 quantize_per_tensor or dequantize_per_tensor ([-128, 127]).
struct TensorQuant {
  double scale;
  int64_t zero_point;
};

// `n`'s constant parameters when it quantizes to int8's grid, else nullopt.
std::optional<TensorQuant> int8_tensor_quant(const ir::Node& n);

// Support checks. A quantize is claimed when only dequantizes of its parameters read it (their
// pair is the value rounded to the int8 grid, kept in float); a dequantize when it reads such a
// quantize or a constant int8 weight (per tensor, per channel along axis 0, or per group of a
// row).
Why check_quantize(const ir::Node& n);
Why check_dequantize(const ir::Node& n);

// The int8 weight a dequantize reads: its integers and PyTorch's dequantized floats
// ((q - zero_point) * scale in float32), with one scale and zero point per output channel, or
// per group of `group` consecutive elements of a row (dequantize_per_channel_group: [N, K]
// weights, scales and zero points [N][K / group]).
struct QuantizedWeight {
  std::vector<int64_t> dims;
  int64_t group = 0;  // 0: per output channel
  std::vector<float> q;
  std::vector<float> dequantized;
  std::vector<float> scales;
  std::vector<int64_t> zero_points;
};
ir::StatusOr<QuantizedWeight> quantized_weight(const ir::Node& n, const ir::Weight& data,
                                               const ir::Weight* scales,
                                               const ir::Weight* zero_points);

// A view or reshape of one input (the same data, other dims).
bool is_reshape(const ir::Node& n);

// wt's producer when wt is the transpose (t, permute [1, 0]) of a dequantized constant int8 weight
// (check_dequantize): that dequantize; else null.
const ir::Node* transposed_weight_dequantize(const ir::Value* wt);

// The dequantize of a dynamically quantized activation (torchao's 8da, decomposed to ATen):
// mul(sub(float(q), float(zero point)), scale), q int8 [..., K], zero point and scale one a row
// ([..., 1]), whose result reaches, through reshapes that keep the rows, only the input of a
// linear (addmm/mm) by a transposed grouped-integer weight (dequantize_per_channel_group of a
// constant). `sub` is the subtraction: the linear, or nullptr.
// `casts` false: the same but for the int8 casts of q and the zero point (a partition, whose
// inputs they may be: the support check saw them in the whole program, and refuses a float
// subtraction of that shape, check_ordered_binary, so in a partition the shape alone says it).
const ir::Node* activation_dequantize_linear(const ir::Node& sub, bool casts = true);
Why check_activation_dequantize(const ir::Node& sub);

// torchao's whole per-token quantization of a linear's input (compile/activation_quant.cc), from
// the subtraction of its dequantize: every node (the dequantize's sub and mul included), the float
// input (through reshapes), the dequantized result, eps, and the 0-d constants with the number
// each must hold (the builder reads them). nullopt unless the whole chain is there and read only
// inside itself.
struct ActivationChain {
  std::vector<const ir::Node*> nodes;
  ir::Value* x = nullptr;
  const ir::Value* result = nullptr;
  double eps = 0;
  std::vector<std::pair<const ir::Value*, double>> constants;
};
std::optional<ActivationChain> activation_chain(const ir::Node& sub);
// The chain whose nodes include n, or nullopt.
std::optional<ActivationChain> activation_chain_of(const ir::Node& n);
// A node of such a chain (or a dequantize's subtraction, check_activation_dequantize).
Why check_activation_quantize(const ir::Node& n);

// PT2E's dynamic quantization of a linear's input (a quantizer's is_dynamic config), from its
// dequantize:
//   (scale, zero_point) = choose_qparams.tensor(x, -128, 127, eps, int8)
//   q = quantize_per_tensor.tensor(x, scale, zero_point, -128, 127, int8)
//   result = dequantize_per_tensor.tensor(q, scale, zero_point, -128, 127, int8)
// x float32 (static, or but for its batch), the intermediates read only inside, the result read
// (through reshapes) only by linears (addmm, mm) by transposed dequantized int8 weights, which
// compute it all (GroupQuantMatMul's per-tensor mode).
struct DynamicChain {
  std::vector<const ir::Node*> nodes;
  ir::Value* x = nullptr;
  const ir::Value* result = nullptr;
  double eps = 0;
};
std::optional<DynamicChain> dynamic_chain(const ir::Node& dequantize);
// A node of such a chain.
Why check_dynamic_quantize(const ir::Node& n);

// The pattern a node of a linear's quantized input belongs to (a dynamic_chain or an
// activation_chain), with the reshapes and linears that read its result: what the backend
// claims only together (BackendSupport::claimed_with). Empty for any other node.
std::vector<const ir::Node*> quantized_input_pattern(const ir::Node& n);

}  // namespace ember::cpu::internal
