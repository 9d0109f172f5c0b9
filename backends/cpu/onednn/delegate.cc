#include "backends/cpu/onednn/delegate.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "backends/cpu/kernels/nan_exact.h"
#include "backends/cpu/kernels/policy.h"
#include "runtime/platform/clock.h"

#if defined(__GLIBC__)
#include <malloc.h>  // mallinfo2, for the memory report
#endif

namespace ember::cpu::delegate {
namespace {

// Bytes of the heap in use (glibc's mallinfo2), or 0 where that is not known.
size_t heap_in_use() {
#if defined(__GLIBC__)
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
#else
  return 0;
#endif
}

}  // namespace

[[noreturn]] void refuse(std::string message, Error code) {
  throw InitError{code, std::move(message)};
}

memory::dims to_dims(const std::vector<int64_t>& d) { return memory::dims(d.begin(), d.end()); }

// Appends (gcc 12 warns falsely of overlapping copies in chains of operator+).
std::string dims_text(const memory::dims& d) {
  std::string out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0) out.append("x");
    out.append(std::to_string(d[i]));
  }
  return out;
}

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

memory::dims plain_strides(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 ||
      md.data_type() != dt::f32 || d.offset0 != 0) {
    return {};
  }
  return memory::dims(d.format_desc.blocking.strides, d.format_desc.blocking.strides + d.ndims);
}

memory::dims reshaped_strides(const memory::dims& dims, const memory::dims& strides,
                              const memory::dims& new_dims) {
  if (dims.empty() || dims.size() != strides.size()) return {};
  // The old dims fall into chunks whose dims are contiguous to each other (size-1 dims never
  // break one); each chunk's elements must be exactly some run of new dims, which take dense
  // strides from the chunk's innermost stride.
  memory::dims out(new_dims.size(), 0);
  int64_t v = static_cast<int64_t>(new_dims.size()) - 1;
  int64_t base = strides.back(), old_count = 1, new_count = 1;
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    old_count *= dims[d];
    const bool chunk_ends = d == 0 || (dims[d - 1] != 1 && strides[d - 1] != old_count * base);
    if (!chunk_ends) continue;
    while (v >= 0 && (new_count < old_count || new_dims[v] == 1)) {
      out[v] = new_count * base;
      new_count *= new_dims[v];
      --v;
    }
    if (new_count != old_count) return {};
    if (d > 0) {
      base = strides[d - 1];
      old_count = new_count = 1;
    }
  }
  return v == -1 ? out : memory::dims{};
}

