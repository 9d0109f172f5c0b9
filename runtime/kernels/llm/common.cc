#include "runtime/kernels/llm/common.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/platform/cpu_isa.h"
#include "runtime/platform/thread_pool.h"

namespace ember::llm {
namespace {

Error check_rank4_contiguous(const char* op, const char* what, const Tensor& t) {
  EMBER_CHECK(t.dim() == 4, Error::InvalidArgument,
              "%s: %s must be 4-D [batch, seq, heads, head_dim], got %d dimensions", op, what,
              t.dim());
  EMBER_CHECK(t.is_contiguous(), Error::InvalidArgument, "%s: %s must be contiguous", op, what);
  return Error::Ok;
}

bool is_attention_dtype(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Half || t == ScalarType::BFloat16;
}

}  // namespace

Error write_cache(const char* op, const char* what, const Tensor& value, Tensor& cache,
                  int64_t start_pos) {
  EMBER_TRY(check_rank4_contiguous(op, "value", value));
  EMBER_TRY(check_rank4_contiguous(op, what, cache));
  EMBER_CHECK(value.dtype() == cache.dtype(), Error::InvalidArgument,
              "%s: value is %s but %s is %s", op, to_string(value.dtype()), what,
              to_string(cache.dtype()));
  for (int d : {0, 2, 3}) {
    EMBER_CHECK(value.size(d) == cache.size(d), Error::InvalidArgument,
                "%s: value and %s differ in dimension %d (%d vs %d)", op, what, d, value.size(d),
                cache.size(d));
  }
  const int64_t seq = value.size(1), max_seq = cache.size(1);
  EMBER_CHECK(start_pos >= 0 && start_pos <= max_seq - seq, Error::InvalidArgument,
              "%s: start_pos %lld + %lld new positions do not fit the %s's %lld positions", op,
              static_cast<long long>(start_pos), static_cast<long long>(seq), what,
              static_cast<long long>(max_seq));
  // One contiguous block a batch: value[b] is S rows of H * D, as are the cache's rows from
  // start_pos.
  const size_t row_bytes =
      static_cast<size_t>(cache.size(2)) * cache.size(3) * cache.element_size();
  const size_t block = static_cast<size_t>(seq) * row_bytes;
  if (block == 0) return Error::Ok;
  const auto* src = static_cast<const uint8_t*>(value.data());
  auto* dst = static_cast<uint8_t*>(cache.mutable_data());
  for (int64_t b = 0; b < value.size(0); ++b) {
    std::memcpy(dst + (static_cast<size_t>(b) * max_seq + start_pos) * row_bytes,
                src + static_cast<size_t>(b) * block, block);
  }
  return Error::Ok;
}

Error plan_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                     int64_t start_pos, const EValue& mask, bool causal, const EValue& scale,
                     Tensor& out, AttentionJob* job) {
  EMBER_TRY(check_rank4_contiguous(op, "query", q));
  EMBER_TRY(check_rank4_contiguous(op, "key cache", k));
  EMBER_TRY(check_rank4_contiguous(op, "value cache", v));
  EMBER_CHECK(is_attention_dtype(q.dtype()), Error::NotSupported,
              "%s: query is %s; the attention takes Float, Half or BFloat16 (the quantized "
              "custom_quantized_sdpa is a different op)",
              op, to_string(q.dtype()));
  EMBER_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype() && out.dtype() == q.dtype(),
              Error::InvalidArgument,
              "%s: query, key cache, value cache and out must share a dtype, got %s, %s, %s, %s",
              op, to_string(q.dtype()), to_string(k.dtype()), to_string(v.dtype()),
              to_string(out.dtype()));
  EMBER_CHECK(same_sizes(k.sizes(), v.sizes()), Error::InvalidArgument,
              "%s: key cache and value cache must have the same sizes", op);
  EMBER_CHECK(q.size(0) == k.size(0), Error::InvalidArgument,
              "%s: query has batch %d but the caches %d", op, q.size(0), k.size(0));
  EMBER_CHECK(q.size(3) == k.size(3), Error::InvalidArgument,
              "%s: query head_dim %d differs from the caches' %d", op, q.size(3), k.size(3));
  const int64_t q_heads = q.size(2), kv_heads = k.size(2), head_dim = q.size(3);
  EMBER_CHECK(kv_heads > 0 && q_heads % kv_heads == 0, Error::InvalidArgument,
              "%s: %lld query heads are not a multiple of %lld key/value heads", op,
              static_cast<long long>(q_heads), static_cast<long long>(kv_heads));
  EMBER_CHECK(head_dim <= kMaxHeadDim, Error::NotSupported,
              "%s: head_dim %lld is above the %lld this kernel takes", op,
              static_cast<long long>(head_dim), static_cast<long long>(kMaxHeadDim));
  const int64_t q_len = q.size(1), kv_len = k.size(1);
  EMBER_CHECK(start_pos >= 0, Error::InvalidArgument, "%s: start_pos %lld is negative", op,
              static_cast<long long>(start_pos));
  const float* mask_data = nullptr;
  if (mask.is_tensor()) {
    const Tensor& m = mask.to_tensor();
    EMBER_CHECK(!causal, Error::InvalidArgument, "%s: attn_mask and is_causal cannot both be set",
                op);
    EMBER_CHECK(m.dtype() == ScalarType::Float, Error::InvalidArgument,
                "%s: attn_mask must be Float, got %s", op, to_string(m.dtype()));
    EMBER_CHECK(m.dim() == 2 && m.size(0) == q_len && m.size(1) == kv_len && m.is_contiguous(),
                Error::InvalidArgument,
                "%s: attn_mask must be a contiguous 2-D [%lld, %lld] (query length, cache "
                "length)",
                op, static_cast<long long>(q_len), static_cast<long long>(kv_len));
    mask_data = m.data<float>();
  } else {
    EMBER_CHECK(start_pos <= kv_len - q_len, Error::InvalidArgument,
                "%s: start_pos %lld + %lld new positions pass the caches' %lld positions", op,
                static_cast<long long>(start_pos), static_cast<long long>(q_len),
                static_cast<long long>(kv_len));
  }
  double s = 1.0 / std::sqrt(static_cast<double>(head_dim));
  if (scale.is_double()) s = scale.to_double();
  if (scale.is_int()) s = static_cast<double>(scale.to_int());
  EMBER_TRY(out.resize(q.sizes()));
  job->dtype = q.dtype();
  job->q = q.data();
  job->k = k.data();
  job->v = v.data();
  job->mask = mask_data;
  job->out = out.mutable_data();
  job->batch = q.size(0);
  job->q_len = q_len;
  job->q_heads = q_heads;
  job->kv_heads = kv_heads;
  job->head_dim = head_dim;
  job->kv_len = kv_len;
  job->start_pos = start_pos;
  job->causal = causal;
  job->scale = static_cast<float>(s);
  return Error::Ok;
}

