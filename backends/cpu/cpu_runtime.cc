#include "backends/cpu/cpu_runtime.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu/graph_format.h"
#include "backends/cpu/own_steps.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/platform/cpu_isa.h"
#include "runtime/platform/thread_pool.h"

namespace ember::cpu {
namespace {

using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// A runtime failure inside init, turned into an Error at the boundary.
struct InitError {
  Error code;
  std::string message;
};

[[noreturn]] void refuse(std::string message, Error code = Error::InvalidProgram) {
  throw InitError{code, std::move(message)};
}

memory::dims to_dims(const std::vector<int64_t>& d) { return memory::dims(d.begin(), d.end()); }

// Strides of a dense tensor whose dims are laid out in `order` (outermost first; empty: in order).
memory::dims dense_strides(const memory::dims& dims, const std::vector<uint8_t>& order) {
  memory::dims strides(dims.size(), 1);
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const size_t d = order.empty() ? k : order[k];
    strides[d] = s;
    s *= std::max<int64_t>(dims[d], 1);
  }
  return strides;
}

memory::desc plain_md(const memory::dims& dims, dt type, const std::vector<uint8_t>& order = {}) {
  if (dims.empty()) return memory::desc(memory::dims{1}, type, memory::dims{1});
  return memory::desc(dims, type, dense_strides(dims, order));
}

// `dims` right-aligned to `rank` with leading ones (broadcast operands, biases).
memory::dims pad_rank(const memory::dims& dims, size_t rank) {
  memory::dims out(rank > dims.size() ? rank - dims.size() : 0, 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

dnnl::algorithm eltwise_alg(EltwiseAlg a) {
  switch (a) {
    case EltwiseAlg::Relu:
      return dnnl::algorithm::eltwise_relu;
    case EltwiseAlg::Clip:
      return dnnl::algorithm::eltwise_clip_v2;
    case EltwiseAlg::GeluErf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case EltwiseAlg::GeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case EltwiseAlg::Swish:
      return dnnl::algorithm::eltwise_swish;
    case EltwiseAlg::Logistic:
      return dnnl::algorithm::eltwise_logistic;
    case EltwiseAlg::Hardswish:
      return dnnl::algorithm::eltwise_hardswish;
    case EltwiseAlg::Elu:
      return dnnl::algorithm::eltwise_elu;
    case EltwiseAlg::Tanh:
      return dnnl::algorithm::eltwise_tanh;
  }
  return dnnl::algorithm::eltwise_relu;
}

// (alpha, beta) in oneDNN's terms for one of our element-wise ops.
std::pair<float, float> eltwise_params(EltwiseAlg a, float alpha, float beta) {
  switch (a) {
    case EltwiseAlg::Hardswish:
      return {1.f / 6.f, 0.5f};
    case EltwiseAlg::Swish:
      return {1.f, 0.f};
    case EltwiseAlg::Clip:
    case EltwiseAlg::Elu:
      return {alpha, beta};
    default:
      return {0.f, 0.f};
  }
}

constexpr uint64_t kMaxActivationBytes = uint64_t{4} << 30;

// A 3x3 convolution of at most this many channels (an image's: RGB, RGBA) before a depthwise block
// is fused into it as its stem: oneDNN runs such a convolution at half the FMA peak, and the
// image's reorder to channels-last and the 3x3's output (32 x 112 x 112 floats in MobileNetV2)
// never go to memory.
constexpr int64_t kMaxStemChannels = 4;

struct Step {
  dnnl::primitive prim;          // a oneDNN primitive, or
  std::function<void()> kernel;  // one of Ember's own kernels (own_steps.h): its kind, and for
  OwnKind own{};                 // EMBER_CPU_VERBOSE its name and problem
  std::string what;
  std::string problem;
  std::vector<std::pair<int, memory>> args;  // kept alive; c_args points into their handles
  std::vector<dnnl_exec_arg_t> c_args;
  bool uses_scratchpad = false;
};

class CpuDelegate {
 public:
  CpuDelegate(CpuGraph g, int threads, bool winograd, bool own_kernels)
      : graph_(std::move(g)),
        threads_(threads),
        winograd_(winograd),
        own_kernels_(own_kernels && graph_.precision == Precision::Fp32 && avx512_supported()),
        verbose_(std::getenv("EMBER_CPU_VERBOSE") != nullptr),
        engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        mem_(graph_.tensors.size()),
        md_(graph_.tensors.size()) {}

  void build(const NamedDataMap* named) {
    named_ = named;
    // The activations a delegate may hold (a corrupted size must not become a huge allocation).
    uint64_t activation_bytes = 0;
    for (const TensorDesc& t : graph_.tensors) {
      if (t.kind != TensorKind::Weight) {
        activation_bytes += static_cast<uint64_t>(checked_numel(t.dims)) * 4;
      }
    }
    if (activation_bytes > kMaxActivationBytes) {
      refuse("activations need " + std::to_string(activation_bytes) + " bytes, above the " +
                 std::to_string(kMaxActivationBytes) + " a cpu delegate may hold",
             Error::NotSupported);
    }
    const dt act = dt::f32;
    for (size_t i = 0; i < graph_.tensors.size(); ++i) {
      const TensorDesc& t = graph_.tensors[i];
      if (t.kind != TensorKind::Input) continue;
      md_[i] = plain_md(to_dims(t.dims), act, t.dim_order);
      mem_[i] = memory(md_[i], engine_, nullptr);
      bind(mem_[i], static_cast<int>(t.index));
    }
    // Outputs: the caller's buffers, in the dim order the program declares.
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      const TensorDesc& t = graph_.tensors[graph_.outputs[j]];
      memory::desc md = plain_md(to_dims(t.dims), act, graph_.output_dim_orders[j]);
      out_mem_.emplace_back(md, engine_, nullptr);
      bind(out_mem_.back(), static_cast<int>(graph_.num_inputs + j));
    }
    compute_last_uses();
    for (size_t i = 0; i < graph_.ops.size();) {
      cur_op_ = static_cast<int>(i);
      try {
        const size_t fused = own_kernels_ ? try_inverted_residual(i) : 0;
        if (fused == 0) build_op(graph_.ops[i]);
        const size_t next = i + std::max<size_t>(fused, 1);
        release_weights(i, next);
        i = next;
      } catch (const dnnl::error& e) {
        refuse("op " + std::to_string(i) + ": oneDNN refused it: " + e.what());
      }
    }
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      const int32_t t = graph_.outputs[j];
      if (direct_out_[j]) continue;
      add_reorder(src_memory(t), out_mem_[j]);
    }
    // Of the storage views were made of, keep what a step reads; weights only reordered or
    // packed elsewhere are freed with it (release_weights dropped the rest).
    std::vector<void*> used;
    for (const Step& s : steps_) {
      for (const auto& [arg, m] : s.args) used.push_back(m.get_data_handle());
    }
    std::sort(used.begin(), used.end());
    std::erase_if(viewed_, [&](const memory& m) {
      return !std::binary_search(used.begin(), used.end(), m.get_data_handle());
    });
    // One scratchpad for every primitive (they run one after another).
    scratch_ = memory(
        memory::desc({static_cast<int64_t>(std::max<size_t>(scratch_bytes_, 1))}, dt::u8, tag::a),
        engine_);
    for (Step& s : steps_) {
      if (s.uses_scratchpad) s.args.emplace_back(DNNL_ARG_SCRATCHPAD, scratch_);
      for (auto& [arg, m] : s.args) s.c_args.push_back({arg, m.get()});
    }
  }

  Error execute(std::span<EValue*> args) {
    if (args.size() != graph_.num_inputs + graph_.outputs.size()) {
      return fail(Error::InvalidArgument, "cpu delegate: %zu arguments, expected %zu", args.size(),
                  static_cast<size_t>(graph_.num_inputs + graph_.outputs.size()));
    }
    for (size_t a = 0; a < args.size(); ++a) {
      // A position without a tensor is a symbolic size a view read; the build has its value.
      if (a >= arg_md_.size() || !arg_is_tensor_[a]) continue;
      if (args[a] == nullptr || !args[a]->is_tensor()) {
        return fail(Error::InvalidArgument, "cpu delegate: argument %zu is not a tensor", a);
      }
      const Tensor& t = args[a]->to_tensor();
      const memory::desc& want = arg_md_[a];
      if (t.dtype() != ScalarType::Float || !same_layout(t, want) || t.data() == nullptr) {
        return fail(Error::InvalidArgument,
                    "cpu delegate: argument %zu is not the float32 tensor the delegate was "
                    "built for (sizes, dim order or storage differ)",
                    a);
      }
    }
    for (auto& [m, a] : bound_) m.set_data_handle(args[a]->to_tensor().mutable_data());
    if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
    for (Step& s : steps_) {
      if (s.kernel) {
        if (verbose_) {
          const auto t0 = std::chrono::steady_clock::now();
          s.kernel();
          const std::chrono::duration<double, std::milli> ms =
              std::chrono::steady_clock::now() - t0;
          // oneDNN's verbose line shape, on stdout as oneDNN's, so that the two interleave in
          // execution order (bench/layer_report.py reads both).
          std::printf("ember_verbose,exec,cpu,%s,,%s,%.4f\n", s.what.c_str(), s.problem.c_str(),
                      ms.count());
        } else {
          s.kernel();
        }
        continue;
      }
      const dnnl_status_t st = dnnl_primitive_execute(
          s.prim.get(), stream_.get(), static_cast<int>(s.c_args.size()), s.c_args.data());
      if (st != dnnl_success) {
        return fail(Error::Internal, "cpu delegate: oneDNN execution failed (status %d)",
                    static_cast<int>(st));
      }
    }
    if (dnnl_stream_wait(stream_.get()) != dnnl_success) {
      return fail(Error::Internal, "cpu delegate: oneDNN stream wait failed");
    }
    return Error::Ok;
  }

 private:
  static bool same_layout(const Tensor& t, const memory::desc& md) {
    const memory::dims dims = md.dims();
    const int rank = t.dim() == 0 ? 1 : t.dim();
    if (static_cast<int>(dims.size()) != rank) return false;
    if (t.dim() == 0) return dims[0] == 1;
    const auto& blk = md.data.format_desc.blocking;
    for (int i = 0; i < rank; ++i) {
      if (t.size(i) != dims[i]) return false;
      if (t.size(i) > 1 && t.stride(i) != blk.strides[i]) return false;
    }
    return true;
  }

  void bind(const memory& m, int arg) {
    bound_.emplace_back(m, arg);
    if (static_cast<size_t>(arg) >= arg_md_.size()) {
      arg_md_.resize(arg + 1);
      arg_is_tensor_.resize(arg + 1, 0);
    }
    arg_md_[arg] = m.get_desc();
    arg_is_tensor_[arg] = 1;
  }
  // Whether `m` is a caller buffer (bound at execute), and which argument.
  int bound_arg(const memory& m) const {
    for (const auto& [b, a] : bound_) {
      if (b.get() == m.get()) return a;
    }
    return -1;
  }

  // A view of `m` with descriptor `md` over the same storage (bound to the same argument when `m`
  // is a caller buffer).
  memory view(const memory& m, const memory::desc& md) {
    const int a = bound_arg(m);
    if (a >= 0) {
      memory v(md, engine_, nullptr);
      bound_.emplace_back(v, a);
      return v;
    }
    viewed_.push_back(m);  // a view does not own its storage: this does (see build)
    return memory(md, engine_, m.get_data_handle());
  }

  void load_weight(int32_t id) {
    const TensorDesc& t = graph_.tensors[id];
    const WeightRef& w = graph_.weights[t.index];
    if (named_ == nullptr) refuse("no named data for weight '" + w.key + "'", Error::NotFound);
    md_[id] = plain_md(to_dims(t.dims), dt::f32, t.dim_order);
    mem_[id] = memory(md_[id], engine_);
    if (md_[id].get_size() != w.nbytes) refuse("weight '" + w.key + "' has the wrong size");
    const Error e = named_->load_data_into(w.key, mem_[id].get_data_handle(), w.nbytes);
    if (e != Error::Ok) {
      refuse("weight '" + w.key + "': " + last_error_message(), Error::NotFound);
    }
  }

  // Drops the delegate's hold on the weights that ops [begin, end) were the last to read: a
  // weight a step reads as it is stays alive through the step; one that was only reordered or
  // packed into another buffer is freed now (the peak of init is one copy more, not all).
  void release_weights(size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      for (int32_t t : graph_.ops[i].inputs) {
        if (t >= 0 && graph_.tensors[t].kind == TensorKind::Weight &&
            last_use_[t] < static_cast<int>(end)) {
          mem_[t] = memory();
        }
      }
    }
  }