memory::desc plain_md(const memory::dims& dims, dt type, const std::vector<uint8_t>& order) {
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
    case EltwiseAlg::Square:
      return dnnl::algorithm::eltwise_square;
    case EltwiseAlg::Sqrt:
      return dnnl::algorithm::eltwise_sqrt;
    case EltwiseAlg::Quantize:  // Ember's steps only (is_own_eltwise)
    case EltwiseAlg::Dequantize:
    case EltwiseAlg::Rsqrt:
    case EltwiseAlg::Neg:
      return dnnl::algorithm::eltwise_linear;
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

CpuDelegate::CpuDelegate(CpuGraph g, int threads, const DelegateOptions& options,
                         MemoryAllocator* allocator)
    : graph_(std::move(g)),
      threads_(threads),
      winograd_(options.winograd),
      int8_(options.int8 && int8_7bit_supported()),
      int8_any_weights_(int8_supported()),
      own_kernels_(options.own_kernels && graph_.precision == Precision::Fp32 &&
                   own_kernels_supported()),
      verbose_(std::getenv("EMBER_CPU_VERBOSE") != nullptr),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      mem_(graph_.tensors.size()),
      md_(graph_.tensors.size()),
      allocator_(allocator) {}

memory CpuDelegate::buffer(const memory::desc& md, Held held) {
  const size_t bytes = md.get_size();
  if (held == Held::Transient) return memory(md, engine_);
  const size_t taken = held_bytes_[0] + held_bytes_[1] + held_bytes_[2];
  held_bytes_[static_cast<int>(held)] += bytes;
  if (allocator_ == nullptr) return memory(md, engine_);
  // A cache line apart: oneDNN's kernels load whole lines (the heap's buffers are so aligned).
  // The heap the allocator itself takes (Module's grows on it) is not the build's.
  const size_t heap_before = heap_in_use();
  void* p = allocator_->allocate(std::max<size_t>(bytes, 1), 64);
  allocator_heap_ += std::max(heap_in_use(), heap_before) - heap_before;
  if (p == nullptr) {
    refuse("the method allocator has no room for " + std::to_string(bytes) +
               " more bytes (this delegate has taken " + std::to_string(taken) +
               "); give the method more memory: `ember inspect MODEL.pte --memory` shows what "
               "each delegate takes",
           Error::MemoryAllocationFailed);
  }
  return memory(md, engine_, p);
}

void CpuDelegate::build(const NamedDataMap* named) {
  const size_t heap_before = heap_in_use();
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
    md_[i] =
        plain_md(to_dims(t.dims), t.storage == WeightStorage::Bool ? dt::u8 : act, t.dim_order);
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
      size_t fused = own_kernels_ && own_conv_kernels_chosen() ? try_inverted_residual(i) : 0;
      if (fused == 0) fused = try_quantize_u8(i);
      if (fused == 0) fused = try_fake_quant_pair(i);
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
  for (const auto& s : steps_) s->handles(&used);
  std::sort(used.begin(), used.end());
  std::erase_if(viewed_, [&](const memory& m) {
    return !std::binary_search(used.begin(), used.end(), m.get_data_handle());
  });
  // One scratchpad for every step, oneDNN's and Ember's (they run one after another).
  scratch_ = buffer(
      memory::desc({static_cast<int64_t>(std::max<size_t>(scratch_bytes_, 1))}, dt::u8, tag::a),
      Held::Scratchpad);
  scratch_data_ = scratch_.get_data_handle();
  for (const auto& s : steps_) s->finish(scratch_);
  const size_t grown = std::max(heap_in_use(), heap_before) - heap_before;
  heap_bytes_ = grown - std::min(grown, allocator_heap_);
}

Error CpuDelegate::execute(std::span<EValue*> args, ExecutionObserver* observer) {
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
    const bool is_bool = want.data_type() == dt::u8;
    if (t.dtype() != (is_bool ? ScalarType::Bool : ScalarType::Float) || !same_layout(t, want) ||
        t.data() == nullptr) {
      return fail(Error::InvalidArgument,
                  "cpu delegate: argument %zu is not the %s tensor the delegate was built for "
                  "(sizes, dim order or storage differ)",
                  a, is_bool ? "bool" : "float32");
    }
  }
  for (auto& [m, a] : bound_) m.set_data_handle(args[a]->to_tensor().mutable_data());
  // oneDNN's OpenMP primitives run on omp_get_max_threads() threads: the delegate's count for the
  // call, and the caller's own again after it (an ICV of the calling thread, left as found).
  struct OmpThreads {
    int previous;
    explicit OmpThreads(int threads) : previous(omp_get_max_threads()) {
      if (previous != threads) omp_set_num_threads(threads);
    }
    ~OmpThreads() {
      if (omp_get_max_threads() != previous) omp_set_num_threads(previous);
    }
  } omp_threads(threads_);
  const RunContext ctx{stream_.get(), scratch_data_, threads_, verbose_};
  for (const auto& s : steps_) {
    const uint64_t start = observer != nullptr ? now_ns() : 0;
    if (Error e = s->run(ctx); e != Error::Ok) return e;
    if (observer != nullptr) observer->on_delegate_step("cpu", s->name().c_str(), start, now_ns());
  }
  if (dnnl_stream_wait(stream_.get()) != dnnl_success) {
    return fail(Error::Internal, "cpu delegate: oneDNN stream wait failed");
  }
  return Error::Ok;
}

bool CpuDelegate::same_layout(const Tensor& t, const memory::desc& md) {
  // The C descriptor's arrays: md.dims() would build a vector at every call.
  const dnnl_dims_t& dims = md.data.dims;
  const int rank = t.dim() == 0 ? 1 : t.dim();
  if (md.data.ndims != rank) return false;
  if (t.dim() == 0) return dims[0] == 1;
  const auto& blk = md.data.format_desc.blocking;
  for (int i = 0; i < rank; ++i) {
    if (t.size(i) != dims[i]) return false;
    if (t.size(i) > 1 && t.stride(i) != blk.strides[i]) return false;
  }
  return true;
}

void CpuDelegate::bind(const memory& m, int arg) {
  bound_.emplace_back(m, arg);
  if (static_cast<size_t>(arg) >= arg_md_.size()) {
    arg_md_.resize(arg + 1);
    arg_is_tensor_.resize(arg + 1, 0);
  }
  arg_md_[arg] = m.get_desc();
  arg_is_tensor_[arg] = 1;
}

int CpuDelegate::bound_arg(const memory& m) const {
  for (const auto& [b, a] : bound_) {
    if (b.get() == m.get()) return a;
  }
  return -1;
}

