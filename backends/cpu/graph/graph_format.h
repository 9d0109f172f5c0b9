// The `cpu` backend's processed blob: a small graph of oneDNN-shaped ops, written by preprocess
// (compiler half) and read, fully validated, by init (runtime half).
//
//   CpuGraph g;  g.tensors.push_back(...);  g.ops.push_back(...);
//   std::vector<uint8_t> blob = serialize(g);
//   Result<CpuGraph> back = parse(blob);  // InvalidProgram, last_error_message() says why
//
// Plain structs with no oneDNN types, so both halves share them and the compiler never links
// oneDNN. The blob is a size-prefixed flatbuffer (graph/cpu_graph.fbs, identifier ECPU) whose enum
// fields hold the values of the enums below. `parse` checks the size and identifier, runs the
// flatbuffers verifier, then checks the version, every count, tensor id, rank, size product, enum
// value (against its kNum* bound) and op's parameters (of its kind's type, each value in range),
// so a truncated or corrupted blob is refused with a reason and never reaches oneDNN. The caller
// owns the blob; the result is a copy.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/core/result.h"

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

// Each kind's parameters are the OpDesc::params alternative named after it (below); the inputs
// are its tensors, in this order.
enum class OpKind : uint8_t {
  Conv = 0,  // in: src, weight, bias|-1; ConvParams
  // in: a, b, bias|-1 (bias broadcast over the leading dims); MatMulParams. Quantized, a and b
  // hold int8 values dequantized with the parameters a and b (two quantized activations:
  // attention's); the result is still their float matmul.
  MatMul = 1,
  Pool = 2,       // in: src; PoolParams
  Eltwise = 3,    // in: src; EltwiseParams
  Binary = 4,     // in: a, b (b broadcast to a); BinaryParams
  Softmax = 5,    // in: src; SoftmaxParams
  LayerNorm = 6,  // in: src, gamma|-1, beta|-1 (over the last dim); NormParams
  BatchNorm = 7,  // in: src, gamma|-1, beta|-1, mean, var (channel dim 1); NormParams
  Concat = 8,     // in: srcs...; ConcatParams
  Reshape = 9,    // in: src; the output tensor's dims (same element count); no parameters
  Permute = 10,   // in: src; PermuteParams
  // A convolution of quantized values (quantization.md): in: src, weight, bias|-1, weight scales;
  // QuantConvParams. src holds int8 values dequantized with QuantConvParams::src; weight holds
  // the int8 weight's integers (as floats), one scale per output channel (zero point 0). The
  // result is the float convolution of those dequantized values plus the bias; the geometry as
  // Conv's (2-D, not transposed). Runs in integers where the CPU has VNNI.
  QuantConv = 11,
  // A matmul of quantized values by an int8 weight, a linear layer's: in: a [M, K], weight (int8,
  // PyTorch's [N, K]), bias|-1 ([N] or [1, N]), weight scales [N]; QuantMatMulParams (a's
  // quantization, as QuantConv's). The result [M, N] is a x dequantized weight^T + bias.
  QuantMatMul = 12,
  // A linear layer by a weight of integers quantized by groups along K (kernels/quant_gemm.h): in:
  // a [M, K], weight [N, K] (Int8 or Int4 storage), bias|-1 ([N] or [1, N]), scales [N, K / group],
  // zero points [N, K / group] (float32 integers)|-1 for all 0; GroupQuantMatMulParams. The
  // result [M, N] is a x W^T + bias, W = (q - zero point) * scale in float32 (PyTorch's
  // dequantize_per_channel_group). With two more inputs, a's zero points and scales (one a row:
  // M elements each), a holds integers (int8's, as float32) and the layer's input is
  // (a - zero point) * scale: a dynamically quantized activation (torchao's 8da); a may then
  // have any shape of M * K elements. With an input_quant other than None (5 inputs), a is float
  // and the op quantizes it first (InputQuant, below), then computes with the dequantized values.
  GroupQuantMatMul = 13,
  // A reduction over some dims: in: src; ReduceParams. The output holds src's dims without the
  // reduced ones, or with them 1 (PyTorch's keepdim): the same elements either way.
  Reduce = 14,
  // Elements [start, start + length) of src along one dim, step 1 (PyTorch's slice_copy and
  // select): in: src; SliceParams; the output's dims are src's but along `dim` (length).
  Slice = 15,
  // PyTorch's where.self: in: condition (Bool storage), a, b (each broadcast to the output, a
  // 0-d weight too); output = condition ? a : b. No parameters.
  Where = 16,
  // PyTorch's constant_pad_nd with pads of at least 0: in: src; PadParams. The output's dims are
  // src's plus before and after; src's elements sit at their index + before, `value` elsewhere.
  Pad = 17,
  // PyTorch's upsample_bilinear2d (align_corners true or false) and upsample_nearest2d of an
  // NCHW src to [N, C, height, width] (the output's dims): in: src (rank 4); ResizeParams. The
  // source positions are ATen's for output sizes given (no scale factor): bilinear with
  // align_corners maps corner to corner, (in - 1) / (out - 1); without, half pixels,
  // max((dst + 0.5) * in / out - 0.5, 0); nearest takes floor(dst * (float)(in / out)), at most
  // in - 1 (ATen's legacy `nearest`, not `nearest-exact`).
  Resize = 18,
};
inline constexpr uint8_t kNumOpKinds = 19;

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
  // ATen's abs, exp, log, floor, ceil, sin, cos: NaN and infinities as ATen gives them (floor,
  // ceil and abs exact; exp, log, sin, cos within about an ulp of ATen's).
  Abs = 15,
  Exp = 16,
  Log = 17,
  Floor = 18,
  Ceil = 19,
  Sin = 20,
  Cos = 21,
  LeakyRelu = 22,   // alpha = the negative slope: x > 0 ? x : x * alpha (NaN kept)
  Reciprocal = 23,  // 1 / x, correctly rounded
  Round = 24,       // to the nearest integer, halves to even (ATen's round, no decimals)
};
inline constexpr uint8_t kNumEltwiseAlgs = 25;