  // The memory holding tensor `id` as the ops so far left it.
  memory src_memory(int32_t id) {
    if (!mem_[id]) {
      if (graph_.tensors[id].kind != TensorKind::Weight) refuse("tensor read before defined");
      load_weight(id);
    }
    return mem_[id];
  }

  // Tensor `id` in layout `want`: itself, or a reorder of it (once, now, for a weight; a step
  // at every call otherwise).
  memory as(int32_t id, const memory::desc& want) {
    memory m = src_memory(id);
    if (m.get_desc() == want) return m;
    memory out(want, engine_);
    if (graph_.tensors[id].kind == TensorKind::Weight) {
      reorder_now(m, out);
    } else {
      add_reorder(m, out);
    }
    return out;
  }

  // Runs a reorder at init (weights: once, never again).
  void reorder_now(memory from, memory to) {
    dnnl::reorder(from, to).execute(stream_, from, to);
    stream_.wait();
  }

  void add_reorder(const memory& from, const memory& to) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::reorder::primitive_desc pd(engine_, from.get_desc(), engine_, to.get_desc(), attr);
    Step s;
    s.prim = dnnl::reorder(pd);
    s.args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    note_scratchpad(pd, &s);
    steps_.push_back(std::move(s));
  }

  template <typename PD>
  void note_scratchpad(const PD& pd, Step* s) {
    const size_t bytes = pd.scratchpad_desc().get_size();
    if (bytes > 0) {
      scratch_bytes_ = std::max(scratch_bytes_, bytes);
      s->uses_scratchpad = true;
    }
  }

  memory::dims dims_of(int32_t id) const { return to_dims(graph_.tensors[id].dims); }

  dnnl::primitive_attr attr_for(const OpDesc& op) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops po;
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum) {
        po.append_sum(1.f);
      } else {
        auto [a, b] = eltwise_params(p.alg, p.alpha, p.beta);
        po.append_eltwise(1.f, eltwise_alg(p.alg), a, b);
      }
    }
    attr.set_post_ops(po);
    return attr;
  }

  // The op reading each tensor last (delegate outputs: never dead), and which tensors share
  // storage with another (reshape views), for in-place residual sums.
  void compute_last_uses() {
    last_use_.assign(graph_.tensors.size(), -1);
    readers_.assign(graph_.tensors.size(), 0);
    buffer_of_.assign(graph_.tensors.size(), -1);
    shares_storage_.assign(graph_.tensors.size(), false);
    for (size_t i = 0; i < graph_.ops.size(); ++i) {
      const OpDesc& op = graph_.ops[i];
      for (int32_t t : op.inputs) {
        if (t >= 0) last_use_[t] = static_cast<int>(i);
        if (t >= 0) ++readers_[t];
      }
      for (const PostOp& p : op.post_ops) {
        if (p.is_sum) last_use_[p.tensor] = static_cast<int>(i);
        if (p.is_sum) ++readers_[p.tensor];
      }
      if (op.kind == OpKind::Reshape) {
        shares_storage_[op.inputs[0]] = true;
        shares_storage_[op.output] = true;
      }
    }
    for (int32_t t : graph_.outputs) last_use_[t] = std::numeric_limits<int>::max();
    // Read only as the source of convolutions and matmuls (which round it to bf16 first).
    feeds_only_bf16_math_.assign(graph_.tensors.size(), true);
    for (const OpDesc& op : graph_.ops) {
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const int32_t t = op.inputs[k];
        if (t < 0) continue;
        const bool src = k == 0 && (op.kind == OpKind::Conv || op.kind == OpKind::MatMul);
        if (!src) feeds_only_bf16_math_[t] = false;
      }
      for (const PostOp& p : op.post_ops) {
        if (p.is_sum) feeds_only_bf16_math_[p.tensor] = false;
      }
      if (op.kind == OpKind::Reshape || op.kind == OpKind::Permute) {
        feeds_only_bf16_math_[op.inputs[0]] = false;
      }
    }
    for (int32_t t : graph_.outputs) feeds_only_bf16_math_[t] = false;
  }

  // Whether the op being built may accumulate into tensor `t`'s own buffer: an intermediate of
  // its own storage, in layout `md`, that nothing reads afterwards and the op does not read.
  bool can_sum_in_place(const OpDesc& op, int32_t t, const memory::desc& md) const {
    if (graph_.tensors[t].kind != TensorKind::Intermediate || shares_storage_[t] ||
        last_use_[t] != cur_op_ || !mem_[t] || mem_[t].get_desc() != md ||
        bound_arg(mem_[t]) >= 0) {
      return false;
    }
    return std::find(op.inputs.begin(), op.inputs.end(), t) == op.inputs.end();
  }

  // Storage for intermediate `t` with layout `md`: a buffer of the pool no live tensor uses
  // (best fit), or a new one. A buffer is live until the last reader of every tensor in it.
  memory pooled(const memory::desc& md, int32_t t) {
    const size_t bytes = std::max<size_t>(md.get_size(), 1);
    int best = -1;
    for (size_t b = 0; b < pool_.size(); ++b) {
      if (pool_[b].live_until < cur_op_ && pool_[b].bytes >= bytes &&
          (best < 0 || pool_[b].bytes < pool_[best].bytes)) {
        best = static_cast<int>(b);
      }
    }
    if (best < 0) {
      memory::desc raw({static_cast<int64_t>(bytes)}, dt::u8, tag::a);
      pool_.push_back({memory(raw, engine_), bytes, -1});
      best = static_cast<int>(pool_.size() - 1);
    }
    pool_[best].live_until = last_use_[t];
    buffer_of_[t] = best;
    return memory(md, engine_, pool_[best].mem.get_data_handle());
  }

  // Tensor `t` lives in the same storage as `with` (an in-place sum, a reshape view).
  void share_buffer(int32_t t, int32_t with) {
    const int b = buffer_of_[with];
    if (b < 0) return;
    buffer_of_[t] = b;
    pool_[b].live_until = std::max(pool_[b].live_until, last_use_[t]);
  }

  // The output memory of `op` with descriptor `md`: the caller's output buffer when the op's
  // result is a delegate output in exactly that layout, the residual summand's buffer when it is
  // dead after this op, else a buffer of its own.
  memory make_output(const OpDesc& op, const memory::desc& md) {
    memory m;
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      if (graph_.outputs[j] == op.output && !direct_out_[j] && out_mem_[j].get_desc() == md) {
        direct_out_[j] = true;
        m = out_mem_[j];
        break;
      }
    }
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum && graph_.tensors[p.tensor].dims != graph_.tensors[op.output].dims) {
        refuse("sum post-op operand has the wrong shape");
      }
    }
    bool in_place = false;
    if (!m) {
      for (const PostOp& p : op.post_ops) {
        if (p.is_sum && can_sum_in_place(op, p.tensor, md)) {
          m = mem_[p.tensor];
          in_place = true;
        }
      }
    }
    if (in_place) {
      for (const PostOp& p : op.post_ops) {
        if (p.is_sum && mem_[p.tensor] == m) share_buffer(op.output, p.tensor);
      }
    }
    if (!m) m = pooled(md, op.output);
    md_[op.output] = md;
    mem_[op.output] = m;
    // Otherwise the residual summand is copied into the destination before the op accumulates.
    if (!in_place) {
      for (const PostOp& p : op.post_ops) {
        if (p.is_sum) add_reorder(src_memory(p.tensor), m);
      }
    }
    return m;
  }

  template <typename Prim, typename PD>
  void add_step(const PD& pd, std::vector<std::pair<int, memory>> args) {
    Step s;
    s.prim = Prim(pd);
    s.args = std::move(args);
    note_scratchpad(pd, &s);
    steps_.push_back(std::move(s));
  }

  void check_same_dims(int32_t a, int32_t b) {
    if (graph_.tensors[a].dims != graph_.tensors[b].dims) refuse("input and output shapes differ");
  }

  // Post-ops of the sum kind need the destination ready before the primitive runs; make_output
  // adds that copy, so it is called after the primitive descriptor exists and before add_step.
  void build_op(const OpDesc& op) {
    const dt wdt = graph_.precision == Precision::Bf16 ? dt::bf16 : dt::f32;
    switch (op.kind) {
      case OpKind::Conv:
        return build_conv(op, wdt);
      case OpKind::MatMul:
        return build_matmul(op, wdt);
      case OpKind::Pool:
        return build_pool(op);
      case OpKind::Eltwise: {
        check_same_dims(op.inputs[0], op.output);
        memory src = src_memory(op.inputs[0]);
        auto [a, b] =
            eltwise_params(static_cast<EltwiseAlg>(op.ints[0]), op.floats[0], op.floats[1]);
        dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference,
                                      eltwise_alg(static_cast<EltwiseAlg>(op.ints[0])),
                                      src.get_desc(), a, b);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        dnnl::eltwise_forward::primitive_desc pd(d, attr, engine_);
        memory dst = make_output(op, pd.dst_desc());
        add_step<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
        return;
      }
      case OpKind::Binary: {
        check_same_dims(op.inputs[0], op.output);
        memory a = src_memory(op.inputs[0]);
        const memory::dims ad = dims_of(op.inputs[0]);
        const size_t rank = ad.size();
        const memory::dims bd = pad_rank(to_dims(graph_.tensors[op.inputs[1]].dims), rank);
        if (bd.size() != rank) refuse("binary operand of higher rank");
        for (size_t i = 0; i < rank; ++i) {
          if (bd[i] != 1 && bd[i] != ad[i]) refuse("binary operand does not broadcast");
        }
        // An operand of the result's rank takes its layout; one of lower rank (a [16] weight
        // times a [1, 1, 16] activation) is viewed at the result's rank first: a reorder cannot
        // change the rank.
        const bool same_rank = dims_of(op.inputs[1]).size() == rank;
        memory b = bd == ad && same_rank
                       ? as(op.inputs[1], a.get_desc())
                       : view(as(op.inputs[1], plain_md(dims_of(op.inputs[1]), dt::f32)),
                              plain_md(bd, dt::f32));
        const auto alg = static_cast<BinaryAlg>(op.ints[0]) == BinaryAlg::Add
                             ? dnnl::algorithm::binary_add
                             : dnnl::algorithm::binary_mul;
        dnnl::binary::desc d(alg, a.get_desc(), b.get_desc(), a.get_desc());
        dnnl::binary::primitive_desc pd(d, attr_for(op), engine_);
        memory dst = make_output(op, pd.dst_desc());
        add_step<dnnl::binary>(pd, {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, dst}});
        return;
      }
      case OpKind::Softmax: {
        check_same_dims(op.inputs[0], op.output);
        const memory::dims d0 = dims_of(op.inputs[0]);
        if (op.ints[0] >= static_cast<int64_t>(std::max<size_t>(d0.size(), 1))) {
          refuse("softmax axis out of range");
        }
        memory src = as(op.inputs[0], plain_md(d0, dt::f32));
        dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                      static_cast<int>(op.ints[0]));
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        dnnl::softmax_forward::primitive_desc pd(d, attr, engine_);
        memory dst = make_output(op, pd.dst_desc());
        add_step<dnnl::softmax_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
        return;
      }
      case OpKind::LayerNorm:
        return build_layer_norm(op);
      case OpKind::BatchNorm:
        return build_batch_norm(op);
      case OpKind::Concat: {
        const memory::dims od = dims_of(op.output);
        const auto axis = static_cast<size_t>(op.ints[0]);
        if (axis >= od.size()) refuse("concat axis out of range");
        int64_t along = 0;
        for (int32_t in : op.inputs) {
          const memory::dims d = dims_of(in);
          if (d.size() != od.size()) refuse("concat ranks differ");
          for (size_t i = 0; i < d.size(); ++i) {
            if (i != axis && d[i] != od[i]) refuse("concat sizes differ");
          }
          along += d[axis];
        }
        if (along != od[axis]) refuse("concat output size disagrees");
        std::vector<memory> srcs;
        std::vector<memory::desc> mds;
        for (int32_t in : op.inputs) {
          srcs.push_back(src_memory(in));
          mds.push_back(srcs.back().get_desc());
        }
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        dnnl::concat::primitive_desc pd(memory::desc(od, dt::f32, tag::any),
                                        static_cast<int>(op.ints[0]), mds, engine_, attr);
        memory dst = make_output(op, pd.dst_desc());
        std::vector<std::pair<int, memory>> args = {{DNNL_ARG_DST, dst}};
        for (size_t i = 0; i < srcs.size(); ++i) {
          args.emplace_back(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]);
        }
        add_step<dnnl::concat>(pd, std::move(args));
        return;
      }
      case OpKind::Reshape: {
        const TensorDesc& s = graph_.tensors[op.inputs[0]];
        const TensorDesc& o = graph_.tensors[op.output];
        if (checked_numel(s.dims) != checked_numel(o.dims)) refuse("reshape changes the size");
        // Row-major bytes of the source, reinterpreted with the new sizes.
        memory src = src_memory(op.inputs[0]);
        const memory::desc plain_src = plain_md(to_dims(s.dims), dt::f32);
        memory dense;
        if (src.get_desc() == plain_src && s.kind == TensorKind::Intermediate) {
          dense = src;
        } else {
          dense = memory(plain_src, engine_);
          if (s.kind == TensorKind::Weight) {
            reorder_now(src, dense);
          } else {
            add_reorder(src, dense);
          }
        }
        md_[op.output] = plain_md(to_dims(o.dims), dt::f32);
        mem_[op.output] = view(dense, md_[op.output]);
        if (dense == src) share_buffer(op.output, op.inputs[0]);
        return;
      }
      case OpKind::Permute: {
        const TensorDesc& s = graph_.tensors[op.inputs[0]];
        const TensorDesc& o = graph_.tensors[op.output];
        if (op.ints.size() != s.dims.size()) refuse("permutation of the wrong rank");
        const memory::dims sd = to_dims(s.dims);
        memory src = as(op.inputs[0], plain_md(sd, dt::f32));
        const memory::dims ss = dense_strides(sd, {});
        memory::dims vd, vs;
        for (int64_t p : op.ints) {
          vd.push_back(sd[p]);
          vs.push_back(ss[p]);
        }
        if (vd != to_dims(o.dims)) refuse("permute output shape mismatch");
        memory permuted = view(src, memory::desc(vd, dt::f32, vs));
        memory::desc out_md = plain_md(vd, dt::f32);
        memory dst;
        for (size_t j = 0; j < graph_.outputs.size() && !dst; ++j) {
          if (graph_.outputs[j] == op.output && !direct_out_[j]) {
            direct_out_[j] = true;
            dst = out_mem_[j];
            out_md = dst.get_desc();
          }
        }
        if (!dst) dst = memory(out_md, engine_);
        add_reorder(permuted, dst);
        md_[op.output] = out_md;
        mem_[op.output] = dst;
        return;
      }
    }
  }

  // --- Ember's fused inverted residual block (backends/cpu/inverted_residual.h) ---------------

  // The conv ints of a plain 2-D convolution with a square kernel `k` (weight dims [o, i, k, k]),
  // equal strides, padding (k - 1) / 2 on every side and no dilation; its stride, or 0 when `op`
  // is anything else.
  int64_t plain_conv2d_stride(const OpDesc& op, int64_t k) const {
    if (op.kind != OpKind::Conv || op.ints.size() != 13 || op.ints[0] != 2 || op.ints[2] != 0) {
      return 0;
    }
    const std::vector<int64_t>& wd = graph_.tensors[op.inputs[1]].dims;
    const int64_t pad = (k - 1) / 2;
    const bool ok = wd.size() == 4 && wd[2] == k && wd[3] == k && op.ints[3] == op.ints[4] &&
                    op.ints[5] == pad && op.ints[6] == pad && op.ints[7] == pad &&
                    op.ints[8] == pad && op.ints[9] == 1 && op.ints[10] == 1;
    return ok ? op.ints[3] : 0;
  }

  bool is_constant(int32_t t) const {
    return t < 0 || graph_.tensors[t].kind == TensorKind::Weight;
  }

  // An intermediate that only op `reader` reads, and nothing else sees (not an output, not a
  // reshape's storage).
  bool private_to(int32_t t, size_t reader) const {
    return graph_.tensors[t].kind == TensorKind::Intermediate && readers_[t] == 1 &&
           last_use_[t] == static_cast<int>(reader) && !shares_storage_[t];
  }

  // `post` as one clamp (nothing, relu, or clip), with `*sum` set to the summand of a leading
  // sum when `sum` is given. False for anything else.
  static bool as_clamp(const std::vector<PostOp>& post, Clamp* c, int32_t* sum = nullptr) {
    size_t k = 0;
    if (sum != nullptr) {
      *sum = -1;
      if (!post.empty() && post[0].is_sum) *sum = post[k++].tensor;
    }
    if (k == post.size()) return true;
    if (k + 1 != post.size() || post[k].is_sum) return false;
    if (post[k].alg == EltwiseAlg::Relu && post[k].alpha == 0.f) {
      c->lo = 0.f;
      return true;
    }
    if (post[k].alg == EltwiseAlg::Clip) {
      c->lo = post[k].alpha;
      c->hi = post[k].beta;
      return true;
    }
    return false;
  }

  // Weight `id` as dense fp32 in PyTorch's layout (null for -1), kept alive in `keep` (a reorder
  // of it is a new buffer).
  const float* weight_data(int32_t id, std::vector<memory>* keep) {
    if (id < 0) return nullptr;
    keep->push_back(as(id, plain_md(dims_of(id), dt::f32)));
    return static_cast<const float*>(keep->back().get_data_handle());
  }

  // Ops i.. as [1x1 expand | 3x3 stem] -> 3x3 depthwise -> 1x1 project, run as one
  // InvertedResidual step; the number of ops it replaced, or 0 (they are then built one by one).
  size_t try_inverted_residual(size_t i) {
    const std::vector<OpDesc>& ops = graph_.ops;
    size_t at = i;
    const OpDesc* expand = nullptr;
    const OpDesc* stem = nullptr;  // MobileNet's first convolution, of an image
    const int64_t stem_stride = plain_conv2d_stride(ops[at], 3);
    if (plain_conv2d_stride(ops[at], 1) == 1 && ops[at].ints[1] == 1) {
      expand = &ops[at++];
    } else if ((stem_stride == 1 || stem_stride == 2) && ops[at].ints[1] == 1 &&
               graph_.tensors[ops[at].inputs[1]].dims[1] <= kMaxStemChannels) {
      stem = &ops[at++];
    }
    const OpDesc* first = expand != nullptr ? expand : stem;  // null: the depthwise op
    if (at + 1 >= ops.size()) return 0;
    const OpDesc& dw = ops[at];
    const OpDesc& project = ops[at + 1];
    const int64_t stride = plain_conv2d_stride(dw, 3);
    if ((stride != 1 && stride != 2) || plain_conv2d_stride(project, 1) != 1 ||
        project.ints[1] != 1 || project.inputs[0] != dw.output || !private_to(dw.output, at + 1)) {
      return 0;
    }
    const std::vector<int64_t>& sd = graph_.tensors[(first ? first : &dw)->inputs[0]].dims;
    const std::vector<int64_t>& ed = graph_.tensors[dw.inputs[0]].dims;
    const std::vector<int64_t>& od = graph_.tensors[project.output].dims;
    const int64_t ce = ed.size() == 4 ? ed[1] : 0;
    if (sd.size() != 4 || ce < 1 || dw.ints[1] != ce ||
        graph_.tensors[dw.inputs[1]].dims[0] != ce || graph_.tensors[dw.inputs[1]].dims[1] != 1) {
      return 0;
    }
    InvertedResidual::Params p;
    if (first != nullptr) {
      if (first->output != dw.inputs[0] || !private_to(first->output, at) ||
          !is_constant(first->inputs[1]) || !is_constant(first->inputs[2]) ||
          !as_clamp(first->post_ops, &p.expand_act)) {
        return 0;
      }
    }
    int32_t residual = -1;
    if (!is_constant(dw.inputs[1]) || !is_constant(dw.inputs[2]) ||
        !is_constant(project.inputs[1]) || !is_constant(project.inputs[2]) ||
        !as_clamp(dw.post_ops, &p.dw_act) ||
        !as_clamp(project.post_ops, &p.project_act, &residual)) {
      return 0;
    }
    if (residual >= 0 && graph_.tensors[residual].dims != od) return 0;
    // Only where the expanded tensor of one image outgrows a core's L2 cache: smaller, oneDNN's
    // three convolutions keep it in L2 and are as fast or faster (docs/backends/cpu.md).
    if (ce * ed[2] * ed[3] * static_cast<int64_t>(sizeof(float)) < l2_cache_bytes()) return 0;
    // The sizes were checked against each other when the blob was parsed only as far as the
    // graph format goes; the kernel trusts them, so every one is checked here.
    p.batch = sd[0];
    p.cin = sd[1];
    p.h = sd[2];
    p.w = sd[3];
    if (stem != nullptr) {
      p.stem_stride = stem_stride;
      p.image_h = sd[2];
      p.image_w = sd[3];
      p.h = (sd[2] - 1) / stem_stride + 1;
      p.w = (sd[3] - 1) / stem_stride + 1;
    }
    p.ce = ce;
    p.cout = od.size() == 4 ? od[1] : 0;
    p.stride = stride;
    const int64_t oh = (p.h - 1) / stride + 1, ow = (p.w - 1) / stride + 1;
    const std::vector<int64_t> want_e = {p.batch, ce, p.h, p.w};
    const std::vector<int64_t> want_o = {p.batch, p.cout, oh, ow};
    const std::vector<int64_t> want_d = {p.batch, ce, oh, ow};
    if (p.h < 1 || p.w < 1 || ed != want_e || od != want_o ||
        graph_.tensors[dw.output].dims != want_d ||
        graph_.tensors[project.inputs[1]].dims != std::vector<int64_t>{p.cout, ce, 1, 1} ||
        (first == nullptr ? p.cin != ce
                          : graph_.tensors[first->inputs[1]].dims !=
                                std::vector<int64_t>{ce, p.cin, stem ? 3 : 1, stem ? 3 : 1})) {
      return 0;
    }
    for (const OpDesc* op : {first, &dw, &project}) {
      if (op != nullptr && op->inputs[2] >= 0 &&
          checked_numel(graph_.tensors[op->inputs[2]].dims) !=
              graph_.tensors[op->inputs[1]].dims[0]) {
        return 0;
      }
    }
    std::vector<memory> keep;  // until the kernel has packed its copy
    if (expand != nullptr) {
      p.expand_w = weight_data(expand->inputs[1], &keep);
      p.expand_b = weight_data(expand->inputs[2], &keep);
    } else if (stem != nullptr) {
      p.stem_w = weight_data(stem->inputs[1], &keep);
      p.stem_b = weight_data(stem->inputs[2], &keep);
    }
    p.dw_w = weight_data(dw.inputs[1], &keep);
    p.dw_b = weight_data(dw.inputs[2], &keep);
    p.project_w = weight_data(project.inputs[1], &keep);
    p.project_b = weight_data(project.inputs[2], &keep);
    auto kernel = std::make_shared<InvertedResidual>(p, threads_);
    const int32_t in_id = (first ? first : &dw)->inputs[0];
    memory src = as(in_id, stem ? plain_md(to_dims(sd), dt::f32) : nhwc_md(sd));
    memory res = residual >= 0 ? as(residual, nhwc_md(od)) : memory();
    // cur_op_ is still i: the output's buffer is one that no tensor read by ops i.. uses (the
    // kernel reads its input and summand while it writes).
    const memory::desc out_md = nhwc_md(od);
    memory dst = pooled(out_md, project.output);
    md_[project.output] = out_md;
    mem_[project.output] = dst;
    add_own_step(inverted_residual_step(std::move(kernel), p, src, res, dst));
    return at + 2 - i;
  }

  static memory::desc nhwc_md(const std::vector<int64_t>& dims) {
    return plain_md(to_dims(dims), dt::f32, {0, 2, 3, 1});
  }

  void add_own_step(OwnStep o) {
    Step s;
    s.kernel = std::move(o.run);
    s.own = o.kind;
    s.what = std::move(o.what);
    s.problem = std::move(o.problem);
    steps_.push_back(std::move(s));
  }

  // A 3x3 depthwise convolution (padding 1, stride 1 or 2, channels a multiple of 16) with at
  // most a relu/clip after it, through Ember's kernel (depthwise.h): faster than oneDNN 2.6's,
  // and it splits the rows evenly between threads. False (nothing built) when it does not apply.
  bool try_depthwise(const OpDesc& op) {
    const int64_t stride = plain_conv2d_stride(op, 3);
    const std::vector<int64_t>& sd = graph_.tensors[op.inputs[0]].dims;
    const std::vector<int64_t>& wd = graph_.tensors[op.inputs[1]].dims;
    const std::vector<int64_t>& od = graph_.tensors[op.output].dims;
    Clamp act;
    if (stride == 0 || sd.size() != 4 || !Depthwise3x3::supports(sd[1], stride) ||
        op.ints[1] != sd[1] || wd[0] != sd[1] || wd[1] != 1 || !is_constant(op.inputs[1]) ||
        !is_constant(op.inputs[2]) || !as_clamp(op.post_ops, &act)) {
      return false;
    }
    if (sd[2] < 1 || sd[3] < 1 ||
        od != std::vector<int64_t>{sd[0], sd[1], (sd[2] - 1) / stride + 1,
                                   (sd[3] - 1) / stride + 1} ||
        (op.inputs[2] >= 0 && checked_numel(graph_.tensors[op.inputs[2]].dims) != sd[1])) {
      return false;
    }
    std::vector<memory> keep;  // until the kernel has copied the weights
    const float* w = weight_data(op.inputs[1], &keep);
    const float* b = weight_data(op.inputs[2], &keep);
    auto kernel =
        std::make_shared<Depthwise3x3>(sd[0], sd[2], sd[3], sd[1], stride, w, b, act, threads_);
    memory src = as(op.inputs[0], nhwc_md(sd));
    memory dst = make_output(op, nhwc_md(od));
    add_own_step(depthwise_step(std::move(kernel), sd[0], sd[2], sd[3], sd[1], stride, src, dst));
    return true;
  }

  // A 1x1 convolution (stride 1, no padding) of a channels-last tensor, with at most a leading
  // residual sum and a relu/clip, through the packed GEMM (packed_gemm.h). Only where its input
  // is channels-last already (MobileNet's blocks): it never adds a reorder. False (nothing
  // built) when it does not apply.
  bool try_pointwise(const OpDesc& op) {
    const std::vector<int64_t>& sd = graph_.tensors[op.inputs[0]].dims;
    const std::vector<int64_t>& wd = graph_.tensors[op.inputs[1]].dims;
    const std::vector<int64_t>& od = graph_.tensors[op.output].dims;
    Clamp act;
    int32_t sum = -1;
    if (plain_conv2d_stride(op, 1) != 1 || op.ints[1] != 1 || sd.size() != 4 ||
        !is_constant(op.inputs[1]) || !is_constant(op.inputs[2]) ||
        !as_clamp(op.post_ops, &act, &sum) || !mem_[op.inputs[0]] ||
        src_memory(op.inputs[0]).get_desc() != nhwc_md(sd)) {
      return false;
    }
    if (wd != std::vector<int64_t>{od.size() == 4 ? od[1] : 0, sd[1], 1, 1} ||
        od != std::vector<int64_t>{sd[0], wd[0], sd[2], sd[3]} ||
        (op.inputs[2] >= 0 && checked_numel(graph_.tensors[op.inputs[2]].dims) != wd[0])) {
      return false;
    }
    const int64_t k = sd[1], n = wd[0];
    std::vector<memory> keep;  // until packed
    auto packed = std::make_shared<PackedMatrix>(PackedMatrix::pack(
        weight_data(op.inputs[1], &keep), weight_data(op.inputs[2], &keep), k, n));
    memory src = src_memory(op.inputs[0]);
    memory res = sum >= 0 ? as(sum, nhwc_md(od)) : memory();
    // cur_op_ is this op: the output's buffer is not one its inputs use.
    const memory::desc out_md = nhwc_md(od);
    memory dst = pooled(out_md, op.output);
    md_[op.output] = out_md;
    mem_[op.output] = dst;
    add_own_step(
        pointwise_step(std::move(packed), sd[0], sd[2], sd[3], act, threads_, src, res, dst));
    return true;
  }

  void build_conv(const OpDesc& op, dt wdt) {
    if (own_kernels_ && (try_depthwise(op) || try_pointwise(op))) return;
    const int64_t r = op.ints[0], groups = op.ints[1];
    const bool transposed = op.ints[2] != 0;
    const memory::dims sd = dims_of(op.inputs[0]);
    const memory::dims wd = to_dims(graph_.tensors[op.inputs[1]].dims);
    const memory::dims od = dims_of(op.output);
    if (static_cast<int64_t>(sd.size()) != r + 2 || static_cast<int64_t>(wd.size()) != r + 2 ||
        static_cast<int64_t>(od.size()) != r + 2) {
      refuse("convolution ranks disagree");
    }
    if (wd[0] % groups != 0) refuse("groups do not divide");
    auto ints = [&](int k) {
      return memory::dims(op.ints.begin() + 3 + k * r, op.ints.begin() + 3 + (k + 1) * r);
    };
    const memory::dims strides = ints(0), pad_l = ints(1), pad_r = ints(2);
    memory::dims dil = ints(3);
    // oneDNN does not check every size against the others: a blob whose sizes disagree would
    // read or write out of bounds, so each is checked here.
    if (od[0] != sd[0]) refuse("convolution batch sizes differ");
    if (!transposed ? (sd[1] != wd[1] * groups || od[1] != wd[0])
                    : (sd[1] != wd[0] || od[1] != wd[1] * groups)) {
      refuse("convolution channels disagree with the weight");
    }
    for (int64_t i = 0; i < r; ++i) {
      const int64_t k = (wd[2 + i] - 1) * dil[i] + 1;
      int64_t expect;
      if (!transposed) {
        const int64_t span = sd[2 + i] + pad_l[i] + pad_r[i] - k;
        expect = span < 0 ? -1 : span / strides[i] + 1;
      } else {
        expect = (sd[2 + i] - 1) * strides[i] - pad_l[i] - pad_r[i] + k;
      }
      if (od[2 + i] != expect || wd[2 + i] < 1) refuse("convolution output size disagrees");
    }
    for (auto& d : dil) d -= 1;  // oneDNN counts the gaps
    // The weights as oneDNN reads them: [G, O/G, I/G, k...] (grouped) or [O, I, k...].
    memory::dims kd(wd.begin() + 2, wd.end());
    memory::dims logical, strides_w;
    const memory::dims dense = dense_strides(wd, {});
    const int64_t ksize = dense[1];
    if (!transposed) {
      if (groups == 1) {
        logical = wd;
        strides_w = dense;
      } else {
        logical = {groups, wd[0] / groups, wd[1]};
        logical.insert(logical.end(), kd.begin(), kd.end());
        strides_w = {wd[0] / groups * dense[0], dense[0], dense[1]};
        strides_w.insert(strides_w.end(), dense.begin() + 2, dense.end());
      }
    } else {
      // PyTorch stores [I, O/G, k...]; oneDNN's deconvolution reads [G, O/G, I/G, k...].
      const int64_t ig = wd[0] / groups, og = wd[1];
      const int64_t o_stride = ksize, i_stride = og * ksize;
      if (groups == 1) {
        logical = {og, wd[0]};
        strides_w = {o_stride, i_stride};
      } else {
        logical = {groups, og, ig};
        strides_w = {ig * i_stride, o_stride, i_stride};
      }
      logical.insert(logical.end(), kd.begin(), kd.end());
      strides_w.insert(strides_w.end(), dense.begin() + 2, dense.end());
    }
    memory w_plain = src_memory(op.inputs[1]);
    if (w_plain.get_desc() != plain_md(wd, dt::f32)) {
      w_plain = as(op.inputs[1], plain_md(wd, dt::f32));
    }
    memory w_view = view(w_plain, memory::desc(logical, dt::f32, strides_w));
    // In bf16 mode a result that only convolutions and matmuls read is stored in bf16: they would
    // round it to bf16 first anyway, so this saves a conversion and half the traffic, exactly.
    bool bf16_dst = wdt == dt::bf16 && feeds_only_bf16_math_[op.output];
    for (const PostOp& p : op.post_ops) bf16_dst = bf16_dst && !p.is_sum;
    const memory::desc src_any(sd, wdt, tag::any);
    const memory::desc dst_any(od, bf16_dst ? dt::bf16 : dt::f32, tag::any);
    const memory::desc w_any(logical, wdt, tag::any);
    const bool has_bias = op.inputs[2] >= 0;
    const memory::desc bias_md = has_bias ? memory::desc({od[1]}, dt::f32, tag::a) : memory::desc();
    if (has_bias && checked_numel(graph_.tensors[op.inputs[2]].dims) != od[1]) {
      refuse("convolution bias size differs from the output channels");
    }
    dnnl::primitive_attr attr = attr_for(op);
    memory::desc src_md, wei_md, dst_md;
    dnnl::primitive prim;
    Step step;
    if (!transposed) {
      dnnl::convolution_forward::primitive_desc pd;
      const bool wino_shape = wdt == dt::f32 && groups == 1 && r == 2 && kd[0] == 3 && kd[1] == 3 &&
                              strides[0] == 1 && strides[1] == 1 && dil[0] == 0 && dil[1] == 0 &&
                              winograd_;
      if (wino_shape) {
        try {
          dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                            dnnl::algorithm::convolution_winograd, src_any, w_any,
                                            bias_md, dst_any, strides, dil, pad_l, pad_r);
          pd = dnnl::convolution_forward::primitive_desc(d, attr, engine_);
        } catch (const dnnl::error&) {
        }
      }
      if (!pd) {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, src_any, w_any,
                                          bias_md, dst_any, strides, dil, pad_l, pad_r);
        pd = dnnl::convolution_forward::primitive_desc(d, attr, engine_);
      }
      src_md = pd.src_desc();
      wei_md = pd.weights_desc();
      dst_md = pd.dst_desc();
      step.prim = dnnl::convolution_forward(pd);
      note_scratchpad(pd, &step);
    } else {
      dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::deconvolution_direct, src_any, w_any,
                                          bias_md, dst_any, strides, dil, pad_l, pad_r);
      dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine_);
      src_md = pd.src_desc();
      wei_md = pd.weights_desc();
      dst_md = pd.dst_desc();
      step.prim = dnnl::deconvolution_forward(pd);
      note_scratchpad(pd, &step);
    }
    memory src = as(op.inputs[0], src_md);
    memory wei = reorder_weight(w_view, op.inputs[1], wei_md);
    memory dst = make_output(op, dst_md);
    step.args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (has_bias) {
      memory b = as(op.inputs[2], plain_md(dims_of(op.inputs[2]), dt::f32));
      step.args.emplace_back(DNNL_ARG_BIAS, view(b, bias_md));
    }
    steps_.push_back(std::move(step));
  }

  // `view_of_w` (tensor `id`) in the primitive's weight layout: reordered once now for a weight,
  // or at every call for a runtime tensor.
  memory reorder_weight(const memory& view_of_w, int32_t id, const memory::desc& want) {
    if (view_of_w.get_desc() == want) return view_of_w;
    memory out(want, engine_);
    if (graph_.tensors[id].kind == TensorKind::Weight) {
      reorder_now(view_of_w, out);
    } else {
      add_reorder(view_of_w, out);
    }
    return out;
  }

  void build_matmul(const OpDesc& op, dt wdt) {
    const memory::dims ad = dims_of(op.inputs[0]);
    const memory::dims bd = to_dims(graph_.tensors[op.inputs[1]].dims);
    const memory::dims od = dims_of(op.output);
    if (ad.size() < 2 || ad.size() > 3 || bd.size() != ad.size() || od.size() != ad.size()) {
      refuse("matmul ranks disagree");
    }
    const size_t n = ad.size();
    for (size_t i = 0; i + 2 < n; ++i) {
      if (ad[i] != bd[i] || od[i] != ad[i]) refuse("matmul batch sizes differ");
    }
    if (ad[n - 1] != bd[n - 2] || od[n - 2] != ad[n - 2] || od[n - 1] != bd[n - 1]) {
      refuse("matmul sizes disagree");
    }
    const bool const_b = graph_.tensors[op.inputs[1]].kind == TensorKind::Weight;
    if (own_kernels_ && const_b && try_matvec(op, ad, bd, od)) return;
    memory b_src = src_memory(op.inputs[1]);
    if (b_src.get_desc().dims() != bd) refuse("matmul weight view");
    const memory::desc a_md = plain_md(ad, wdt);
    const memory::desc b_md = const_b ? memory::desc(bd, wdt, tag::any) : plain_md(bd, wdt);
    const memory::desc o_md = plain_md(od, dt::f32);
    memory::desc bias_md;
    if (op.inputs[2] >= 0) {
      const memory::dims biasd = pad_rank(dims_of(op.inputs[2]), od.size());
      if (biasd.size() != od.size()) refuse("matmul bias of higher rank");
      for (size_t i = 0; i < od.size(); ++i) {
        if (biasd[i] != 1 && biasd[i] != od[i]) refuse("matmul bias does not broadcast");
      }
      bias_md = plain_md(biasd, dt::f32);
    }
    dnnl::matmul::desc d(a_md, b_md, bias_md, o_md);
    dnnl::matmul::primitive_desc pd(d, attr_for(op), engine_);
    memory a = as(op.inputs[0], pd.src_desc());
    memory b = reorder_weight(b_src, op.inputs[1], pd.weights_desc());
    memory dst = make_output(op, pd.dst_desc());
    std::vector<std::pair<int, memory>> args = {
        {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, dst}};
    if (op.inputs[2] >= 0) {
      memory bias = as(op.inputs[2], plain_md(dims_of(op.inputs[2]), dt::f32));
      args.emplace_back(DNNL_ARG_BIAS, view(bias, bias_md));
    }
    add_step<dnnl::matmul>(pd, std::move(args));
  }

  // A matmul of one row by a constant matrix (a classifier, a decode step's projections) through
  // Ember's matrix-vector kernel: it streams the weight at twice oneDNN 2.6's bandwidth
  // (packed_gemm.h). The bias, a leading residual sum and a clamp happen in the kernel; other
  // element-wise post-ops follow as oneDNN steps on its output. False (nothing built) when it
  // does not apply.
  bool try_matvec(const OpDesc& op, const memory::dims& ad, const memory::dims& bd,
                  const memory::dims& od) {
    const size_t n = ad.size();
    for (size_t i = 0; i + 1 < n; ++i) {
      if (ad[i] != 1) return false;  // one row, no batch
    }
    const int64_t k = ad[n - 1], cols = bd[n - 1];
    if (k < 1 || cols < 1) return false;
    size_t post = 0;
    if (!op.post_ops.empty() && op.post_ops[0].is_sum) ++post;
    Clamp act;
    if (post + 1 == op.post_ops.size() && as_clamp({op.post_ops[post]}, &act)) ++post;
    for (size_t i = post; i < op.post_ops.size(); ++i) {
      if (op.post_ops[i].is_sum) return false;  // a sum after an element-wise op: oneDNN's
    }
    std::vector<float> bias(static_cast<size_t>(cols), 0.f);
    if (op.inputs[2] >= 0) {
      const int64_t count = checked_numel(graph_.tensors[op.inputs[2]].dims);
      if (count != cols && count != 1) return false;
      memory b = as(op.inputs[2], plain_md(dims_of(op.inputs[2]), dt::f32));
      const auto* v = static_cast<const float*>(b.get_data_handle());
      for (int64_t j = 0; j < cols; ++j) bias[j] = v[count == 1 ? 0 : j];
    }
    // The weight as [cols][k] (PyTorch's [out][in]), then packed.
    std::vector<uint8_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint8_t>(i);
    std::swap(order[n - 2], order[n - 1]);
    memory w = as(op.inputs[1], plain_md(bd, dt::f32, order));
    auto packed = std::make_shared<PackedMatrix>(
        PackedMatrix::pack(static_cast<const float*>(w.get_data_handle()), bias.data(), k, cols));
    const memory::desc a_md = plain_md(ad, dt::f32);
    memory a = as(op.inputs[0], a_md);
    // With a leading sum, the output already holds the summand (make_output puts it there).
    memory dst = make_output(op, plain_md(od, dt::f32));
    const bool sum = !op.post_ops.empty() && op.post_ops[0].is_sum;
    add_own_step(matvec_step(std::move(packed), act, sum, threads_, a, dst));
    // The element-wise post-ops the kernel does not apply, in place, in order.
    for (size_t i = post; i < op.post_ops.size(); ++i) {
      const PostOp& p = op.post_ops[i];
      auto [alpha, beta] = eltwise_params(p.alg, p.alpha, p.beta);
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, eltwise_alg(p.alg),
                                    dst.get_desc(), alpha, beta);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::eltwise_forward::primitive_desc pd(d, attr, engine_);
      add_step<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
    }
    return true;
  }

  void build_pool(const OpDesc& op) {
    const auto alg = static_cast<PoolAlg>(op.ints[0]);
    const int64_t r = op.ints[1];
    auto ints = [&](int k) {
      return memory::dims(op.ints.begin() + 2 + k * r, op.ints.begin() + 2 + (k + 1) * r);
    };
    memory::dims dil = ints(4);
    for (auto& d : dil) d -= 1;
    const memory::dims sd = dims_of(op.inputs[0]);
    const memory::dims od = dims_of(op.output);
    if (static_cast<int64_t>(sd.size()) != r + 2 || od.size() != sd.size()) {
      refuse("pooling ranks disagree");
    }
    if (od[0] != sd[0] || od[1] != sd[1]) refuse("pooling changes batch or channels");
    for (int64_t i = 0; i < r; ++i) {
      const int64_t k = (op.ints[2 + i] - 1) * op.ints[2 + 4 * r + i] + 1;
      const int64_t span = sd[2 + i] + op.ints[2 + 2 * r + i] + op.ints[2 + 3 * r + i] - k;
      if (span < 0 || od[2 + i] != span / op.ints[2 + r + i] + 1) {
        refuse("pooling output size disagrees");
      }
    }
    memory src = src_memory(op.inputs[0]);
    const dnnl::algorithm a = alg == PoolAlg::Max ? dnnl::algorithm::pooling_max
                              : alg == PoolAlg::AvgIncludePad
                                  ? dnnl::algorithm::pooling_avg_include_padding
                                  : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, a, src.get_desc(),
                                     memory::desc(od, dt::f32, tag::any), ints(1), ints(0), dil,
                                     ints(2), ints(3));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_v2_forward::primitive_desc pd(d, attr, engine_);
    memory dst = make_output(op, pd.dst_desc());
    add_step<dnnl::pooling_v2_forward>(pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  }

  // A [C] f32 parameter of a normalization, or an empty memory.
  memory channel_param(int32_t id, int64_t channels) {
    if (id < 0) return memory();
    if (checked_numel(graph_.tensors[id].dims) != channels) refuse("parameter size differs");
    memory m = as(id, plain_md(dims_of(id), dt::f32));
    return view(m, memory::desc({channels}, dt::f32, tag::a));
  }

  void build_layer_norm(const OpDesc& op) {
    check_same_dims(op.inputs[0], op.output);
    const memory::dims sd = dims_of(op.inputs[0]);
    if (sd.empty()) refuse("layer norm of a scalar");
    memory src = as(op.inputs[0], plain_md(sd, dt::f32));
    memory g = channel_param(op.inputs[1], sd.back());
    memory b = channel_param(op.inputs[2], sd.back());
    auto flags = dnnl::normalization_flags::none;
    if (g) flags |= dnnl::normalization_flags::use_scale;
    if (b) flags |= dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                              op.floats[0], flags);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::layer_normalization_forward::primitive_desc pd(d, attr, engine_);
    memory dst = make_output(op, pd.dst_desc());
    std::vector<std::pair<int, memory>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    if (g) args.emplace_back(DNNL_ARG_SCALE, g);
    if (b) args.emplace_back(DNNL_ARG_SHIFT, b);
    // Inference still computes the statistics; oneDNN wants somewhere to put them.
    memory mean(pd.mean_desc(), engine_), var(pd.variance_desc(), engine_);
    args.emplace_back(DNNL_ARG_MEAN, mean);
    args.emplace_back(DNNL_ARG_VARIANCE, var);
    add_step<dnnl::layer_normalization_forward>(pd, std::move(args));
  }

  void build_batch_norm(const OpDesc& op) {
    check_same_dims(op.inputs[0], op.output);
    const memory::dims sd = dims_of(op.inputs[0]);
    if (sd.size() < 2) refuse("batch norm of rank < 2");
    memory src = src_memory(op.inputs[0]);
    const int64_t c = sd[1];
    memory g = channel_param(op.inputs[1], c);
    memory b = channel_param(op.inputs[2], c);
    memory mean = channel_param(op.inputs[3], c);
    memory var = channel_param(op.inputs[4], c);
    auto flags = dnnl::normalization_flags::use_global_stats;
    if (g) flags |= dnnl::normalization_flags::use_scale;
    if (b) flags |= dnnl::normalization_flags::use_shift;
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                              op.floats[0], flags);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::batch_normalization_forward::primitive_desc pd(d, attr, engine_);
    memory dst = make_output(op, pd.dst_desc());
    std::vector<std::pair<int, memory>> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}};
    if (g) args.emplace_back(DNNL_ARG_SCALE, g);
    if (b) args.emplace_back(DNNL_ARG_SHIFT, b);
    add_step<dnnl::batch_normalization_forward>(pd, std::move(args));
  }

 public:
  void prepare_outputs() { direct_out_.assign(graph_.outputs.size(), false); }

  DelegateSummary summary() const {
    DelegateSummary out;
    for (const Step& s : steps_) {
      if (!s.kernel) {
        ++out.onednn_steps;
        continue;
      }
      switch (s.own) {
        case OwnKind::InvertedResidual:
          ++out.inverted_residual_blocks;
          break;
        case OwnKind::Depthwise:
          ++out.depthwise_steps;
          break;
        case OwnKind::Pointwise:
          ++out.pointwise_steps;
          break;
        case OwnKind::MatVec:
          ++out.matvec_steps;
          break;
      }
    }
    return out;
  }

 private:
  CpuGraph graph_;
  int threads_;
  bool winograd_;  // fp32 3x3 stride-1 convolutions through oneDNN's Winograd F(4x4, 3x3)
  // fp32 inverted residual blocks, depthwise and pointwise convolutions and matrix-vector
  // products through Ember's own AVX-512 kernels (inverted_residual.h, depthwise.h,
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
  std::vector<Step> steps_;
  memory scratch_;
  size_t scratch_bytes_ = 0;
  int cur_op_ = 0;
  std::vector<int> last_use_;
  std::vector<int> readers_;  // per tensor: the ops reading it (inputs and sums)
  std::vector<bool> shares_storage_;
  std::vector<bool> feeds_only_bf16_math_;
  struct Buffer {
    memory mem;
    size_t bytes;
    int live_until;  // the last op reading a tensor stored here
  };
  std::vector<Buffer> pool_;
  std::vector<int> buffer_of_;  // per tensor: its pool buffer, or -1
};

