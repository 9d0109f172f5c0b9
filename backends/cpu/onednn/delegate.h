// The cpu delegate's build of one graph (internal to the backend's runtime half; include it
// from backends/cpu only). CpuDelegate turns a parsed CpuGraph into a list of steps (oneDNN
// primitives and Ember's own kernels) at init, and runs them at execute:
//
//   auto d = std::make_unique<CpuDelegate>(std::move(graph), threads, DelegateOptions{});
//   d->prepare_outputs(); d->build(named_data);   // throws InitError or dnnl::error
//   Error e = d->execute(args);                   // never throws, never allocates
//
// Building throws (oneDNN's C++ API does); make_delegate (runtime/cpu_runtime.cc) turns every
// exception into an Error. The member functions are defined by responsibility: buffers, layouts and
// execution in onednn/delegate.cc, the op builders in onednn/ops.cc (element-wise, pooling,
// normalization, softmax, concat, views) and onednn/conv.cc (convolutions, matmuls), and the
// matching of Ember's own kernels in cpu_own_kernels.cc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_runtime.h"
#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/onednn/own_steps.h"
#include "backends/cpu/onednn/step.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_debug.h"
#include "runtime/executor/observer.h"

namespace ember::cpu::delegate {

using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// A runtime failure inside init, turned into an Error at the boundary.
struct InitError {
  Error code;
  std::string message;
};

[[noreturn]] void refuse(std::string message, Error code = Error::InvalidProgram);

memory::dims to_dims(const std::vector<int64_t>& d);
// "1x3x224x224", as the problems of own steps print dims.
std::string dims_text(const memory::dims& d);

// Strides of a dense tensor whose dims are laid out in `order` (outermost first; empty: in order).
memory::dims dense_strides(const memory::dims& dims, const std::vector<uint8_t>& order);

memory::desc plain_md(const memory::dims& dims, dt type, const std::vector<uint8_t>& order = {});

// The data of m as T*.
template <typename T>
T* data_as(const memory& m) {
  void* p = nullptr;
  dnnl_memory_get_data_handle(m.get(), &p);
  return static_cast<T*>(p);
}

// The strides of `md` when it is a plain (unblocked) f32 layout, any strides; else empty.
memory::dims plain_strides(const memory::desc& md);

// The strides that show a tensor of `dims` with `strides` as `new_dims` over the same storage,
// or empty when no strides do (a reshape that needs a copy). torch's view rule: dims merged or
// split only where the old ones are contiguous to each other.
memory::dims reshaped_strides(const memory::dims& dims, const memory::dims& strides,
                              const memory::dims& new_dims);

// `dims` right-aligned to `rank` with leading ones (broadcast operands, biases).
memory::dims pad_rank(const memory::dims& dims, size_t rank);

dnnl::algorithm eltwise_alg(EltwiseAlg a);

// (alpha, beta) in oneDNN's terms for one of our element-wise ops.
std::pair<float, float> eltwise_params(EltwiseAlg a, float alpha, float beta);

inline constexpr uint64_t kMaxActivationBytes = uint64_t{4} << 30;

// A 3x3 convolution of at most this many channels (an image's: RGB, RGBA) before a depthwise block
// is fused into it as its stem: oneDNN runs such a convolution at half the FMA peak, and the
// image's reorder to channels-last and the 3x3's output (32 x 112 x 112 floats in MobileNetV2)
// never go to memory.
inline constexpr int64_t kMaxStemChannels = 4;

// oneDNN's Winograd F(4x4, 3x3) subtracts inputs in its tile transforms: one inf becomes
// inf - inf = NaN, and a NaN spreads over the tile, where the direct convolution (ATen's) keeps
// them where the windows hold them. With |w| <= kWinogradMaxWeight (and the bias), input
// channels <= kWinogradMaxChannels and |x| <= kWinogradMaxInput, no transform, product or sum
// reaches 2^120 (the transforms grow a value by less than 2^15 in all), so Winograd's result is
// finite exactly where the direct one is: everywhere. Other convolutions run direct.
inline constexpr float kWinogradMaxInput = 0x1p48f;
inline constexpr float kWinogradMaxWeight = 0x1p32f;
inline constexpr int64_t kWinogradMaxChannels = int64_t{1} << 24;

// The runtime half's switches, from the compile specs (runtime/cpu_runtime.cc).
struct DelegateOptions {
  bool winograd = false;    // "fp32_winograd": 3x3 stride-1 fp32 convolutions by Winograd
  bool own_kernels = true;  // "ember_kernels": Ember's own kernels where they apply
  bool int8 = true;         // "int8": quantized convolutions in integers where the CPU has VNNI
};

// What a new buffer of the build holds, for where it comes from and the memory report.
enum class Held {
  Activations,  // written at every call: intermediates, uint8 copies of sources
  Scratchpad,   // oneDNN's and Ember's kernels' working memory, one for every step
  Weights,      // constants in the layout a step reads them in (reordered, rescaled)
  Transient,    // a weight as stored or dequantized, which a reorder or packing may drop at init
};

class CpuDelegate {
 public:
  // `allocator`: where the buffers a build keeps come from (activations, the scratchpad and
  // weights in their final layout), the method allocator at init; null: the heap (a build made
  // during a call, for a new batch size, and tests). Transient buffers always use the heap.
  CpuDelegate(CpuGraph g, int threads, const DelegateOptions& options,
              MemoryAllocator* allocator = nullptr);
  void build(const NamedDataMap* named);
  // `observer` (may be null) is told each step's time (ExecutionObserver::on_delegate_step).
  Error execute(std::span<EValue*> args, ExecutionObserver* observer = nullptr);

