// The `cpu` backend's processed blob: a small graph of oneDNN-shaped ops, written by preprocess
// (compiler half) and read, fully validated, by init (runtime half).
//
//   CpuGraph g;  g.tensors.push_back(...);  g.ops.push_back(...);
//   std::vector<uint8_t> blob = serialize(g);
//   std::optional<CpuGraph> back = parse(blob, &why);  // nullopt + reason on any inconsistency
//
// Plain structs with no oneDNN types, so both halves share them and the compiler never links
// oneDNN. The blob is a size-prefixed flatbuffer (graph/cpu_graph.fbs, identifier ECPU) whose enum
// fields hold the values of the enums below. `parse` checks the size and identifier, runs the
// flatbuffers verifier, then checks the version, every count, tensor id, rank, size product, enum
// value (against its kNum* bound) and per-op parameter count, so a truncated or corrupted blob is
// refused with a reason and never reaches oneDNN. The caller owns the blob; the result is a copy.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ember::cpu {

inline constexpr int kMaxCpuRank = 6;

enum class TensorKind : uint8_t {
  Input = 0,         // the `index`-th delegate argument
  Weight = 1,        // bytes of weights[index]; dims and dim_order describe how they are read
  Intermediate = 2,  // produced by exactly one op
};

enum class WeightStorage : uint8_t {
  Float32 = 0,
  Int8 = 1,  // one byte an element
  Int4 = 2,  // two's complement nibbles, two a byte along the last dim (low nibble first; even)
  // One byte an element, 0 or 1 (PyTorch's bool): only the condition of a Where, which may also
  // be a delegate input.
  Bool = 3,
};

struct TensorDesc {
  TensorKind kind = TensorKind::Intermediate;
  uint32_t index = 0;
  std::vector<int64_t> dims;
  std::vector<uint8_t> dim_order;  // physical order, outermost first; empty: contiguous
  // A dynamic batch: dims[0] is the value of this symbol (0 <= symbol < CpuGraph::num_symbols)
  // at each call, at most dims[0]; -1: every dim is static. Never on a weight.
  int32_t batch_symbol = -1;
  // How the elements are stored: float32, integers read only as the weight of a QuantConv or
  // QuantMatMul (int8) or of a GroupQuantMatMul (int8 or int4), or bools read only as a Where's
  // condition (a weight or an input).
  WeightStorage storage = WeightStorage::Float32;
  bool integer() const { return storage != WeightStorage::Float32; }
};

// A weight stored in named data under `key` (exactly `nbytes` bytes, dense: four per float32
// element, one per int8 or bool one, half per int4 one).
struct WeightRef {
  std::string key;
  uint64_t nbytes = 0;
};

enum class OpKind : uint8_t {
  Conv = 0,  // in: src, weight, bias|-1; ints: conv_ints layout below
  // in: a, b, bias|-1 (bias broadcast over the leading dims). With floats [scale_a, zero_point_a,
  // scale_b, zero_point_b], a and b hold int8 values dequantized with those parameters (two
  // quantized activations: attention's); the result is still their float matmul.
  MatMul = 1,
  Pool = 2,       // in: src; ints: pool_ints layout below
  Eltwise = 3,    // in: src; ints: [EltwiseAlg]; floats: [alpha, beta]
  Binary = 4,     // in: a, b (b broadcast to a); ints: [BinaryAlg]
  Softmax = 5,    // in: src; ints: [axis]
  LayerNorm = 6,  // in: src, gamma|-1, beta|-1 (over the last dim); floats: [eps]
  BatchNorm = 7,  // in: src, gamma|-1, beta|-1, mean, var (channel dim 1); floats: [eps]
  Concat = 8,     // in: srcs...; ints: [axis]
  Reshape = 9,    // in: src; the output tensor's dims (same element count)
  Permute = 10,   // in: src; ints: the permutation (output dim i = input dim perm[i])
  // A convolution of quantized values (quantization.md): in: src, weight, bias|-1, weight scales.
  // src holds int8 values dequantized with floats [scale, zero point] (x = (q - zp) * scale);
  // weight holds the int8 weight's integers (as floats), one scale per output channel (zero
  // point 0). The result is the float convolution of those dequantized values plus the bias;
  // ints as Conv's (2-D, not transposed). Runs in integers where the CPU has VNNI.
  QuantConv = 11,
  // A matmul of quantized values by an int8 weight, a linear layer's: in: a [M, K], weight (int8,
  // PyTorch's [N, K]), bias|-1 ([N] or [1, N]), weight scales [N]; floats [scale, zero point] of
  // a, as QuantConv's. The result [M, N] is a x dequantized weight^T + bias.
  QuantMatMul = 12,
  // A linear layer by a weight of integers quantized by groups along K (kernels/quant_gemm.h): in:
  // a [M, K], weight [N, K] (Int8 or Int4 storage), bias|-1 ([N] or [1, N]), scales [N, K / group],
  // zero points [N, K / group] (float32 integers)|-1 for all 0; ints: [group]. The result [M, N]
  // is a x W^T + bias, W = (q - zero point) * scale in float32 (PyTorch's
  // dequantize_per_channel_group). With two more inputs, a's zero points and scales (one a row:
  // M elements each), a holds integers (int8's, as float32) and the layer's input is
  // (a - zero point) * scale: a dynamically quantized activation (torchao's 8da); a may then
  // have any shape of M * K elements. With ints [group, InputQuant] and floats [eps] (5
  // inputs), a is float and the op quantizes it first (InputQuant, below), then computes with
  // the dequantized values.
  GroupQuantMatMul = 13,
  // A reduction over some dims: in: src; ints: [ReduceAlg, dims...] (distinct, ascending, each
  // below src's rank). The output holds src's dims without the reduced ones, or with them 1
  // (PyTorch's keepdim): the same elements either way.
  Reduce = 14,
  // Elements [start, start + length) of src along one dim, step 1 (PyTorch's slice_copy and
  // select): in: src; ints: [dim, start]; the output's dims are src's but along `dim` (length).
  Slice = 15,
  // PyTorch's where.self: in: condition (Bool storage), a, b (each broadcast to the output, a
  // 0-d weight too); output = condition ? a : b.
  Where = 16,
};
inline constexpr uint8_t kNumOpKinds = 17;

