// The build of one step graph (graph/graph_format.h) into a cpu delegate (delegate.h): the
// state every op's builder shares, and the services they build with. Internal to the backend.
//
//   Build b(std::move(graph), threads, options, allocator);
//   Result<std::unique_ptr<CpuDelegate>> d = std::move(b).run(named_data);  // then d->execute()
//
// run() walks the ops in order: a fusion (families.h: several ops as one step) where one applies,
// else the builder of the op's family (builders.h). A builder reads its inputs with src_memory()
// or as(), creates its oneDNN primitive or Ember kernel, asks make_output() for its result's
// memory, and appends steps (add_primitive, add_reorder, add_own_step). Every service returns an
// Error or a Result: nothing here throws, and every call into oneDNN's C++ API (which throws) is
// inside a function that catches dnnl::error itself and returns it as an Error
// (`Result<T> f(Build& b, ...) try { ... } catch (const dnnl::error& e) { return
// b.onednn_error(e); }`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_runtime.h"
#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/onednn/layout.h"
#include "backends/cpu/onednn/own_steps.h"
#include "backends/cpu/onednn/step.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

namespace ember::cpu::delegate {

class CpuDelegate;

// Whether `p` is relu or hardtanh, as a clamp.
bool is_clamp(const PostOp& p, Clamp* c);
// Whether `p` is an element-wise op that oneDNN computes wrongly for some input: a clamp (relu and
// clip by max/min turn NaN into a bound), sigmoid (the reference logistic, which oneDNN runs after
// a convolution by GEMM and on a channel-padded layout, maps NaN to 0), the exact gelu or elu
// (gelu_erf and elu give +0.0 where ATen gives -0.0); or one oneDNN has no algorithm for
// (quantize, dequantize, rsqrt, neg). Such ops run as Ember's steps (exact.cc).
bool is_own_eltwise(const PostOp& p);

// InvalidProgram (or `code`) with `message` as this thread's error message; what builders return
// for a graph they cannot build: `return refused("convolution bias size differs ...");`.
Error refused(std::string_view message, Error code = Error::InvalidProgram);

// What a new buffer of the build holds, for where it comes from and the memory report.
enum class Held {
  Activations,  // written at every call: intermediates, uint8 copies of sources
  Scratchpad,   // oneDNN's and Ember's kernels' working memory, one for every step
  Weights,      // constants in the layout a step reads them in (reordered, rescaled)
  Transient,    // a weight as stored or dequantized, which a reorder or packing may drop at init
};

// Tensors the int8 steps hand to each other as uint8 (int8 + 128, channels-last), and the answers
// of readers_take_u8 so far (quant_chain.cc).
struct QuantChain {
  std::map<int32_t, std::pair<float, float>> u8_tensors;  // tensor -> (scale, zero point)
  std::map<std::tuple<int32_t, float, float>, bool> readers_take_u8;
};

// What the builds of one step graph share whatever their batch sizes (a dynamic batch is built
// once per size, runtime/cpu_runtime.cc): what a builder makes of an op's constant weights (a
// weight reordered into a primitive's layout, packed for Ember's kernels) depends on the op and
// those weights, not on the batch, so the first build that makes it leaves it here and the builds
// at other sizes take it (Build::shared). An entry is held weakly: it lives while a build that
// uses it does (the builds hold theirs; the build at the bounds, made at init, is never dropped).
// One build at a time uses it (a delegate runs one call at a time).
class SharedWeights {
 public:
  // The entry for (op, type, what, md), null when none is alive.
  std::shared_ptr<void> find(size_t op, const void* type, std::string_view what,
                             const memory::desc& md) const;
  void add(size_t op, const void* type, std::string what, const memory::desc& md,
           const std::shared_ptr<void>& value);

 private:
  struct Entry {
    size_t op;
    const void* type;
    std::string what;
    memory::desc md;
    std::weak_ptr<void> value;
  };
  std::vector<Entry> entries_;
};

// A distinct address per type T: what tells SharedWeights' entries of different types apart.
template <typename T>
const void* type_tag() {
  static const char marker = 0;
  return &marker;
}

class Build {
 public:
  // `allocator`: where the buffers the delegate keeps come from (activations, the scratchpad and
  // weights in their final layout), the method allocator at init; null: the heap (a build made
  // during a call, for a new batch size, and tests). Transient buffers always use the heap.
  // `shared`: the weights the graph's builds at other batch sizes made (null: none shared).
  // `scratch`: where activations and the scratchpad come from, from its start (the method's
  // delegates share it: they run one at a time), before `allocator`; null: `allocator`.
  Build(CpuGraph g, int threads, const DelegateOptions& options,
        MemoryAllocator* allocator = nullptr, SharedWeights* shared = nullptr,
        DelegateScratch* scratch = nullptr);
  Build(const Build&) = delete;
  Build& operator=(const Build&) = delete;