 private:
  static bool same_layout(const Tensor& t, const memory::desc& md);
  // A new buffer of layout `md` (see Held and the constructor), counted in summary(). The
  // method allocator running out is an InitError (MemoryAllocationFailed) naming the bytes.
  memory buffer(const memory::desc& md, Held held);
  // Held::Weights for a weight, Held::Activations for anything else.
  Held held_for(int32_t id) const {
    return graph_.tensors[id].kind == TensorKind::Weight ? Held::Weights : Held::Activations;
  }
  void bind(const memory& m, int arg);
  // Whether `m` is a caller buffer (bound at execute), and which argument.
  int bound_arg(const memory& m) const;
  // A view of `m` with descriptor `md` over the same storage (bound to the same argument when `m`
  // is a caller buffer).
  memory view(const memory& m, const memory::desc& md);
  void load_weight(int32_t id);
  // Drops the delegate's hold on the weights that ops [begin, end) were the last to read: a
  // weight a step reads as it is stays alive through the step; one that was only reordered or
  // packed into another buffer is freed now (the peak of init is one copy more, not all).
  void release_weights(size_t begin, size_t end);
  // The memory holding tensor `id` as the ops so far left it.
  memory src_memory(int32_t id);
  // Tensor `id` in layout `want`: itself, or a reorder of it (once, now, for a weight; a step
  // at every call otherwise).
  memory as(int32_t id, const memory::desc& want);
  // Makes view `v` (of op's source) op's output, and keeps the source's storage alive as long.
  void keep_as_view(const OpDesc& op, const memory& v);
  // Runs a reorder at init (weights: once, never again).
  void reorder_now(memory from, memory to);
  void add_reorder(const memory& from, const memory& to);
  // The bytes of scratchpad a primitive of `pd` needs (its user scratchpad).
  template <typename PD>
  static size_t scratch_bytes(const PD& pd) {
    return pd.scratchpad_desc().get_size();
  }
  // Appends a step (the scratchpad grows to what it needs).
  void add(std::unique_ptr<Step> step);
  memory::dims dims_of(int32_t id) const { return to_dims(graph_.tensors[id].dims); }
  // The primitive's attributes: its post-ops before the first clamp (fused_post_ops).
  dnnl::primitive_attr attr_for(const OpDesc& op);
  // --- NaN-exact steps (onednn/exact.cc, kernels/nan_exact.h)
  // ----------------------------------------- Whether `p` is relu or hardtanh, as a clamp.
  static bool is_clamp(const PostOp& p, Clamp* c);
  // Whether `p` is an element-wise op that oneDNN computes wrongly for some input: a clamp (relu
  // and clip by max/min turn NaN into a bound), sigmoid (the reference logistic, which oneDNN runs
  // after a convolution by GEMM and on a channel-padded layout, maps NaN to 0), the exact gelu
  // or elu (gelu_erf and elu give +0.0 where ATen gives -0.0); or one oneDNN has no algorithm
  // for (quantize, dequantize, rsqrt, neg).
  static bool is_own_eltwise(const PostOp& p);
  // The post-ops oneDNN runs inside the op's primitive: those before the first own element-wise
  // op (is_own_eltwise). That op and what follows it run as steps of their own.
  static std::span<const PostOp> fused_post_ops(const OpDesc& op);
  // Steps for post-ops [from, end) of `op`, in place on its output `dst`: own element-wise ops by
  // Ember's kernels (add_own_eltwise_step), other element-wise ops and sums by oneDNN.
  void add_post_op_steps(const OpDesc& op, size_t from, const memory& dst);
  // dst = clamp(src), NaN kept; src and dst have one layout (the same memory: in place).
  void add_clamp_step(const memory& src, const memory& dst, Clamp act);
  // dst = p(src) for an own element-wise op `p` (is_own_eltwise) by Ember's kernel; as
  // add_clamp_step.
  void add_own_eltwise_step(const memory& src, const memory& dst, const PostOp& p);
  // dst = f(src) by `kernel` (in place, over n floats, on `threads`), src and dst of one layout;
  // the padding of a channel-blocked layout stays zero (unless f(0) = 0, every block is one
  // run). `name` and `info` are the profiler's.
  using InPlaceKernel = std::function<void(float* y, int64_t n, int threads)>;
  void add_in_place_step(const memory& src, const memory& dst, bool zero_stays_zero,
                         std::string name, std::string info, InPlaceKernel kernel);
  // dst = layer norm of each row (the last dim) of plain float32 src, with optional [n] gamma and
  // beta (empty memories for none), by the portable library's row kernel: statistics and the
  // normalized row in double, as ATen's float64 result rounded (oneDNN's float statistics are
  // inexact, or inf, near float32's maximum).
  void add_layer_norm_step(const memory& src, const memory& gamma, const memory& beta,
                           const memory& dst, float eps);
  // After a float32 matmul dst = a x b (+ bias) of rank 2 or 3, with no post-op fused: each
  // element of dst that is not finite is summed again in double from a, b and bias (any blocked
  // layouts, bias broadcast) and rounded once. Near float32's maximum the order of summation
  // decides whether a partial sum overflows; exact arithmetic gives inf only where the true
  // value overflows, NaN only where the products hold inf - inf or 0 * inf. Costs one scan of
  // dst when every element is finite.
  void add_matmul_redo_step(const memory& a, const memory& b, const memory& bias,
                            const memory& dst);
  // The same after Ember's packed GEMM (matvec_step, no sum, no clamp) dst [m][n] =
  // a [m][k] x b + b's bias, read from the packed matrix itself (no second copy of the weight).
  void add_matvec_redo_step(std::shared_ptr<PackedMatrix> b, int64_t m, const memory& a,
                            const memory& dst);
  // The same after a float32 convolution (not transposed) with no post-op fused: dst =
  // conv(src, wei) + bias, with oneDNN's strides, left paddings and dilations (gaps: PyTorch's
  // minus 1) of `r` spatial dims; wei in the primitive's logical dims ([O, I, k...], or [G, O/G,
  // I/G, k...] when grouped), in any blocked layout.
  void add_conv_redo_step(const memory& src, const memory& wei, const memory& bias,
                          const memory& dst, int64_t r, int64_t groups, const memory::dims& strides,
                          const memory::dims& pad_l, const memory::dims& dil);
  // Max pooling by Ember's kernel (oneDNN's skips NaN), into the layout oneDNN's would write
  // (`dst_md`) where the kernel reads it.
  void build_max_pool(const OpDesc& op, memory src, memory::desc dst_md);
  // The exact redo after oneDNN's average pooling of `op` (src -> dst): the non-finite outputs
  // again, in double (onednn/exact.cc).
  void add_avg_pool_redo_step(const OpDesc& op, const memory& src, const memory& dst,
                              bool include_pad);
  // After oneDNN's softmax along `axis` of plain src -> dst: the rows ATen makes NaN.
  void add_softmax_rows_step(const memory& src, const memory& dst, int64_t axis);
  // dst = softmax of plain dense src along its last dim, by Ember's kernel (softmax_rows).
  void add_softmax_last_dim_step(const memory& src, const memory& dst);
  // The op reading each tensor last (delegate outputs: never dead), and which tensors share
  // storage with another (reshape views), for in-place residual sums.
  void compute_last_uses();
  // Whether the op being built may accumulate into tensor `t`'s own buffer: an intermediate of
  // its own storage, in layout `md`, that nothing reads afterwards and the op does not read.
  bool can_sum_in_place(const OpDesc& op, int32_t t, const memory::desc& md) const;
  // Storage for intermediate `t` with layout `md`: a buffer of the pool no live tensor uses
  // (best fit), or a new one. A buffer is live until the last reader of every tensor in it.
  memory pooled(const memory::desc& md, int32_t t);
  // Where Ember's kernels pack their weights: buffer(..., Held::Weights), so from the method
  // allocator where there is one.
  Storage weight_storage();
  // Storage for a value the current op's steps alone use, from the same pool.
  memory scratch_activation(const memory::desc& md);
  // The pool buffer (best fit, or a new one) for `md`, then live until op `live_until`.
  int free_buffer(const memory::desc& md, int live_until);
  // Tensor `t` lives in the same storage as `with` (an in-place sum, a reshape view).
  void share_buffer(int32_t t, int32_t with);
  // The output memory of `op` with descriptor `md`: the caller's output buffer when the op's
  // result is a delegate output in exactly that layout, the residual summand's buffer when it is
  // dead after this op, else a buffer of its own.
  memory make_output(const OpDesc& op, const memory::desc& md);
  template <typename Prim, typename PD>
  void add_step(const PD& pd, StepArgs args) {
    add(std::make_unique<PrimitiveStep>(Prim(pd), std::move(args), scratch_bytes(pd)));
  }
  void check_same_dims(int32_t a, int32_t b);
  // Post-ops of the sum kind need the destination ready before the primitive runs; make_output
  // adds that copy, so it is called after the primitive descriptor exists and before add_step.
  void build_op(const OpDesc& op);