enum class EltwiseAlg : uint8_t {
  Relu = 0,
  Clip = 1,  // alpha = min, beta = max (hardtanh, relu6)
  GeluErf = 2,
  GeluTanh = 3,
  Swish = 4,     // silu: alpha = 1
  Logistic = 5,  // sigmoid
  Hardswish = 6,
  Elu = 7,  // alpha
  Tanh = 8,
  // PyTorch's quantize_per_tensor to int8, the result kept as a float integer:
  // clamp(round_half_even(x * alpha) + beta, -128, 127) with alpha = (float)(1 / scale) and
  // beta = the zero point; and its dequantize: (x - beta) * alpha with alpha = (float)scale.
  Quantize = 9,
  Dequantize = 10,
  Square = 11,  // x * x (PyTorch's pow(x, 2))
  Sqrt = 12,
  Rsqrt = 13,  // 1 / sqrt(x), as ATen computes it
  Neg = 14,
};
inline constexpr uint8_t kNumEltwiseAlgs = 15;

// How a GroupQuantMatMul quantizes its float input to int8 (kernels/quant_gemm.h, DotRows):
enum class InputQuant : int64_t {
  PerToken = 1,   // each row as torchao's per-token quantization (DotRows::quantize)
  PerTensor = 2,  // the whole input as PT2E's choose_qparams.tensor (DotRows::quantize_tensor)
};

enum class ReduceAlg : uint8_t { Mean = 0, Sum = 1 };
inline constexpr uint8_t kNumReduceAlgs = 2;

enum class BinaryAlg : uint8_t { Add = 0, Mul = 1 };
inline constexpr uint8_t kNumBinaryAlgs = 2;

enum class PoolAlg : uint8_t { Max = 0, AvgIncludePad = 1, AvgExcludePad = 2 };
inline constexpr uint8_t kNumPoolAlgs = 3;

// Post-ops fused into a Conv or MatMul (or Binary), applied in order to its result.
struct PostOp {
  bool is_sum = false;  // dst = op(...) + tensor (the residual add)
  int32_t tensor = -1;  // the summand (is_sum)
  EltwiseAlg alg = EltwiseAlg::Relu;
  float alpha = 0;
  float beta = 0;
};

struct OpDesc {
  OpKind kind = OpKind::Eltwise;
  std::vector<int32_t> inputs;  // tensor ids; -1 for an absent optional input
  int32_t output = -1;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<PostOp> post_ops;
};

// Conv and QuantConv ints: [spatial_rank r, groups, transposed, stride[r], pad_l[r], pad_r[r],
// dilation[r] (PyTorch's, >= 1), output_padding[r]]; weight dims are PyTorch's (OIHW, or IOHW
// transposed). Pool ints: [PoolAlg, r, kernel[r], stride[r], pad_l[r], pad_r[r], dilation[r]].

enum class Precision : uint8_t { Fp32 = 0, Bf16 = 1 };

struct CpuGraph {
  Precision precision = Precision::Fp32;
  uint32_t num_inputs = 0;  // delegate inputs; the delegate outputs follow them in args
  // Dynamic batch sizes (TensorDesc::batch_symbol); each is dim 0 of at least one input, which
  // gives its value at each call.
  uint32_t num_symbols = 0;
  std::vector<TensorDesc> tensors;
  std::vector<WeightRef> weights;
  std::vector<OpDesc> ops;
  std::vector<int32_t> outputs;  // tensor id of each delegate output, in order
  // The dim order each delegate output is written in (empty: contiguous), parallel to outputs.
  std::vector<std::vector<uint8_t>> output_dim_orders;
};

std::vector<uint8_t> serialize(const CpuGraph& graph);

// The graph in `blob`, or nullopt with `*error` set to what is wrong.
std::optional<CpuGraph> parse(std::span<const uint8_t> blob, std::string* error);

// `graph` with every dynamic batch set to `values[symbol]` (each between 1 and its bound).
CpuGraph with_batch_sizes(const CpuGraph& graph, std::span<const int64_t> values);

// The number of elements of `dims`, or -1 for a negative size or an overflow past 2^40.
int64_t checked_numel(std::span<const int64_t> dims);

}  // namespace ember::cpu