int threads_from(std::span<const CompileSpec> specs) {
  for (const CompileSpec& s : specs) {
    if (s.key != "num_threads") continue;
    int n = 0;
    for (uint8_t c : s.value) {
      if (c < '0' || c > '9' || n > 1000) return -1;
      n = n * 10 + (c - '0');
    }
    return n >= 1 ? n : -1;
  }
  return ThreadPool::global().num_threads();
}

// An on/off compile spec ("fp32_winograd", "ember_kernels"): "off" turns it off; on by default.
bool switch_from(std::span<const CompileSpec> specs, std::string_view key) {
  for (const CompileSpec& s : specs) {
    if (s.key == key) {
      return std::string_view(reinterpret_cast<const char*>(s.value.data()), s.value.size()) !=
             "off";
    }
  }
  return true;
}

// oneDNN's instruction set in force (the CPU's, capped by ONEDNN_MAX_CPU_ISA), by oneDNN's name.
const char* onednn_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx2_vnni:
      return "avx2_vnni";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "an instruction set below avx512_core";
  }
}

// Builds a delegate for `g` with the thread count it will run with; every exception of the
// build becomes an Error.
Result<std::unique_ptr<CpuDelegate>> make_delegate(CpuGraph g, int threads, bool winograd,
                                                   bool own_kernels, const NamedDataMap* named) {
  const int previous = omp_get_max_threads();
  // Primitives are created for the thread count they will run with.
  omp_set_num_threads(threads);
  std::unique_ptr<CpuDelegate> d;
  Error error = Error::Ok;
  try {
    d = std::make_unique<CpuDelegate>(std::move(g), threads, winograd, own_kernels);
    d->prepare_outputs();
    d->build(named);
  } catch (const InitError& e) {
    error = fail(e.code, "cpu delegate: %s", e.message.c_str());
  } catch (const dnnl::error& e) {
    error = fail(Error::InvalidProgram, "cpu delegate: oneDNN: %s", e.what());
  } catch (const std::bad_alloc&) {
    error = fail(Error::MemoryAllocationFailed, "cpu delegate: out of memory");
  }
  omp_set_num_threads(previous);
  if (error != Error::Ok) return error;
  return d;
}