memory CpuDelegate::view(const memory& m, const memory::desc& md) {
  const int a = bound_arg(m);
  if (a >= 0) {
    memory v(md, engine_, nullptr);
    bound_.emplace_back(v, a);
    return v;
  }
  viewed_.push_back(m);  // a view does not own its storage: this does (see build)
  return memory(md, engine_, m.get_data_handle());
}

void CpuDelegate::load_weight(int32_t id) {
  const TensorDesc& t = graph_.tensors[id];
  const WeightRef& w = graph_.weights[t.index];
  if (named_ == nullptr) refuse("no named data for weight '" + w.key + "'", Error::NotFound);
  std::vector<int64_t> stored = t.dims;  // an int4 weight: two elements a byte
  if (t.storage == WeightStorage::Int4 && !stored.empty()) stored.back() /= 2;
  md_[id] = plain_md(to_dims(stored),
                     t.storage == WeightStorage::Bool ? dt::u8 : (t.integer() ? dt::s8 : dt::f32),
                     t.dim_order);
  mem_[id] = buffer(md_[id], Held::Transient);
  if (md_[id].get_size() != w.nbytes) refuse("weight '" + w.key + "' has the wrong size");
  const Error e = named_->load_data_into(w.key, mem_[id].get_data_handle(), w.nbytes);
  if (e != Error::Ok) {
    refuse("weight '" + w.key + "': " + last_error_message(), Error::NotFound);
  }
}

void CpuDelegate::release_weights(size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    for (int32_t t : graph_.ops[i].inputs) {
      if (t >= 0 && graph_.tensors[t].kind == TensorKind::Weight &&
          last_use_[t] < static_cast<int>(end)) {
        mem_[t] = memory();
      }
    }
  }
}

memory CpuDelegate::src_memory(int32_t id) {
  if (!mem_[id]) {
    if (graph_.tensors[id].kind != TensorKind::Weight) refuse("tensor read before defined");
    load_weight(id);
  }
  return mem_[id];
}

void CpuDelegate::keep_as_view(const OpDesc& op, const memory& v) {
  md_[op.output] = v.get_desc();
  mem_[op.output] = v;
  shares_storage_[op.inputs[0]] = shares_storage_[op.output] = true;
  share_buffer(op.output, op.inputs[0]);
}

memory CpuDelegate::as(int32_t id, const memory::desc& want) {
  memory m = src_memory(id);
  if (m.get_desc() == want) return m;
  // A weight's reorder here is mostly read once, to be packed or rescaled elsewhere.
  memory out = buffer(want, held_for(id) == Held::Weights ? Held::Transient : Held::Activations);
  if (graph_.tensors[id].kind == TensorKind::Weight) {
    reorder_now(m, out);
  } else {
    add_reorder(m, out);
  }
  return out;
}

void CpuDelegate::reorder_now(memory from, memory to) {
  dnnl::reorder(from, to).execute(stream_, from, to);
  stream_.wait();
}

void CpuDelegate::add_reorder(const memory& from, const memory& to) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(engine_, from.get_desc(), engine_, to.get_desc(), attr);
  add_step<dnnl::reorder>(pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void CpuDelegate::add(std::unique_ptr<Step> step) {
  scratch_bytes_ = std::max(scratch_bytes_, step->scratch_bytes());
  steps_.push_back(std::move(step));
}

dnnl::primitive_attr CpuDelegate::attr_for(const OpDesc& op) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(onednn_post_ops(fused_post_ops(op)));
  return attr;
}

dnnl::post_ops CpuDelegate::onednn_post_ops(std::span<const PostOp> post) {
  using dnnl::algorithm;
  dnnl::post_ops po;
  for (const PostOp& p : post) {
    if (p.is_sum) {
      po.append_sum(1.f);
    } else {
      auto [a, b] = eltwise_params(p.alg, p.alpha, p.beta);
      po.append_eltwise(1.f, eltwise_alg(p.alg), a, b);
    }
  }
  return po;
}

void CpuDelegate::compute_last_uses() {
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
  // Read only through strides: as matmul operands, or by permutes, reshapes (other views) and
  // slices.
  read_as_view_only_.assign(graph_.tensors.size(), true);
  std::vector<bool> read(graph_.tensors.size(), false);
  for (const OpDesc& op : graph_.ops) {
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const int32_t t = op.inputs[k];
      if (t < 0) continue;
      read[t] = true;
      const bool operand = op.kind == OpKind::MatMul && k < 2;
      if (!operand && op.kind != OpKind::Permute && op.kind != OpKind::Reshape &&
          op.kind != OpKind::Slice) {
        read_as_view_only_[t] = false;
      }
    }
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum) read_as_view_only_[p.tensor] = false;
    }
  }
  for (int32_t t : graph_.outputs) read_as_view_only_[t] = false;
  for (size_t t = 0; t < read.size(); ++t) read_as_view_only_[t] = read_as_view_only_[t] && read[t];
}