  // Builds every op, reading weights from `named`; the delegate, or the first error (its message
  // names the op).
  Result<std::unique_ptr<CpuDelegate>> run(const NamedDataMap* named) &&;

  // --- The graph and the switches -----------------------------------------------------------
  const CpuGraph& graph() const { return graph_; }
  const TensorDesc& tensor(int32_t id) const { return graph_.tensors[id]; }
  memory::dims dims_of(int32_t id) const { return to_dims(graph_.tensors[id].dims); }
  int threads() const { return threads_; }
  const dnnl::engine& engine() const { return engine_; }
  // f32, or bf16 in a bf16 program: what convolutions and matmuls compute in.
  dt math_type() const { return graph_.precision == Precision::Bf16 ? dt::bf16 : dt::f32; }
  const DelegateOptions& options() const { return options_; }
  // Ember's own kernels may take ops (the "ember_kernels" spec, fp32, a CPU from AVX2 up).
  bool own_kernels() const { return own_kernels_; }
  // Quantized convolutions and linears run in integers (the "int8" spec, weights within 7 bits
  // from AVX2 up); int8_any_weights(): any int8 weights (VNNI).
  bool int8() const { return int8_; }
  bool int8_any_weights() const { return int8_any_weights_; }
  // The index of the op being built.
  size_t current_op() const { return cur_op_; }
  // InvalidProgram naming the op being built and oneDNN's reason ("op 3: oneDNN refused it:
  // could not create a primitive descriptor ..."): what a builder's catch returns.
  Error onednn_error(const dnnl::error& e) const;

  // --- What the graph says of a tensor -------------------------------------------------------
  bool is_constant(int32_t t) const {
    return t < 0 || graph_.tensors[t].kind == TensorKind::Weight;
  }
  bool is_graph_output(int32_t t) const;
  // An intermediate that only op `reader` reads, and nothing else sees (not an output, not a
  // reshape's storage).
  bool private_to(int32_t t, size_t reader) const;
  // The ops reading tensor t (inputs and sums).
  int readers(int32_t t) const { return readers_[t]; }
  // Read only by convolutions and matmuls, which round it to bf16 first.
  bool feeds_only_bf16_math(int32_t t) const { return feeds_only_bf16_math_[t]; }
  // Read, and only by ops that take any plain strides (matmul operands, permutes, reshapes), so
  // a permute or reshape producing it may leave a strided view, not a copy.
  bool read_as_view_only(int32_t t) const { return read_as_view_only_[t]; }

  // Whether tensor t has a memory now (an input, a result built so far, a weight loaded).
  bool has_memory(int32_t t) const { return static_cast<bool>(mem_[t]); }