// A delegate's graph and its builds. A static graph has one. With a dynamic batch, the first is
// built at init for the upper bounds (which checks the whole graph), and each call runs a build
// for its actual batch sizes: made on the first call with those sizes (oneDNN primitives are
// shape-specific) and kept, the kMaxBuilds most recently used at most.
class CpuHandle {
 public:
  static constexpr size_t kMaxBuilds = 4;

  CpuHandle(CpuGraph g, int threads, bool winograd, bool own_kernels, const NamedDataMap* named)
      : graph_(std::move(g)),
        threads_(threads),
        winograd_(winograd),
        own_kernels_(own_kernels),
        named_(named) {}

  Error init() {
    Result<std::unique_ptr<CpuDelegate>> d =
        make_delegate(graph_, threads_, winograd_, own_kernels_, named_);
    if (!d.ok()) return d.error();
    builds_.push_back({bounds(), std::move(*d)});
    return Error::Ok;
  }

  Error execute(std::span<EValue*> args) {
    if (graph_.num_symbols == 0) return builds_.front().second->execute(args);
    Result<std::vector<int64_t>> sizes = batch_sizes(args);
    if (!sizes.ok()) return sizes.error();
    // An empty batch: nothing to compute (oneDNN takes no empty tensors); every output is empty.
    if (std::find(sizes->begin(), sizes->end(), 0) != sizes->end()) {
      if (Error e = resize_outputs(args, *sizes); e != Error::Ok) return e;
      for (size_t j = 0; j < graph_.outputs.size(); ++j) {
        if (graph_.tensors[graph_.outputs[j]].batch_symbol < 0) {
          return fail(Error::NotSupported,
                      "cpu delegate: an empty batch, and output %zu does not follow the batch "
                      "(its value would need computing over no rows); run batch 1 or more",
                      j);
        }
      }
      return Error::Ok;
    }
    auto it = std::find_if(builds_.begin(), builds_.end(),
                           [&](const auto& b) { return b.first == *sizes; });
    if (it == builds_.end()) {
      Result<std::unique_ptr<CpuDelegate>> d = make_delegate(
          with_batch_sizes(graph_, *sizes), threads_, winograd_, own_kernels_, named_);
      if (!d.ok()) return d.error();
      if (builds_.size() == kMaxBuilds) builds_.pop_back();
      builds_.insert(builds_.begin(), {*sizes, std::move(*d)});
      it = builds_.begin();
    } else if (it != builds_.begin()) {
      std::rotate(builds_.begin(), it, it + 1);  // most recently used first
      it = builds_.begin();
    }
    if (Error e = resize_outputs(args, *sizes); e != Error::Ok) return e;
    return it->second->execute(args);
  }