bool CpuDelegate::can_sum_in_place(const OpDesc& op, int32_t t, const memory::desc& md) const {
  if (graph_.tensors[t].kind != TensorKind::Intermediate || shares_storage_[t] ||
      last_use_[t] != cur_op_ || !mem_[t] || mem_[t].get_desc() != md || bound_arg(mem_[t]) >= 0) {
    return false;
  }
  return std::find(op.inputs.begin(), op.inputs.end(), t) == op.inputs.end();
}

Storage CpuDelegate::weight_storage() {
  return [this](size_t bytes) {
    auto m = std::make_shared<memory>(
        buffer(memory::desc({static_cast<int64_t>(bytes)}, dt::u8, tag::a), Held::Weights));
    return std::shared_ptr<void>(m, m->get_data_handle());
  };
}

int CpuDelegate::free_buffer(const memory::desc& md, int live_until) {
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
    pool_.push_back({buffer(raw, Held::Activations), bytes, -1});
    best = static_cast<int>(pool_.size() - 1);
  }
  pool_[best].live_until = live_until;
  return best;
}

memory CpuDelegate::pooled(const memory::desc& md, int32_t t) {
  const int b = free_buffer(md, last_use_[t]);
  buffer_of_[t] = b;
  return memory(md, engine_, pool_[b].mem.get_data_handle());
}

memory CpuDelegate::scratch_activation(const memory::desc& md) {
  return memory(md, engine_, pool_[free_buffer(md, cur_op_)].mem.get_data_handle());
}

void CpuDelegate::share_buffer(int32_t t, int32_t with) {
  const int b = buffer_of_[with];
  if (b < 0) return;
  buffer_of_[t] = b;
  pool_[b].live_until = std::max(pool_[b].live_until, last_use_[t]);
}

memory CpuDelegate::make_output(const OpDesc& op, const memory::desc& md) {
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
  // Only the sums of the primitive's own post-ops; a sum after a clamp is a step of its own.
  const std::span<const PostOp> fused = fused_post_ops(op);
  bool in_place = false;
  if (!m) {
    for (const PostOp& p : fused) {
      if (p.is_sum && can_sum_in_place(op, p.tensor, md)) {
        m = mem_[p.tensor];
        in_place = true;
      }
    }
  }
  if (in_place) {
    for (const PostOp& p : fused) {
      if (p.is_sum && mem_[p.tensor] == m) share_buffer(op.output, p.tensor);
    }
  }
  if (!m) m = pooled(md, op.output);
  md_[op.output] = md;
  mem_[op.output] = m;
  // Otherwise the residual summand is copied into the destination before the op accumulates.
  if (!in_place) {
    for (const PostOp& p : fused) {
      if (p.is_sum) add_reorder(src_memory(p.tensor), m);
    }
  }
  return m;
}

void CpuDelegate::check_same_dims(int32_t a, int32_t b) {
  if (graph_.tensors[a].dims != graph_.tensors[b].dims) refuse("input and output shapes differ");
}

DelegateSummary CpuDelegate::summary() const {
  DelegateSummary out;
  out.weight_bytes = held_bytes_[static_cast<int>(Held::Weights)];
  out.activation_bytes = held_bytes_[static_cast<int>(Held::Activations)];
  out.scratchpad_bytes = held_bytes_[static_cast<int>(Held::Scratchpad)];
  out.from_method_allocator = allocator_ != nullptr;
  out.heap_bytes = heap_bytes_;
  out.int8_convolutions = int8_convolutions_;
  out.int8_chained = static_cast<int>(u8_tensors_.size());
  out.int8_matmuls = int8_matmuls_;
  for (const auto& s : steps_) {
    const std::optional<OwnKind> own = s->own_kind();
    if (!own) {
      ++out.onednn_steps;
      continue;
    }
    switch (*own) {
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
      case OwnKind::GroupQuantMatMul:
        ++out.grouped_matmuls;
        break;
      case OwnKind::DotMatMul:
        ++out.grouped_matmuls;
        ++out.dot_matmuls;
        break;
      case OwnKind::Int8Elementwise:
        ++out.int8_elementwise;
        break;
      case OwnKind::Exact:
        ++out.exact_steps;
        break;
    }
  }
  return out;
}
}  // namespace ember::cpu::delegate