  // --- Memories ------------------------------------------------------------------------------
  // A new buffer of layout `md` (see Held), counted in the delegate's summary. The method
  // allocator running out is MemoryAllocationFailed naming the bytes.
  Result<memory> buffer(const memory::desc& md, Held held);
  // A transient buffer standing for weight `id` (a copy, reorder or dequantization of it), freed
  // when the build releases the weight unless a step reads it as it is. Large ones are on huge
  // pages: a model's weights pass through such buffers once, and their page faults were most of
  // an int8 ResNet-18's load.
  Result<memory> weight_buffer(int32_t id, const memory::desc& md);
  // The memory holding tensor `id` as the ops so far left it (a weight loaded the first time).
  Result<memory> src_memory(int32_t id);
  // Tensor `id` in layout `want`: itself, or a reorder of it (once, now, for a weight; a step at
  // every call otherwise).
  Result<memory> as(int32_t id, const memory::desc& want);
  // A view of `m` with descriptor `md` over the same storage (bound to the same argument when `m`
  // is a caller buffer).
  Result<memory> view(const memory& m, const memory::desc& md);
  // `view_of_w` (tensor `id`) in a primitive's weight layout: reordered once now for a weight,
  // or at every call for a runtime tensor.
  Result<memory> reorder_weight(const memory& view_of_w, int32_t id, const memory::desc& want);
  // Weight `id` as dense fp32 in PyTorch's layout (null for -1), kept alive in `keep`.
  Result<const float*> weight_data(int32_t id, std::vector<memory>* keep);
  // The output memory of `op` with layout `md`: the caller's output buffer when the op's result
  // is a delegate output in exactly that layout, the residual summand's buffer when it is dead
  // after this op, else a pooled buffer. A sum post-op's summand is copied in first where it is
  // not accumulated in place, so call this after the primitive descriptor exists and before
  // adding the primitive.
  Result<memory> make_output(const OpDesc& op, const memory::desc& md);
  // Makes view `v` (of op's source) op's output, and keeps the source's storage alive as long.
  void keep_as_view(const OpDesc& op, const memory& v);
  // Registers `m` as tensor t's memory, written by a step of the current op.
  void set_memory(int32_t t, const memory& m);
  // Weight `id` is now `m`, float32 of `dims` laid out in `dim_order` (a quantized weight
  // dequantized for a float fallback, which then reads it as any float weight).
  void replace_weight(int32_t id, const memory& m, std::vector<int64_t> dims,
                      std::vector<uint8_t> dim_order);
  // Storage for a value the current op's steps alone use, from the activation pool.
  Result<memory> scratch_activation(const memory::desc& md);
  // A pooled buffer of layout `md` for intermediate `t`, live until t's last reader.
  Result<memory> pooled(const memory::desc& md, int32_t t);
  // Tensor `t` lives in the same pooled storage as `with` (an in-place sum, a reshape view).
  void share_buffer(int32_t t, int32_t with);
  // The caller's buffer of delegate output `t` when no op has claimed it yet (the op writing t
  // then writes it there directly), else an empty memory.
  memory claim_output(int32_t t);
  // Where Ember's kernels pack their weights: buffer(..., Held::Weights). Where the method
  // allocator runs out, the packer gets heap storage (so it can finish) and storage_error() says
  // why: check it after packing.
  Storage weight_storage();
  Error storage_error() const { return storage_error_; }
  // InvalidProgram unless tensors a and b have the same dims.
  Error check_same_dims(int32_t a, int32_t b) const;
  // What the current op makes of its constant weights, `make()` (a Result<std::shared_ptr<T>>),
  // made once for all the graph's builds at their batch sizes (SharedWeights): taken from a
  // build at another size where one made it, else made now and shared. `what` (and `md`, a
  // layout) must name everything the value depends on besides the op and its constant inputs;
  // a value made here reads only weights and sizes that are not the batch's. The build (and the
  // delegate it makes) holds what it takes.
  template <typename T, typename Make>
  Result<std::shared_ptr<T>> shared(std::string_view what, Make&& make,
                                    const memory::desc& md = memory::desc()) {
    if (shared_ != nullptr) {
      if (std::shared_ptr<void> v = shared_->find(cur_op_, type_tag<T>(), what, md)) {
        shared_held_.push_back(v);
        return std::static_pointer_cast<T>(std::move(v));
      }
    }
    Result<std::shared_ptr<T>> made = make();
    if (!made.ok()) return made.error();
    std::shared_ptr<T> v = std::move(*made);
    if (shared_ != nullptr) {
      shared_->add(cur_op_, type_tag<T>(), std::string(what), md, v);
      shared_held_.push_back(v);
    }
    return v;
  }
  // reorder_weight of constant weight `id` into `want` for the current op, shared between the
  // graph's builds (as shared() is) where the reorder makes a buffer of its own; `view_of_w`
  // gives the weight as the op reads it (src_memory, or a view of it), called only where no
  // build at another size made the reorder (so the weight is not even loaded then).
  Result<memory> shared_weight_reorder(int32_t id, const memory::desc& want, std::string_view what,
                                       const std::function<Result<memory>()>& view_of_w);

  // --- Steps ---------------------------------------------------------------------------------
  // Appends a step (the shared scratchpad grows to what it needs).
  void add(std::unique_ptr<Step> step);
  // A oneDNN primitive of `pd` over `args`.
  template <typename Prim, typename PD>
  Error add_primitive(const PD& pd, StepArgs args) try {
    add(std::make_unique<PrimitiveStep>(Prim(pd), std::move(args), scratch_bytes(pd)));
    return Error::Ok;
  } catch (const dnnl::error& e) {
    return onednn_error(e);
  }

  // The bytes of scratchpad a primitive of `pd` needs (its user scratchpad).
  template <typename PD>
  static size_t scratch_bytes(const PD& pd) {
    return pd.scratchpad_desc().get_size();
  }
  // A reorder from -> to at every call; reorder_now: once, now (weights; one of at most
  // kCopiedWeightElements float elements by copy_to_blocked, without a oneDNN primitive).
  Error add_reorder(const memory& from, const memory& to);
  Error reorder_now(const memory& from, const memory& to);
  // One of Ember's kernels as a step; `reads`: the memories it reads through its closure, whose
  // storage the build keeps (views of weights included).
  void add_own_step(OwnStep o, std::initializer_list<memory> reads = {});