  DelegateSummary summary() const { return builds_.front().second->summary(); }

 private:
  std::vector<int64_t> bounds() const {
    std::vector<int64_t> b(graph_.num_symbols, 0);
    for (const TensorDesc& t : graph_.tensors) {
      if (t.batch_symbol >= 0) b[static_cast<size_t>(t.batch_symbol)] = t.dims[0];
    }
    return b;
  }

  // The outputs were planned at the upper bounds: they take this call's sizes.
  Error resize_outputs(std::span<EValue*> args, const std::vector<int64_t>& sizes) const {
    if (args.size() != graph_.num_inputs + graph_.outputs.size()) {
      return fail(Error::InvalidArgument, "cpu delegate: %zu arguments, expected %zu", args.size(),
                  static_cast<size_t>(graph_.num_inputs + graph_.outputs.size()));
    }
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      const TensorDesc& t = graph_.tensors[graph_.outputs[j]];
      EValue* out = args[graph_.num_inputs + j];
      if (t.batch_symbol < 0 || out == nullptr || !out->is_tensor()) continue;
      std::vector<int32_t> want(t.dims.begin(), t.dims.end());
      want[0] = static_cast<int32_t>(sizes[static_cast<size_t>(t.batch_symbol)]);
      if (Error e = out->to_tensor().resize(want); e != Error::Ok) return e;
    }
    return Error::Ok;
  }

  // Each symbol's value: dim 0 of the inputs that carry it, which must agree and lie in
  // [0, upper bound].
  Result<std::vector<int64_t>> batch_sizes(std::span<EValue*> args) const {
    std::vector<int64_t> v(graph_.num_symbols, -1);
    for (const TensorDesc& t : graph_.tensors) {
      if (t.kind != TensorKind::Input || t.batch_symbol < 0) continue;
      const EValue* a = t.index < args.size() ? args[t.index] : nullptr;
      if (a == nullptr || !a->is_tensor() ||
          a->to_tensor().dim() != static_cast<int>(t.dims.size())) {
        return fail(Error::InvalidArgument, "cpu delegate: argument %u is not a tensor of rank %zu",
                    t.index, t.dims.size());
      }
      const int64_t n = a->to_tensor().size(0);
      int64_t& value = v[static_cast<size_t>(t.batch_symbol)];
      if (n < 0 || n > t.dims[0] || (value >= 0 && value != n)) {
        return fail(Error::InvalidArgument,
                    "cpu delegate: argument %u has batch %lld; the program takes 0 to %lld%s",
                    t.index, static_cast<long long>(n), static_cast<long long>(t.dims[0]),
                    value >= 0 && value != n ? ", the same for every input sharing it" : "");
      }
      value = n;
    }
    return v;
  }

  CpuGraph graph_;
  int threads_;
  bool winograd_;
  bool own_kernels_;
  const NamedDataMap* named_;  // outlives the method (docs/runtime.md), so every build reads it
  std::vector<std::pair<std::vector<int64_t>, std::unique_ptr<CpuDelegate>>> builds_;
};