  // --- Ember's fused inverted residual block (backends/cpu/kernels/inverted_residual.h)
  // --------------- A plain 2-D Conv with a square kernel `k` (weight dims [o, i, k, k]), equal
  // strides, padding (k - 1) / 2 on every side and no dilation: its stride, or 0 when `op` is
  // anything else.
  int64_t plain_conv2d_stride(const OpDesc& op, int64_t k) const;
  // The same of a convolution's geometry `c` by a weight of dims `wd` (a Conv's or a QuantConv's).
  static int64_t plain_conv2d_stride(const ConvParams& c, const std::vector<int64_t>& wd,
                                     int64_t k);
  bool is_constant(int32_t t) const {
    return t < 0 || graph_.tensors[t].kind == TensorKind::Weight;
  }
  // An intermediate that only op `reader` reads, and nothing else sees (not an output, not a
  // reshape's storage).
  bool private_to(int32_t t, size_t reader) const;
  // `post` as one clamp (nothing, relu, or clip), with `*sum` set to the summand of a leading
  // sum when `sum` is given. False for anything else.
  static bool as_clamp(const std::vector<PostOp>& post, Clamp* c, int32_t* sum = nullptr);
  // Weight `id` as dense fp32 in PyTorch's layout (null for -1), kept alive in `keep` (a reorder
  // of it is a new buffer).
  const float* weight_data(int32_t id, std::vector<memory>* keep);
  // Ops i.. as [1x1 expand | 3x3 stem] -> 3x3 depthwise -> 1x1 project, run as one
  // InvertedResidual step; the number of ops it replaced, or 0 (they are then built one by one).
  size_t try_inverted_residual(size_t i);
  static memory::desc nhwc_md(const std::vector<int64_t>& dims);
  // Appends one of Ember's kernels as a step; `reads`: the memories it reads through its
  // closure, whose storage the build keeps (views of weights included).
  void add_own_step(OwnStep o, std::initializer_list<memory> reads = {});
  // A 3x3 depthwise convolution (padding 1, stride 1 or 2, channels a multiple of 16) with at
  // most a relu/clip after it, through Ember's kernel (kernels/depthwise.h): faster than
  // oneDNN 2.6's, and it splits the rows evenly between threads. False (nothing built) when it does
  // not apply.
  bool try_depthwise(const OpDesc& op);
  // The stride of a Conv or QuantConv that Ember's 3x3 depthwise kernels take (padding 1, stride
  // 1 or 2, groups = channels, a multiple of 16, constant weight and bias), else 0.
  int64_t depthwise3x3_stride(const OpDesc& op) const;
  // A 1x1 convolution (stride 1, no padding) of a channels-last tensor, with at most a leading
  // residual sum and a relu/clip, through the packed GEMM (packed_gemm.h). Only where its input
  // is channels-last already (MobileNet's blocks): it never adds a reorder. False (nothing
  // built) when it does not apply.
  bool try_pointwise(const OpDesc& op);
  // A convolution's sizes, checked against each other (a blob whose sizes disagree would have
  // oneDNN read or write out of bounds): oneDNN's strides, paddings and dilations (gaps), and the
  // weight's logical dims and strides as oneDNN reads PyTorch's layout ([G, O/G, I/G, k...]
  // grouped, [O, I, k...] or the transposed forms).
  struct ConvGeometry {
    int64_t r = 0, groups = 1;
    bool transposed = false;
    memory::dims sd, wd, od, strides, pad_l, pad_r, dil, kd, logical, strides_w;
  };
  ConvGeometry conv_geometry(const OpDesc& op);
  void build_conv(const OpDesc& op, dt wdt);
  // dst = PyTorch's quantize (to int8's grid, kept in float) or dequantize of src, p's
  // (graph/graph_format.h), by Ember's kernel; with `then` (a dequantize after a quantize), both in
  // one pass. As add_clamp_step (onednn/quant_conv.cc).
  void add_quantize_step(const memory& src, const memory& dst, const PostOp& p,
                         const PostOp* then = nullptr);
  // A QuantConv's or QuantMatMul's source parameters, per-output-channel weight scales and int8
  // weight (dims wd, PyTorch's: output channels first), checked; `what` names the op in refusals.
  struct QuantOperands {
    float src_scale = 0, src_zp = 0;
    memory scales_m, q_m;
    const float* scales = nullptr;
    const int8_t* q = nullptr;
  };
  QuantOperands quant_operands(const OpDesc& op, const QuantParams& src, const memory::dims& wd,
                               const std::string& what);
  // A QuantConv (graph/graph_format.h), in integers when int8_ (onednn/quant_conv.cc).
  void build_quant_conv(const OpDesc& op);
  // The uint8 result `dst` of QuantConv op (int8_chain_out or add_tail): registered as the
  // output's, or the residual added (add_quant_add_step).
  void finish_u8_out(const OpDesc& op, size_t fused, bool residual, const memory& dst);
  // Whether a QuantConv of geometry g (weights q, `count` of them), requantized to uint8, runs on
  // Ember's int8 1x1 kernel (QuantPointwise): 1x1, stride 1, no padding, one group, input
  // channels a multiple of 4; weights within [-64, 63] where the kernels have no VNNI.
  bool own_quant_pointwise(const ConvGeometry& g, const int8_t* q, int64_t count);
  // A QuantMatMul (graph/graph_format.h), in integers as build_quant_conv (onednn/quant_matmul.cc).
  void build_quant_matmul(const OpDesc& op);
  // Whether QuantMatMul `op` (in integers; weights q [n][k]; its post-ops from `fused` on a
  // requantize, clamps before) runs on Ember's int8 1x1 kernel: where the kernels have no VNNI,
  // weights within 7 bits, k a multiple of 4.
  bool own_quant_linear(const OpDesc& op, const int8_t* q, int64_t k, int64_t n, size_t fused);
  // A step writing the integers + 128 of src_f32 (values on the int8 grid of scale and
  // zero_point, dense) into src_u8 (the same dims and order), as uint8 (onednn/quant_matmul.cc).
  void add_to_u8_step(const memory& src_f32, const memory& src_u8, float scale, float zero_point);
  // A GroupQuantMatMul (graph/graph_format.h), on Ember's kernel (kernels/quant_gemm.h).
  void build_group_quant_matmul(const OpDesc& op);
  // A GroupQuantMatMul that quantizes its input per tensor (PT2E's dynamic quantization), by a
  // weight of one group a row, zero points 0 (q [n][k], scales [n], bias [n] or null), on
  // oneDNN's u8 x s8 matmul where the CPU has VNNI and int8 is on (onednn/quant_matmul.cc). False
  // (nothing built) otherwise.
  bool try_dynamic_int8_matmul(const OpDesc& op, const int8_t* q, const float* scales,
                               const float* bias, int64_t m, int64_t k, int64_t n);
  // Whether QuantConv `op`, whose post-ops before `fused` are clamps and from `fused` on a
  // quantize and a dequantize, may write its result as uint8 for readers that all take it so
  // (readers_take_u8).
  bool int8_chain_out(const OpDesc& op, size_t fused);
  // Post-ops [begin, end) of such an op, clamps all (checked before), as one.
  static Clamp clamps_in(const OpDesc& op, size_t begin, size_t end);
  // Whether every reader of `t`, dequantized values of (scale, zero_point), reads them as uint8:
  // quantized convolutions of those parameters that run in integers or on Ember's depthwise
  // kernel, that add it to their result as add_tail does, or max poolings (max_pool_takes_u8).
  // Not a delegate output.
  bool readers_take_u8(int32_t t, float scale, float zero_point);
  bool readers_take_u8_uncached(int32_t t, float scale, float zero_point);
  // Whether QuantConv `op`, in integers, has the post-ops of a residual block's end: [clamps]
  // requantize, + t (a tensor of its shape), [clamps], requantize; and its result
  // readers_take_u8. Then the convolution writes its first requantized result as uint8 and
  // add_quant_add_step adds t to it in PyTorch's arithmetic, t read as uint8 where its producer
  // writes it so (readers_take_u8 takes such a sum as a reader).
  bool add_tail(const OpDesc& op);
  // For add_tail: the step adding post-op `at`'s summand to `a_u8` (uint8, int8 + 128, of
  // scale and zero point), dequantized exactly as the reference does, then the clamps and the
  // requantize of op's remaining post-ops; op's output, uint8 channels-last.
  void add_quant_add_step(const memory& a_u8, float a_scale, float a_zero_point, const OpDesc& op,
                          size_t at);
  // Ops i, i + 1 as a quantize and its dequantize, of a float tensor (a delegate input, a
  // pooling's result) whose readers take uint8: one step writing uint8 channels-last from the
  // floats, NCHW or NHWC; or, of a uint8 max pooling's result, one step requantizing its bytes
  // (add_requantize_u8_step). 2 when it applies, else 0 (nothing built).
  size_t try_quantize_u8(size_t i);
  // Ops i, i + 1: a quantize and the dequantize alone reading it (of a tensor no op before them
  // takes as post-ops: a layer norm's, a softmax's result) as one pass, the quantize post-op
  // pair's (add_quantize_step), with no int8 tensor between. 2 when built, else 0.
  size_t try_fake_quant_pair(size_t i);
  // Whether ops i, i + 1 are a quantize and the dequantize alone reading it (Eltwise ops without
  // post-ops; the int8 values no delegate output).
  bool quantize_pair(size_t i) const;
  // Whether try_quantize_u8 takes ops i, i + 1 (with the kernels, of an int8 grid, the quantized
  // values read by nothing else, 4-D, the dequantized ones read as uint8).
  bool quantize_pair_u8(size_t i);
  // Whether `pool` may read uint8 (readers_take_u8): a 2-D max pooling whose every window holds
  // an input element, read only by a quantize and its dequantize that quantize_pair_u8 takes.
  // Then it runs on bytes (build_max_pool_u8: the maximum commutes with the increasing
  // dequantize), and the requantize after it dequantizes and quantizes bytes as the reference
  // does its floats (add_requantize_u8_step).
  bool max_pool_takes_u8(const OpDesc& pool);
  void build_max_pool_u8(const OpDesc& op, std::pair<float, float> params);
  void add_requantize_u8_step(const OpDesc& q, const OpDesc& d);
  bool is_graph_output(int32_t t) const;
  // Whether a QuantConv runs in integers (int8_ below): what build_quant_conv does, and what a
  // producer asks of every reader before it writes them uint8 (int8_chain_out).
  bool quant_conv_in_integers(const OpDesc& op);
  // Whether QuantConv `op` runs on Ember's quantized 3x3 depthwise kernel (kernels/depthwise.h):
  // with Ember's kernels on, of that shape, its result requantized for readers that take uint8
  // (then it reads uint8 too, on any instruction set from AVX2 up).
  bool own_quant_depthwise(const OpDesc& op);
  // oneDNN post-ops for `post` (all of them: the caller knows none needs Ember's NaN rules).
  static dnnl::post_ops onednn_post_ops(std::span<const PostOp> post);
  // Whether Winograd is exact for `op` at every input within kWinogradMaxInput: its weight and
  // bias are constants within kWinogradMaxWeight, and its input channels few enough.
  bool winograd_safe(const OpDesc& op, int64_t in_channels);
  // `view_of_w` (tensor `id`) in the primitive's weight layout: reordered once now for a weight,
  // or at every call for a runtime tensor.
  memory reorder_weight(const memory& view_of_w, int32_t id, const memory::desc& want);
  void build_matmul(const OpDesc& op, dt wdt);
  // A matmul of one row by a constant matrix (a classifier, a decode step's projections) through
  // Ember's packed GEMM: it streams the weight at twice oneDNN 2.6's bandwidth (packed_gemm.h);
  // of several rows (a linear layer over a sequence) where own_linear_kernels_chosen() (AVX2).
  // The bias, a leading residual sum and a clamp happen in the kernel; other element-wise
  // post-ops follow as steps on its output. False (nothing built) when it does not apply.
  bool try_matvec(const OpDesc& op, const memory::dims& ad, const memory::dims& bd,
                  const memory::dims& od);
  // A MatMul of two operands on int8 grids (op.matmul(): their parameters) in integers, u8 x s8 on
  // oneDNN, where the CPU has VNNI and int8 is on; post-ops as build_matmul's. False (nothing
  // built) otherwise: the float matmul of the dequantized values is the reference's.
  bool try_int8_matmul(const OpDesc& op, const memory::dims& ad, const memory::dims& bd,
                       const memory::dims& od);
  void build_pool(const OpDesc& op);
  // A [C] f32 parameter of a normalization, or an empty memory.
  memory channel_param(int32_t id, int64_t channels);
  void build_layer_norm(const OpDesc& op);
  // A Reduce by oneDNN's reduction; a Slice as a copy of a sub-block of its source.
  void build_reduce(const OpDesc& op);
  void build_slice(const OpDesc& op);
  // A Where by Ember's kernel (where_broadcast).
  void build_where(const OpDesc& op);
  void build_batch_norm(const OpDesc& op);

