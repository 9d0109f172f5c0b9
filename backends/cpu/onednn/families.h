// The cpu engine's op families: the builder of each (registered in builders.cc's table), the
// fusions that build several ops as one step, and the helpers more than one family file uses.
// Internal to backends/cpu/onednn; every function builds through Build's services (build.h) and
// returns an Error or a Result, never throwing.
//
//   Error build_pooling(Build& b, const OpDesc& op);       // pool.cc, one line in builders.cc
//   Result<size_t> try_quantize_u8(Build& b, size_t i);    // ops built from i, 0: not applicable
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/onednn/build.h"

namespace ember::cpu::delegate {

// --- Family builders: one op of its kind; registered in builders.cc ----------------------------
Error build_convolution(Build& b, const OpDesc& op);         // conv.cc: Conv
Error build_matmul(Build& b, const OpDesc& op);              // matmul.cc: MatMul
Error build_pooling(Build& b, const OpDesc& op);             // pool.cc: Pool
Error build_eltwise(Build& b, const OpDesc& op);             // eltwise.cc: Eltwise
Error build_binary(Build& b, const OpDesc& op);              // eltwise.cc: Binary
Error build_where(Build& b, const OpDesc& op);               // eltwise.cc: Where
Error build_softmax(Build& b, const OpDesc& op);             // norm.cc: Softmax
Error build_layer_norm(Build& b, const OpDesc& op);          // norm.cc: LayerNorm
Error build_batch_norm(Build& b, const OpDesc& op);          // norm.cc: BatchNorm
Error build_reduce(Build& b, const OpDesc& op);              // norm.cc: Reduce
Error build_reshape(Build& b, const OpDesc& op);             // views.cc: Reshape
Error build_permute(Build& b, const OpDesc& op);             // views.cc: Permute
Error build_concat(Build& b, const OpDesc& op);              // views.cc: Concat
Error build_slice(Build& b, const OpDesc& op);               // views.cc: Slice
Error build_quant_conv(Build& b, const OpDesc& op);          // quant_conv.cc: QuantConv
Error build_quant_matmul(Build& b, const OpDesc& op);        // quant_matmul.cc: QuantMatMul
Error build_group_quant_matmul(Build& b, const OpDesc& op);  // quant_matmul.cc: GroupQuantMatMul
Error build_pad(Build& b, const OpDesc& op);                 // pad.cc: Pad
Error build_resize(Build& b, const OpDesc& op);              // resize.cc: Resize

// --- Fusions: ops i.. as one step; the number of ops built, 0 when it does not apply (nothing
// built). Tried in builders.cc's order before the op's own builder. ------------------------------
// [1x1 expand | 3x3 stem] -> 3x3 depthwise -> 1x1 project as one InvertedResidual step, where
// Ember's convolution kernels are chosen (own_kernels.cc).
Result<size_t> try_inverted_residual(Build& b, size_t i);
// A quantize and its dequantize written as uint8 for readers that take it (quant_chain.cc).
Result<size_t> try_quantize_u8(Build& b, size_t i);
// A quantize and the dequantize alone reading it, as one pass (quant_chain.cc).
Result<size_t> try_fake_quant_pair(Build& b, size_t i);
// A unary element-wise op of a uint8 tensor's values, requantized: a lookup of its 256 results
// (quant_chain.cc).
Result<size_t> try_u8_lookup(Build& b, size_t i);

// --- Shared helpers, by the file that defines them ---------------------------------------------
// Each helper converting a file adds the declarations other files need in its own section below.

// --- conv.cc, matmul.cc, own_kernels.cc
// A convolution's sizes, checked against each other (a blob whose sizes disagree would have
// oneDNN read or write out of bounds): oneDNN's strides, paddings and dilations (gaps), and the
// weight's logical dims and strides as oneDNN reads PyTorch's layout ([G, O/G, I/G, k...] grouped,
// [O, I, k...] or the transposed forms).
struct ConvGeometry {
  int64_t r = 0, groups = 1;
  bool transposed = false;
  memory::dims sd, wd, od, strides, pad_l, pad_r, dil, kd, logical, strides_w;
};
Result<ConvGeometry> conv_geometry(Build& b, const OpDesc& op);
// A Conv (or the float form of a QuantConv, as a Conv op) computing in `wdt`.
Error build_conv(Build& b, const OpDesc& op, dt wdt);
// A MatMul (or the float form of a QuantMatMul, as a MatMul op) computing in `wdt`.
Error build_float_matmul(Build& b, const OpDesc& op, dt wdt);
// `post` as one clamp (nothing, relu, or clip), with `*sum` set to the summand of a leading sum
// when `sum` is given. False for anything else.
bool as_clamp(const std::vector<PostOp>& post, Clamp* c, int32_t* sum = nullptr);
// The stride of a Conv or QuantConv that Ember's 3x3 depthwise kernels take (padding 1, stride 1
// or 2, groups = channels, a multiple of 16, constant weight and bias), else 0.
int64_t depthwise3x3_stride(const Build& b, const OpDesc& op);
// A 3x3 depthwise convolution, or a 1x1 one of a channels-last tensor, through Ember's kernels
// (own_kernels.cc); false (nothing built) when it does not apply.
Result<bool> try_depthwise(Build& b, const OpDesc& op);
Result<bool> try_pointwise(Build& b, const OpDesc& op);

// --- exact.cc, pool.cc, eltwise.cc: the steps that keep ATen's semantics where oneDNN's
// primitives lose them (kernels/nan_exact.h), and the redo of overflowed sums in double.
// oneDNN's element-wise primitive computing `p` (not an own one: is_own_eltwise) over `src`.
Result<dnnl::eltwise_forward::primitive_desc> eltwise_primitive(Build& b, const memory::desc& src,
                                                                const PostOp& p);
// Steps for post-ops [from, end) of `op`, in place on its output `dst`: own element-wise ops by
// Ember's kernels (add_own_eltwise_step), other element-wise ops and sums by oneDNN.
Error add_post_op_steps(Build& b, const OpDesc& op, size_t from, const memory& dst);
// dst = clamp(src), NaN kept; src and dst have one layout (the same memory: in place).
Error add_clamp_step(Build& b, const memory& src, const memory& dst, Clamp act);
// The kernel of the element-wise ops that are Ember's unary kernels (kernels/elementwise.h:
// abs, exp, log, floor, ceil, sin, cos, leaky relu, reciprocal, round), else nullopt.
std::optional<UnaryOp> unary_op_of(EltwiseAlg alg);
// dst = p(src) for an own element-wise op `p` (is_own_eltwise) by Ember's kernel.
Error add_own_eltwise_step(Build& b, const memory& src, const memory& dst, const PostOp& p);
// dst = f(src) by `kernel` (in place, over n floats, on `threads`), src and dst of one layout;
// the padding of a channel-blocked layout stays zero (unless f(0) = 0, every block is one run).
// `name` and `info` are the profiler's.
using InPlaceKernel = std::function<void(float* y, int64_t n, int threads)>;
// An own element-wise op's kernel (not quantize or dequantize), its profiler name and info, and
// whether it keeps 0 at 0; nullopt for the others.
struct OwnEltwise {
  std::string name, info;
  bool zero_stays_zero;
  InPlaceKernel kernel;
};
std::optional<OwnEltwise> own_eltwise_kernel(const PostOp& p);
// y = p(y) for n floats now, at build, by what a step computing p runs (Ember's kernel or oneDNN's
// primitive): a table of an op's values (quant_chain.cc's lookups). Not quantize, dequantize or a
// sum.
Error eltwise_now(Build& b, const PostOp& p, float* y, int64_t n);
Error add_in_place_step(Build& b, const memory& src, const memory& dst, bool zero_stays_zero,
                        std::string name, std::string info, InPlaceKernel kernel);
// dst = layer norm of each row (the last dim) of plain float32 src, optional gamma and beta
// (empty memories for none), statistics in double as ATen's float64 result rounded.
Error add_layer_norm_step(Build& b, const memory& src, const memory& gamma, const memory& beta,
                          const memory& dst, float eps);
// After a float32 matmul (rank 2 or 3, no fused post-op): the non-finite outputs summed again in
// double and rounded once.
Error add_matmul_redo_step(Build& b, const memory& a, const memory& w, const memory& bias,
                           const memory& dst);
// The same after Ember's packed GEMM, read from the packed matrix itself.
Error add_matvec_redo_step(Build& b, std::shared_ptr<PackedMatrix> packed, int64_t m,
                           const memory& a, const memory& dst);
// The same after a float32 convolution (not transposed) with no fused post-op.
Error add_conv_redo_step(Build& b, const memory& src, const memory& wei, const memory& bias,
                         const memory& dst, int64_t r, int64_t groups, const memory::dims& strides,
                         const memory::dims& pad_l, const memory::dims& dil);
// Max pooling by Ember's kernel (oneDNN's skips NaN), into the layout oneDNN's would write.
Error build_max_pool(Build& b, const OpDesc& op, const memory& src, const memory::desc& dst_md);
// The exact redo after oneDNN's average pooling of `op` (src -> dst).
Error add_avg_pool_redo_step(Build& b, const OpDesc& op, const memory& src, const memory& dst,
                             bool include_pad);
// After oneDNN's softmax along `axis` of plain src -> dst: the rows ATen makes NaN.
Error add_softmax_rows_step(Build& b, const memory& src, const memory& dst, int64_t axis);
// dst = softmax of plain dense src along its last dim, by Ember's kernel (softmax_rows).
Error add_softmax_last_dim_step(Build& b, const memory& src, const memory& dst);

// --- quant_conv.cc, quant_chain.cc, quant_matmul.cc
// dst = PyTorch's quantize (to int8's grid, kept in float) or dequantize of src, p's; with
// `then` (a dequantize after a quantize), both in one pass.
Error add_quantize_step(Build& b, const memory& src, const memory& dst, const PostOp& p,
                        const PostOp* then = nullptr);
// Whether `pool` may read uint8 (its producer then writes it so), and its build on bytes.
Result<bool> max_pool_takes_u8(Build& b, const OpDesc& pool);
Error build_max_pool_u8(Build& b, const OpDesc& op, std::pair<float, float> params);
// Post-ops [begin, end) of a quantized op, clamps all (checked before), as one.
Result<Clamp> clamps_in(const OpDesc& op, size_t begin, size_t end);
// Whether every reader of `t`, dequantized values of (scale, zero_point), reads them as uint8:
// quantized convolutions of those parameters that run in integers or on Ember's depthwise
// kernel, that add it to their result as add_tail does, or max poolings (max_pool_takes_u8).
// Not a delegate output. Each answer is kept (QuantChain::readers_take_u8). (quant_chain.cc)
Result<bool> readers_take_u8(Build& b, int32_t t, float scale, float zero_point);
// Whether QuantConv `op`, whose post-ops before `fused` are clamps and from `fused` on a
// quantize and a dequantize, may write its result as uint8 for readers that all take it so
// (readers_take_u8). (quant_chain.cc)
// Whether op's post-ops from `fused` are a requantize alone (quantize, dequantize of one grid),
// those before it clamps. (quant_chain.cc)
bool requantized_at_end(const OpDesc& op, size_t fused);
Result<bool> int8_chain_out(Build& b, const OpDesc& op, size_t fused);
// Whether a QuantConv runs in integers (Build::int8()): what build_quant_conv does, and what a
// producer asks of every reader before it writes them uint8 (int8_chain_out). (quant_conv.cc)
Result<bool> quant_conv_in_integers(Build& b, const OpDesc& op);
// Whether QuantConv `op` runs on Ember's quantized 3x3 depthwise kernel (kernels/depthwise.h):
// with Ember's kernels on, of that shape, its result requantized for readers that take uint8
// (then it reads uint8 too, on any instruction set from AVX2 up). (quant_conv.cc)
Result<bool> own_quant_depthwise(Build& b, const OpDesc& op);
// Whether QuantConv `op`, in integers, has the post-ops of a residual block's end: [clamps]
// requantize, + t (a tensor of its shape), [clamps], requantize; and its result
// readers_take_u8. Then the convolution writes its first requantized result as uint8 and a step
// adds t to it in PyTorch's arithmetic, t read as uint8 where its producer writes it so
// (readers_take_u8 takes such a sum as a reader). (quant_conv.cc)
Result<bool> add_tail(Build& b, const OpDesc& op);
// A QuantConv's or QuantMatMul's source parameters, per-output-channel weight scales and int8
// weight (dims wd, PyTorch's: output channels first), checked; `what` names the op in refusals.
struct QuantOperands {
  float src_scale = 0, src_zp = 0;
  memory scales_m, q_m;  // q_m: the weight as stored
  const float* scales = nullptr;
  const int8_t* stored = nullptr;  // its bytes, in the stored order
  // The weight plain (row-major in its logical dims): where stored so, or a copy; null for a
  // convolution's filter stored channels-last until plain_weights() makes the copy.
  const int8_t* q = nullptr;
  // A convolution's filter [O][kh][kw][I] where stored so (ExecuTorch's XNNPACK filters, read in
  // place) or where it is 1x1 (the same bytes as plain); else null.
  const int8_t* channels_last = nullptr;
  // The plain copy of a weight stored in another order, freed with the operands once the op is
  // built.
  std::vector<int8_t> plain;
};
Result<QuantOperands> quant_operands(Build& b, const OpDesc& op, const QuantParams& src,
                                     const memory::dims& wd, const std::string& what);
// o.q, made from the channels-last filter where it is null.
const int8_t* plain_weights(QuantOperands& o, const memory::dims& wd);
// A step writing the integers + 128 of src_f32 (values on the int8 grid of scale and
// zero_point, dense) into src_u8 (the same dims and order), as uint8.
Error add_to_u8_step(Build& b, const memory& src_f32, const memory& src_u8, float scale,
                     float zero_point);

// --- views.cc, norm.cc

}  // namespace ember::cpu::delegate