// How a GroupQuantMatMul quantizes its float input to int8 (kernels/quant_gemm.h, DotRows):
enum class InputQuant : uint8_t {
  None = 0,       // it does not: the input is float, or integers with their parameters (7 inputs)
  PerToken = 1,   // each row as torchao's per-token quantization (DotRows::quantize)
  PerTensor = 2,  // the whole input as PT2E's choose_qparams.tensor (DotRows::quantize_tensor)
};
inline constexpr uint8_t kNumInputQuants = 3;

enum class ReduceAlg : uint8_t { Mean = 0, Sum = 1 };
inline constexpr uint8_t kNumReduceAlgs = 2;

// a op b, b broadcast to a (ATen's add and mul with alpha 1, sub.Tensor with alpha 1,
// div.Tensor without a rounding mode, minimum and maximum: a NaN in either operand gives NaN,
// a's NaN where both are; of two equal values, a). Prelu: a > 0 ? a : b * a (PyTorch's prelu, b
// the slope: per channel of NCHW-like a, b is [C, 1, ..., 1]; one slope for all, [1]).
enum class BinaryAlg : uint8_t {
  Add = 0,
  Mul = 1,
  Sub = 2,
  Div = 3,
  Minimum = 4,
  Maximum = 5,
  Prelu = 6,
};
inline constexpr uint8_t kNumBinaryAlgs = 7;

enum class ResizeAlg : uint8_t { Bilinear = 0, Nearest = 1 };
inline constexpr uint8_t kNumResizeAlgs = 2;

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