 public:
  void prepare_outputs() { direct_out_.assign(graph_.outputs.size(), false); }
  DelegateSummary summary() const;

 private:
  CpuGraph graph_;
  int threads_;
  bool winograd_;  // fp32 3x3 stride-1 convolutions through oneDNN's Winograd F(4x4, 3x3)
  // QuantConv in integers (oneDNN's u8 x s8 convolution): the "int8" spec, on a CPU with VNNI
  // (int8_any_weights_), whose dot products cannot saturate, or with weights within [-64, 63] from
  // AVX2 up; else the float convolution of the dequantized weight.
  bool int8_;
  bool int8_any_weights_;
  int int8_convolutions_ = 0;  // built so far (summary())
  int int8_matmuls_ = 0;
  // Tensors held as uint8 (int8 + 128, channels-last) by the step writing them (a quantized
  // convolution or add, a quantize), with their float scale and zero point; only steps that take
  // uint8 read them (readers_take_u8).
  std::map<int32_t, std::pair<float, float>> u8_tensors_;
  std::map<std::tuple<int32_t, float, float>, bool> readers_take_u8_;  // its answers so far
  // fp32 inverted residual blocks, depthwise and pointwise convolutions and matrix-vector
  // products through Ember's own AVX-512 kernels (kernels/inverted_residual.h, kernels/depthwise.h,
  // packed_gemm.h) where they apply
  bool own_kernels_;
  bool verbose_;  // EMBER_CPU_VERBOSE: a line per own-kernel step executed (layer_report.py)
  dnnl::engine engine_;
  dnnl::stream stream_;
  const NamedDataMap* named_ = nullptr;
  std::vector<memory> mem_;
  std::vector<memory> viewed_;  // the storage views were made of (see release_weights)
  std::vector<memory::desc> md_;
  std::vector<memory> out_mem_;
  std::vector<bool> direct_out_;
  std::vector<std::pair<memory, int>> bound_;  // caller buffers: memory -> argument index
  std::vector<memory::desc> arg_md_;           // per argument: the layout it must have
  std::vector<uint8_t> arg_is_tensor_;         // per argument: whether a tensor is bound to it
  std::vector<std::unique_ptr<Step>> steps_;
  MemoryAllocator* allocator_;
  size_t held_bytes_[3] = {};  // per Held but Transient (summary())
  size_t allocator_heap_ = 0;  // of the heap's growth during build, what allocator_ took
  size_t heap_bytes_ = 0;      // the rest (summary())
  memory scratch_;             // oneDNN's scratchpad and the working memory of Ember's kernels
  void* scratch_data_ = nullptr;
  size_t scratch_bytes_ = 0;
  int cur_op_ = 0;
  std::vector<int> last_use_;
  std::vector<int> readers_;  // per tensor: the ops reading it (inputs and sums)
  std::vector<bool> shares_storage_;
  std::vector<bool> feeds_only_bf16_math_;
  // Per tensor: read, and only by ops that take any plain strides (matmul operands, permutes,
  // reshapes), so a permute or reshape producing it may leave a strided view, not a copy.
  std::vector<bool> read_as_view_only_;
  struct Buffer {
    memory mem;
    size_t bytes;
    int live_until;  // the last op reading a tensor stored here
  };
  std::vector<Buffer> pool_;
  std::vector<int> buffer_of_;  // per tensor: its pool buffer, or -1
};

}  // namespace ember::cpu::delegate
