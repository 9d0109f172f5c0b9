#include "backends/cpu/onednn/build.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/onednn/builders.h"
#include "backends/cpu/onednn/delegate.h"

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

Error refused(std::string_view message, Error code) {
  return fail(code, "%.*s", static_cast<int>(message.size()), message.data());
}

Error Build::onednn_error(const dnnl::error& e) const {
  return fail(Error::InvalidProgram, "op %zu: oneDNN refused it: %s", cur_op_, e.what());
}

Build::Build(CpuGraph g, int threads, const DelegateOptions& options, MemoryAllocator* allocator,
             SharedWeights* shared, DelegateScratch* scratch)
    : graph_(std::move(g)),
      threads_(threads),
      options_(options),
      int8_(options.int8 && int8_7bit_supported()),
      int8_any_weights_(int8_supported()),
      own_kernels_(options.own_kernels && graph_.precision == Precision::Fp32 &&
                   own_kernels_supported()),
      allocator_(allocator),
      scratch_(scratch),
      shared_(shared),
      mem_(graph_.tensors.size()),
      md_(graph_.tensors.size()) {}

Result<std::unique_ptr<CpuDelegate>> Build::run(const NamedDataMap* named) && try {
  const size_t heap_before = heap_in_use();
  const size_t allocator_heap_before = allocator_ != nullptr ? allocator_->heap_bytes() : 0;
  named_ = named;
  engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
  stream_ = dnnl::stream(engine_);
  EMBER_TRY(build_all());
  // Of the storage views were made of, keep what a step reads; weights only reordered or
  // packed elsewhere are freed with it (release_weights dropped the rest).
  std::erase_if(viewed_, [&](const memory& m) {
    return !step_reads(static_cast<const uint8_t*>(m.get_data_handle()),
                       std::max<size_t>(m.get_desc().get_size(), 1));
  });
  // One scratchpad for every step, oneDNN's and Ember's (they run one after another).
  EMBER_ASSIGN_OR_RETURN(
      memory scratch,
      buffer(
          memory::desc({static_cast<int64_t>(std::max<size_t>(scratch_bytes_, 1))}, dt::u8, tag::a),
          Held::Scratchpad));
  for (const auto& s : steps_) s->finish(scratch);

  BuiltDelegate d;
  d.num_args = graph_.num_inputs + graph_.outputs.size();
  d.threads = threads_;
  d.engine = engine_;
  d.stream = stream_;
  d.bound = std::move(bound_);
  d.arg_md = std::move(arg_md_);
  d.arg_is_tensor = std::move(arg_is_tensor_);
  d.steps = std::move(steps_);
  d.scratchpad = scratch;
  for (memory& m : mem_) {
    if (m) d.storage.push_back(std::move(m));
  }
  for (memory& m : viewed_) d.storage.push_back(std::move(m));
  d.mapped = std::move(mapped_kept_);
  d.shared = std::move(shared_held_);
  for (auto& [t, data] : mapped_) {
    if (step_reads(data.bytes(), data.size())) d.mapped.push_back(std::move(data));
  }
  for (memory& m : out_mem_) d.storage.push_back(std::move(m));
  for (Buffer& b : pool_) d.storage.push_back(std::move(b.mem));
  DelegateSummary& s = d.summary;
  s.weight_bytes = held_bytes_[static_cast<int>(Held::Weights)];
  s.activation_bytes = held_bytes_[static_cast<int>(Held::Activations)];
  s.scratchpad_bytes = held_bytes_[static_cast<int>(Held::Scratchpad)];
  s.from_method_allocator = allocator_ != nullptr;
  s.shared_scratch_bytes = scratch_used_;
  s.int8_convolutions = int8_convolutions_;
  s.int8_chained = static_cast<int>(quant_.u8_tensors.size());
  s.int8_matmuls = int8_matmuls_;
  const size_t grown = std::max(heap_in_use(), heap_before) - heap_before;
  // The method allocator's own blocks are not the build's: it counts what it took (a mallinfo2
  // around each of its calls walked the heap's free lists a few hundred times a load).
  const size_t allocator_heap =
      allocator_ != nullptr ? allocator_->heap_bytes() - allocator_heap_before : 0;
  s.heap_bytes = grown - std::min(grown, allocator_heap);
  return std::make_unique<CpuDelegate>(std::move(d));
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Error Build::build_all() try {
  // The activations a delegate may hold (a corrupted size must not become a huge allocation).
  uint64_t activation_bytes = 0;
  for (const TensorDesc& t : graph_.tensors) {
    if (t.kind != TensorKind::Weight) {
      activation_bytes += static_cast<uint64_t>(checked_numel(t.dims)) * 4;
    }
  }
  if (activation_bytes > kMaxActivationBytes) {
    return refused("activations need " + std::to_string(activation_bytes) + " bytes, above the " +
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
  direct_out_.assign(graph_.outputs.size(), false);
  for (size_t j = 0; j < graph_.outputs.size(); ++j) {
    const TensorDesc& t = graph_.tensors[graph_.outputs[j]];
    memory::desc md = plain_md(to_dims(t.dims), act, graph_.output_dim_orders[j]);
    out_mem_.emplace_back(md, engine_, nullptr);
    bind(out_mem_.back(), static_cast<int>(graph_.num_inputs + j));
  }
  compute_last_uses();
  for (size_t i = 0; i < graph_.ops.size();) {
    cur_op_ = i;
    EMBER_ASSIGN_OR_RETURN(const size_t built, build_ops_at(*this, i));
    const size_t next = i + std::max<size_t>(built, 1);
    release_weights(i, next);
    i = next;
  }
  for (size_t j = 0; j < graph_.outputs.size(); ++j) {
    const int32_t t = graph_.outputs[j];
    if (direct_out_[j]) continue;
    EMBER_ASSIGN_OR_RETURN(memory m, src_memory(t));
    EMBER_TRY(add_reorder(m, out_mem_[j]));
  }
  return Error::Ok;
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Result<memory> Build::buffer(const memory::desc& md, Held held) try {
  const size_t bytes = md.get_size();
  if (held == Held::Transient) return memory(md, engine_);
  const size_t taken = held_bytes_[0] + held_bytes_[1] + held_bytes_[2];
  held_bytes_[static_cast<int>(held)] += bytes;
  // What a call writes and no later call reads: the method's shared scratch where it has room.
  if (scratch_ != nullptr && (held == Held::Activations || held == Held::Scratchpad)) {
    const size_t offset = (scratch_used_ + 63) / 64 * 64;
    const size_t end = offset + std::max<size_t>(bytes, 1);
    if (uint8_t* base = scratch_->reserve(end); base != nullptr) {
      scratch_used_ = end;
      return memory(md, engine_, base + offset);
    }
  }
  if (allocator_ == nullptr) return memory(md, engine_);
  // A cache line apart: oneDNN's kernels load whole lines (the heap's buffers are so aligned).
  void* p = allocator_->allocate(std::max<size_t>(bytes, 1), 64);
  if (p == nullptr) {
    return refused("the method allocator has no room for " + std::to_string(bytes) +
                       " more bytes (this delegate has taken " + std::to_string(taken) +
                       "); give the method more memory: `ember inspect MODEL.pte --memory` shows "
                       "what each delegate takes",
                   Error::MemoryAllocationFailed);
  }
  return memory(md, engine_, p);
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

int Build::bound_arg(const memory& m) const {
  for (const auto& [b, a] : bound_) {
    if (b.get() == m.get()) return a;
  }
  return -1;
}

Result<memory> Build::view(const memory& m, const memory::desc& md) try {
  const int a = bound_arg(m);
  if (a >= 0) {
    memory v(md, engine_, nullptr);
    bound_.emplace_back(v, a);
    return v;
  }
  viewed_.push_back(m);  // a view does not own its storage: this does (see run)
  return memory(md, engine_, m.get_data_handle());
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Result<memory> Build::src_memory(int32_t id) {
  if (!mem_[id]) {
    if (graph_.tensors[id].kind != TensorKind::Weight) return refused("tensor read before defined");
    EMBER_TRY(load_weight(id));
  }
  return mem_[id];
}

void Build::keep_as_view(const OpDesc& op, const memory& v) {
  set_memory(op.output, v);
  shares_storage_[op.inputs[0]] = shares_storage_[op.output] = true;
  share_buffer(op.output, op.inputs[0]);
}

void Build::set_memory(int32_t t, const memory& m) {
  md_[t] = m.get_desc();
  mem_[t] = m;
}

void Build::replace_weight(int32_t id, const memory& m, std::vector<int64_t> dims,
                           std::vector<uint8_t> dim_order) {
  TensorDesc& t = graph_.tensors[id];
  t.dims = std::move(dims);
  t.dim_order = std::move(dim_order);
  t.storage = WeightStorage::Float32;
  set_memory(id, m);
}

Result<memory> Build::as(int32_t id, const memory::desc& want) {
  EMBER_ASSIGN_OR_RETURN(memory m, src_memory(id));
  if (m.get_desc() == want) return m;
  // A weight's reorder here is mostly read once, to be packed or rescaled elsewhere.
  EMBER_ASSIGN_OR_RETURN(memory out, held_for(id) == Held::Weights
                                         ? weight_buffer(id, want)
                                         : buffer(want, Held::Activations));
  if (graph_.tensors[id].kind == TensorKind::Weight) {
    EMBER_TRY(reorder_now(m, out));
  } else {
    EMBER_TRY(add_reorder(m, out));
  }
  return out;
}

Result<memory> Build::reorder_weight(const memory& view_of_w, int32_t id,
                                     const memory::desc& want) {
  if (view_of_w.get_desc() == want) return view_of_w;
  EMBER_ASSIGN_OR_RETURN(memory out, buffer(want, held_for(id)));
  if (graph_.tensors[id].kind == TensorKind::Weight) {
    EMBER_TRY(reorder_now(view_of_w, out));
  } else {
    EMBER_TRY(add_reorder(view_of_w, out));
  }
  return out;
}

Result<memory> Build::shared_weight_reorder(int32_t id, const memory::desc& want,
                                            std::string_view what,
                                            const std::function<Result<memory>()>& view_of_w) {
  if (shared_ != nullptr) {
    if (std::shared_ptr<void> v = shared_->find(cur_op_, type_tag<memory>(), what, want)) {
      shared_held_.push_back(v);
      return *static_cast<const memory*>(v.get());
    }
  }
  EMBER_ASSIGN_OR_RETURN(const memory w, view_of_w());
  EMBER_ASSIGN_OR_RETURN(memory out, reorder_weight(w, id, want));
  // A buffer of its own: the method allocator's (alive as long as the method) or the heap's
  // (the memory owns it). The weight itself, read in place, is this build's to hold.
  if (shared_ != nullptr && out.get() != w.get()) {
    auto v = std::make_shared<memory>(out);
    shared_->add(cur_op_, type_tag<memory>(), std::string(what), want, v);
    shared_held_.push_back(std::move(v));
  }
  return out;
}

std::shared_ptr<void> SharedWeights::find(size_t op, const void* type, std::string_view what,
                                          const memory::desc& md) const {
  for (const Entry& e : entries_) {
    if (e.op == op && e.type == type && e.what == what && e.md == md) {
      if (std::shared_ptr<void> v = e.value.lock()) return v;
    }
  }
  return nullptr;
}

void SharedWeights::add(size_t op, const void* type, std::string what, const memory::desc& md,
                        const std::shared_ptr<void>& value) {
  std::erase_if(entries_, [](const Entry& e) { return e.value.expired(); });
  entries_.push_back({op, type, std::move(what), md, value});
}

Result<const float*> Build::weight_data(int32_t id, std::vector<memory>* keep) try {
  if (id < 0) return static_cast<const float*>(nullptr);
  EMBER_ASSIGN_OR_RETURN(memory m, as(id, plain_md(dims_of(id), dt::f32)));
  keep->push_back(m);
  return static_cast<const float*>(keep->back().get_data_handle());
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Error Build::reorder_now(const memory& from, const memory& to) try {
  const memory::desc md = from.get_desc();
  int64_t n = 1;
  for (int i = 0; i < md.data.ndims; ++i) n *= md.data.dims[i];
  if (md.data.ndims > 0 && n <= kCopiedWeightElements && copy_to_blocked(from, to)) {
    return Error::Ok;
  }
  dnnl::reorder(from, to).execute(stream_, const_cast<memory&>(from), const_cast<memory&>(to));
  stream_.wait();
  return Error::Ok;
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Error Build::add_reorder(const memory& from, const memory& to) try {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(engine_, from.get_desc(), engine_, to.get_desc(), attr);
  return add_primitive<dnnl::reorder>(pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

void Build::add(std::unique_ptr<Step> step) {
  scratch_bytes_ = std::max(scratch_bytes_, step->scratch_bytes());
  steps_.push_back(std::move(step));
}

void Build::add_own_step(OwnStep o, std::initializer_list<memory> reads) {
  // The build keeps the storage views were made of where a step holds it (a weight's view,
  // such as gamma's, is no owner); a kernel reads its memories through its closure.
  std::vector<memory> keep;
  for (const memory& m : reads) {
    if (m) keep.push_back(m);
  }
  add(std::make_unique<KernelStep>(std::move(o), std::move(keep)));
}

std::span<const PostOp> Build::fused_post_ops(const OpDesc& op) {
  size_t k = 0;
  while (k < op.post_ops.size() && !is_own_eltwise(op.post_ops[k])) ++k;
  return std::span<const PostOp>(op.post_ops).first(k);
}

Result<dnnl::primitive_attr> Build::attr_for(const OpDesc& op) try {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  EMBER_ASSIGN_OR_RETURN(dnnl::post_ops po, onednn_post_ops(fused_post_ops(op)));
  attr.set_post_ops(po);
  return attr;
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Result<dnnl::post_ops> Build::onednn_post_ops(std::span<const PostOp> post) try {
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
} catch (const dnnl::error& e) {
  return fail(Error::InvalidProgram, "oneDNN refused a post-op: %s", e.what());
}

bool Build::is_graph_output(int32_t t) const {
  return std::find(graph_.outputs.begin(), graph_.outputs.end(), t) != graph_.outputs.end();
}

bool Build::private_to(int32_t t, size_t reader) const {
  return graph_.tensors[t].kind == TensorKind::Intermediate && readers_[t] == 1 &&
         last_use_[t] == static_cast<int>(reader) && !shares_storage_[t];
}

Error Build::check_same_dims(int32_t a, int32_t b) const {
  if (graph_.tensors[a].dims != graph_.tensors[b].dims) {
    return refused("input and output shapes differ");
  }
  return Error::Ok;
}

Storage Build::weight_storage() {
  return [this](size_t bytes) -> std::shared_ptr<void> {
    Result<memory> m =
        buffer(memory::desc({static_cast<int64_t>(bytes)}, dt::u8, tag::a), Held::Weights);
    if (!m.ok()) {
      storage_error_ = m.error();
      return take_storage(bytes, Storage{});
    }
    auto owner = std::make_shared<memory>(std::move(*m));
    void* p = nullptr;
    dnnl_memory_get_data_handle(owner->get(), &p);
    return std::shared_ptr<void>(owner, p);
  };
}

Result<int> Build::free_buffer(const memory::desc& md, int live_until) try {
  const size_t bytes = std::max<size_t>(md.get_size(), 1);
  int best = -1;
  for (size_t b = 0; b < pool_.size(); ++b) {
    if (pool_[b].live_until < static_cast<int>(cur_op_) && pool_[b].bytes >= bytes &&
        (best < 0 || pool_[b].bytes < pool_[best].bytes)) {
      best = static_cast<int>(b);
    }
  }
  if (best < 0) {
    memory::desc raw({static_cast<int64_t>(bytes)}, dt::u8, tag::a);
    EMBER_ASSIGN_OR_RETURN(memory m, buffer(raw, Held::Activations));
    pool_.push_back({std::move(m), bytes, -1});
    best = static_cast<int>(pool_.size() - 1);
  }
  pool_[best].live_until = live_until;
  return best;
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Result<memory> Build::pooled(const memory::desc& md, int32_t t) try {
  EMBER_ASSIGN_OR_RETURN(const int b, free_buffer(md, last_use_[t]));
  buffer_of_[t] = b;
  return memory(md, engine_, pool_[b].mem.get_data_handle());
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Result<memory> Build::scratch_activation(const memory::desc& md) try {
  EMBER_ASSIGN_OR_RETURN(const int b, free_buffer(md, static_cast<int>(cur_op_)));
  return memory(md, engine_, pool_[b].mem.get_data_handle());
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

memory Build::claim_output(int32_t t) {
  for (size_t j = 0; j < graph_.outputs.size(); ++j) {
    if (graph_.outputs[j] == t && !direct_out_[j]) {
      direct_out_[j] = true;
      return out_mem_[j];
    }
  }
  return memory();
}

Result<memory> Build::make_output(const OpDesc& op, const memory::desc& md) {
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
      return refused("sum post-op operand has the wrong shape");
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
  if (!m) {
    EMBER_ASSIGN_OR_RETURN(m, pooled(md, op.output));
  }
  md_[op.output] = md;
  mem_[op.output] = m;
  // Otherwise the residual summand is copied into the destination before the op accumulates.
  if (!in_place) {
    for (const PostOp& p : fused) {
      if (!p.is_sum) continue;
      EMBER_ASSIGN_OR_RETURN(memory summand, src_memory(p.tensor));
      EMBER_TRY(add_reorder(summand, m));
    }
  }
  return m;
}

void Build::compute_last_uses() {
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

bool Build::can_sum_in_place(const OpDesc& op, int32_t t, const memory::desc& md) const {
  if (graph_.tensors[t].kind != TensorKind::Intermediate || shares_storage_[t] ||
      last_use_[t] != static_cast<int>(cur_op_) || !mem_[t] || mem_[t].get_desc() != md ||
      bound_arg(mem_[t]) >= 0) {
    return false;
  }
  return std::find(op.inputs.begin(), op.inputs.end(), t) == op.inputs.end();
}

void Build::share_buffer(int32_t t, int32_t with) {
  const int b = buffer_of_[with];
  if (b < 0) return;
  buffer_of_[t] = b;
  pool_[b].live_until = std::max(pool_[b].live_until, last_use_[t]);
}

void Build::bind(const memory& m, int arg) {
  bound_.emplace_back(m, arg);
  if (static_cast<size_t>(arg) >= arg_md_.size()) {
    arg_md_.resize(arg + 1);
    arg_is_tensor_.resize(arg + 1, 0);
  }
  arg_md_[arg] = m.get_desc();
  arg_is_tensor_[arg] = 1;
}

}  // namespace ember::cpu::delegate