class CpuBackend final : public Backend {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec> specs) const override {
    if (processed == nullptr || processed->data() == nullptr) {
      return fail(Error::InvalidArgument, "cpu delegate: no processed blob");
    }
    std::string why;
    std::optional<CpuGraph> g =
        parse(std::span<const uint8_t>(processed->bytes(), processed->size()), &why);
    if (!g) return fail(Error::InvalidProgram, "cpu delegate: invalid blob: %s", why.c_str());
    processed->free();  // everything needed is copied
    if (g->precision == Precision::Bf16 && !bf16_supported()) {
      return fail(
          Error::NotSupported,
          "cpu delegate: this program computes convolutions and matmuls in bf16 (compiled "
          "with --precision bf16), which oneDNN runs only on CPUs with AVX-512 (avx512_core "
          "or later); this CPU offers %s to oneDNN and %s to Ember. Compile the model with "
          "--precision fp32 (the default) to run it here",
          onednn_isa_name(), cpu_isa_name(cpu_isa()));
    }
    const int threads = threads_from(specs);
    if (threads < 1) return fail(Error::InvalidArgument, "cpu delegate: bad num_threads spec");
    std::unique_ptr<CpuHandle> h;
    try {
      h = std::make_unique<CpuHandle>(std::move(*g), threads, switch_from(specs, "fp32_winograd"),
                                      switch_from(specs, "ember_kernels"), context.named_data);
    } catch (const std::bad_alloc&) {
      return fail(Error::MemoryAllocationFailed, "cpu delegate: out of memory");
    }
    if (Error e = h->init(); e != Error::Ok) return e;
    // DelegateHandle is opaque: the runtime only hands the pointer back.
    return reinterpret_cast<DelegateHandle*>(h.release());
  }

  Error execute(BackendExecuteContext&, DelegateHandle* handle,
                std::span<EValue*> args) const override {
    if (handle == nullptr) return fail(Error::DelegateInvalidHandle, "cpu delegate: no handle");
    try {
      return reinterpret_cast<CpuHandle*>(handle)->execute(args);
    } catch (const std::bad_alloc&) {
      return fail(Error::MemoryAllocationFailed, "cpu delegate: out of memory");
    }
  }

  void destroy(DelegateHandle* handle) const override {
    delete reinterpret_cast<CpuHandle*>(handle);
  }
};

}  // namespace

// Whether bf16 convolutions and matmuls can run: oneDNN implements them from avx512_core up
// (emulated there, native from avx512_core_bf16), and EMBER_CPU_ISA, when it caps Ember below
// AVX-512, stands for a CPU without them too.
bool bf16_supported() {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (have & need) == need && cpu_isa() >= CpuIsa::Avx512;
}

DelegateSummary summarize(const DelegateHandle* handle) {
  if (handle == nullptr) return {};
  return reinterpret_cast<const CpuHandle*>(handle)->summary();
}

const Backend* runtime_backend() {
  static const CpuBackend backend;
  return &backend;
}

Error register_runtime_backend() { return register_backend("cpu", runtime_backend()); }

}  // namespace ember::cpu