std::span<const AttentionVariant> attention_variants() {
#if defined(EMBER_LLM_X86_VARIANTS)
  static const AttentionVariant kAll[] = {kAttentionGeneric, kAttentionAvx2};
  return {kAll, detected_cpu_isa() >= CpuIsa::Avx2 ? size_t{2} : size_t{1}};
#else
  static const AttentionVariant kAll[] = {kAttentionGeneric};
  return kAll;
#endif
}

void run_attention(KernelContext& ctx, const AttentionJob& job) {
#if defined(EMBER_LLM_X86_VARIANTS)
  if (cpu_isa() >= CpuIsa::Avx2) return run_attention(ctx, job, kAttentionAvx2);
#endif
  run_attention(ctx, job, kAttentionGeneric);
}

void run_attention(KernelContext& ctx, const AttentionJob& job, const AttentionVariant& variant) {
  const int64_t tasks = job.tasks();
  if (tasks == 0 || job.head_dim == 0) return;  // out is empty
  // About 256k multiply-adds a thread's range at the least (some 10 us at AVX2's speed): a decode
  // step over a short cache stays on one thread, where waking the pool would cost about as much
  // as it saves.
  const int64_t keys = job.mask != nullptr ? job.kv_len : job.start_pos + job.q_len;
  const int64_t rows = job.tile_heads() * job.tile_positions();
  const int64_t per_task = std::max<int64_t>(1, 2 * keys * job.head_dim * rows);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / per_task);
  if (ctx.threads == nullptr || tasks <= grain) {
    variant.attend(job, 0, tasks);
    return;
  }
  ctx.threads->parallel_for(tasks, grain,
                            [&](int64_t begin, int64_t end) { variant.attend(job, begin, end); });
}

}  // namespace ember::llm