// The parameters of each op kind (OpKind says which kind takes which). Every vector of a
// convolution or a pooling holds one value per spatial dim, all of the same length (1 to 3).
struct ConvParams {  // Conv, and the geometry of a QuantConv
  int64_t groups = 1;
  bool transposed = false;  // weight dims are PyTorch's: OIHW, or IOHW transposed
  std::vector<int64_t> stride;
  std::vector<int64_t> pad_l;
  // Whatever gives the output size the program records (oneDNN's floor division); a transposed
  // convolution's is negative where output_padding exceeds it.
  std::vector<int64_t> pad_r;
  std::vector<int64_t> dilation;  // PyTorch's, >= 1
  std::vector<int64_t> output_padding;
  size_t rank() const { return stride.size(); }  // spatial dims
};

// An int8 grid: x = (q - zero_point) * scale.
struct QuantParams {
  float scale = 0;
  float zero_point = 0;
};

struct QuantConvParams {
  ConvParams conv;
  QuantParams src;  // src's grid
};

struct MatMulParams {
  bool quantized = false;  // a and b hold int8 values on the grids a and b (else both unused)
  QuantParams a, b;
};

struct QuantMatMulParams {
  QuantParams src;  // a's grid
};

struct GroupQuantMatMulParams {
  int64_t group = 0;  // >= 2, dividing K
  InputQuant input_quant = InputQuant::None;
  float eps = 0;  // the quantization's smallest scale (input_quant other than None; else 0)
};

struct PoolParams {
  PoolAlg alg = PoolAlg::Max;
  std::vector<int64_t> kernel, stride, pad_l, pad_r, dilation;  // dilation: PyTorch's, >= 1
  size_t rank() const { return kernel.size(); }                 // spatial dims
};

struct EltwiseParams {
  EltwiseAlg alg = EltwiseAlg::Relu;
  float alpha = 0, beta = 0;  // as a PostOp's
};

struct BinaryParams {
  BinaryAlg alg = BinaryAlg::Add;
};

struct SoftmaxParams {
  int64_t axis = 0;
};

struct NormParams {  // LayerNorm and BatchNorm
  float eps = 0;
};

struct ConcatParams {
  int64_t axis = 0;
};

struct PermuteParams {
  std::vector<int64_t> perm;  // output dim i = input dim perm[i]
};

struct ReduceParams {
  ReduceAlg alg = ReduceAlg::Mean;
  std::vector<int64_t> dims;  // distinct, ascending, each below src's rank
};

struct SliceParams {
  int64_t dim = 0, start = 0;
};

struct PadParams {
  std::vector<int64_t> before, after;  // per dim of src, each >= 0
  float value = 0;
};

struct ResizeParams {
  ResizeAlg alg = ResizeAlg::Bilinear;
  bool align_corners = false;     // Bilinear only (false for Nearest)
  int64_t height = 0, width = 0;  // the output's H and W, each in [1, 2^20]
};

struct NoParams {};  // Reshape and Where

using OpParams = std::variant<NoParams, ConvParams, QuantConvParams, MatMulParams,
                              QuantMatMulParams, GroupQuantMatMulParams, PoolParams, EltwiseParams,
                              BinaryParams, SoftmaxParams, NormParams, ConcatParams, PermuteParams,
                              ReduceParams, SliceParams, PadParams, ResizeParams>;

// Aborts the process: an op of `kind` was asked for parameters of type `want`, which it does not
// hold. parse refuses a blob whose parameters are not its op kind's, so this is a broken internal
// invariant, never a bad blob.
[[noreturn]] void params_mismatch(OpKind kind, const char* want);

struct OpDesc {
  OpKind kind = OpKind::Eltwise;
  std::vector<int32_t> inputs;  // tensor ids; -1 for an absent optional input
  int32_t output = -1;
  OpParams params;  // the alternative of `kind` (OpKind)
  std::vector<PostOp> post_ops;