  // --- Post-ops (is_clamp and is_own_eltwise are above the class) ----------------------------
  // The post-ops oneDNN runs inside the op's primitive: those before the first one Ember runs
  // itself (is_own_eltwise, above); the rest become steps of their own (add_post_op_steps).
  static std::span<const PostOp> fused_post_ops(const OpDesc& op);
  // A primitive's attributes: the user scratchpad and fused_post_ops(op).
  Result<dnnl::primitive_attr> attr_for(const OpDesc& op);
  // oneDNN post-ops for all of `post` (the caller knows none needs Ember's NaN rules).
  static Result<dnnl::post_ops> onednn_post_ops(std::span<const PostOp> post);

  // --- Shared state of the int8 steps (quant_chain.cc) ---------------------------------------
  QuantChain& quant_chain() { return quant_; }
  // Counted for the delegate's summary.
  void count_int8_convolution() { ++int8_convolutions_; }
  void count_int8_matmul() { ++int8_matmuls_; }

 private:
  // Whether `m` is a caller buffer (bound at execute), and which argument.
  int bound_arg(const memory& m) const;
  void bind(const memory& m, int arg);
  // A weight's bytes: read in place from the named data (the mapped file) where its storage is
  // aligned and as large as the tensor, else copied into a buffer of the build.
  Error load_weight(int32_t id);
  // Drops the build's hold on the weights that ops [begin, end) were the last to read: a weight
  // a step reads as it is stays alive through the step; one that was only reordered or packed
  // into another buffer is freed now (the peak of init is one copy more, not all).
  void release_weights(size_t begin, size_t end);
  // Whether a step built so far reads or writes memory in [data, data + size): what decides which
  // storage (weights read in place, weight buffers, what views were made of) the delegate keeps.
  bool step_reads(const uint8_t* data, size_t size);
  // The op reading each tensor last, which tensors share storage (reshape views), and the
  // per-tensor facts above.
  void compute_last_uses();
  // Whether the op being built may accumulate into tensor `t`'s own buffer.
  bool can_sum_in_place(const OpDesc& op, int32_t t, const memory::desc& md) const;
  Result<int> free_buffer(const memory::desc& md, int live_until);
  // The delegate's inputs and outputs bound, every op built, the outputs written.
  Error build_all();
  // Held::Weights for a weight, Held::Activations for anything else.
  Held held_for(int32_t id) const {
    return graph_.tensors[id].kind == TensorKind::Weight ? Held::Weights : Held::Activations;
  }

  CpuGraph graph_;
  int threads_;
  DelegateOptions options_;
  bool int8_;
  bool int8_any_weights_;
  bool own_kernels_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  MemoryAllocator* allocator_;
  DelegateScratch* scratch_;
  size_t scratch_used_ = 0;  // bytes of scratch_ this build's buffers take, from its start
  SharedWeights* shared_;
  std::vector<std::shared_ptr<void>> shared_held_;  // what shared() gave this build
  const NamedDataMap* named_ = nullptr;
  QuantChain quant_;
  int int8_convolutions_ = 0;
  int int8_matmuls_ = 0;
  std::vector<memory> mem_;
  std::vector<memory> viewed_;  // the storage views were made of (see release_weights)
  // Storage a weight is read from, by the weight: named data read in place (load_weight), and
  // weight_buffer's; release_weights moves what a step still reads to mapped_kept_ and frees the
  // rest.
  std::multimap<int32_t, FreeableBuffer> mapped_;
  std::vector<FreeableBuffer> mapped_kept_;
  size_t steps_scanned_ = 0;         // of steps_, those whose handles are in step_handles_
  std::vector<void*> step_handles_;  // sorted
  std::vector<memory::desc> md_;
  std::vector<memory> out_mem_;
  std::vector<bool> direct_out_;
  std::vector<std::pair<memory, int>> bound_;  // caller buffers: memory -> argument index
  std::vector<memory::desc> arg_md_;           // per argument: the layout it must have
  std::vector<uint8_t> arg_is_tensor_;         // per argument: whether a tensor is bound to it
  std::vector<std::unique_ptr<Step>> steps_;
  size_t held_bytes_[3] = {};  // per Held but Transient
  size_t scratch_bytes_ = 0;
  Error storage_error_ = Error::Ok;
  size_t cur_op_ = 0;
  std::vector<int> last_use_;
  std::vector<int> readers_;
  std::vector<bool> shares_storage_;
  std::vector<bool> feeds_only_bf16_math_;
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