  // The parameters, by kind; each aborts where they are another kind's (params_mismatch).
  // conv(): a Conv's, or a QuantConv's geometry.
  const ConvParams& conv() const {
    if (const auto* q = std::get_if<QuantConvParams>(&params)) return q->conv;
    return as<ConvParams>("ConvParams");
  }
  ConvParams& conv() { return const_cast<ConvParams&>(std::as_const(*this).conv()); }
  const QuantConvParams& quant_conv() const { return as<QuantConvParams>("QuantConvParams"); }
  QuantConvParams& quant_conv() { return mut<QuantConvParams>("QuantConvParams"); }
  const MatMulParams& matmul() const { return as<MatMulParams>("MatMulParams"); }
  MatMulParams& matmul() { return mut<MatMulParams>("MatMulParams"); }
  const QuantMatMulParams& quant_matmul() const {
    return as<QuantMatMulParams>("QuantMatMulParams");
  }
  QuantMatMulParams& quant_matmul() { return mut<QuantMatMulParams>("QuantMatMulParams"); }
  const GroupQuantMatMulParams& group_quant_matmul() const {
    return as<GroupQuantMatMulParams>("GroupQuantMatMulParams");
  }
  GroupQuantMatMulParams& group_quant_matmul() {
    return mut<GroupQuantMatMulParams>("GroupQuantMatMulParams");
  }
  const PoolParams& pool() const { return as<PoolParams>("PoolParams"); }
  PoolParams& pool() { return mut<PoolParams>("PoolParams"); }
  const EltwiseParams& eltwise() const { return as<EltwiseParams>("EltwiseParams"); }
  EltwiseParams& eltwise() { return mut<EltwiseParams>("EltwiseParams"); }
  const BinaryParams& binary() const { return as<BinaryParams>("BinaryParams"); }
  BinaryParams& binary() { return mut<BinaryParams>("BinaryParams"); }
  const SoftmaxParams& softmax() const { return as<SoftmaxParams>("SoftmaxParams"); }
  SoftmaxParams& softmax() { return mut<SoftmaxParams>("SoftmaxParams"); }
  const NormParams& norm() const { return as<NormParams>("NormParams"); }
  NormParams& norm() { return mut<NormParams>("NormParams"); }
  const ConcatParams& concat() const { return as<ConcatParams>("ConcatParams"); }
  ConcatParams& concat() { return mut<ConcatParams>("ConcatParams"); }
  const PermuteParams& permute() const { return as<PermuteParams>("PermuteParams"); }
  PermuteParams& permute() { return mut<PermuteParams>("PermuteParams"); }
  const ReduceParams& reduce() const { return as<ReduceParams>("ReduceParams"); }
  ReduceParams& reduce() { return mut<ReduceParams>("ReduceParams"); }
  const SliceParams& slice() const { return as<SliceParams>("SliceParams"); }
  SliceParams& slice() { return mut<SliceParams>("SliceParams"); }
  const PadParams& pad() const { return as<PadParams>("PadParams"); }
  PadParams& pad() { return mut<PadParams>("PadParams"); }
  const ResizeParams& resize() const { return as<ResizeParams>("ResizeParams"); }
  ResizeParams& resize() { return mut<ResizeParams>("ResizeParams"); }

 private:
  template <typename T>
  const T& as(const char* want) const {
    if (const T* p = std::get_if<T>(&params)) return *p;
    params_mismatch(kind, want);
  }
  template <typename T>
  T& mut(const char* want) {
    if (T* p = std::get_if<T>(&params)) return *p;
    params_mismatch(kind, want);
  }
};

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

// The graph in `blob`, or Error::InvalidProgram with this thread's error message
// (last_error_message(), runtime/core/error.h) set to what is wrong.
Result<CpuGraph> parse(std::span<const uint8_t> blob);

// `graph` with every dynamic batch set to `values[symbol]` (each between 1 and its bound).
CpuGraph with_batch_sizes(const CpuGraph& graph, std::span<const int64_t> values);

// The number of elements of `dims`, or -1 for a negative size or an overflow past 2^40.
int64_t checked_numel(std::span<const int64_t> dims);

}  // namespace ember::cpu
