// What the llm kernels share: the KV-cache write of update_cache and sdpa_with_kv_cache, and the
// attention over a cache of custom_sdpa and sdpa_with_kv_cache, split into plan (validate the
// arguments, size the output) and run (compute; allocates nothing).
//
//   AttentionJob job;
//   EMBER_TRY(plan_attention(op, q, k_cache, v_cache, start_pos, *args[4], causal, *args[7], out,
//   &job)); run_attention(ctx, job);
//
// Layouts are ExecuTorch's: q, k, v, caches and out are [batch, seq, heads, head_dim], contiguous.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "runtime/core/evalue.h"
#include "runtime/executor/kernel_registry.h"

namespace ember::llm {

// The largest head_dim the attention takes (its per-task scratch lives on the stack).
inline constexpr int64_t kMaxHeadDim = 1024;
// Floats in each of a task's scratch arrays (the tile's queries, its output accumulators, a block
// of scores, a block of converted keys or values): 16 KiB each, on the stack of the thread that
// runs the task. A tile's rows times head_dim fit one.
inline constexpr int64_t kScratchFloats = 4096;
// Query rows in a tile at the most (each cache row is loaded once for them).
inline constexpr int64_t kTileRows = 64;

// Writes value [B, S, H, D] into cache [B, MaxS, H, D] at rows [start_pos, start_pos + S), in
// place. Any dtype (the two must match). InvalidArgument when the shapes disagree, start_pos is
// negative or start_pos + S passes MaxS; nothing is written then.
Error write_cache(const char* op, const char* what, const Tensor& value, Tensor& cache,
                  int64_t start_pos);

// One attention call, planned: everything run_attention reads.
struct AttentionJob {
  ScalarType dtype = ScalarType::Float;  // of q, k, v and out: Float, Half or BFloat16
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const float* mask = nullptr;  // [q_len, kv_len], added to the scores; null: none
  void* out = nullptr;
  int64_t batch = 0, q_len = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t kv_len = 0;  // rows of the caches
  int64_t start_pos = 0;
  bool causal = false;
  float scale = 1.0f;

  // A task is a tile of query rows that read the same key/value head: heads of one group
  // (grouped-query attention) times consecutive query positions (prefill), position-major, so
  // that each cache row is loaded once for the tile. The kernel computes on whole vectors of
  // rows: up to 64 rows where a multiple of 16 of them fits the scratch (head_dim up to 256),
  // else what fits unpadded.
  int64_t tile_rows_cap() const {
    const int64_t fit = kScratchFloats / std::max<int64_t>(head_dim, 1);
    return fit >= 16 ? std::min(kTileRows, fit / 16 * 16) : fit;
  }
  int64_t tile_heads() const { return std::min(tile_rows_cap(), q_heads / kv_heads); }
  int64_t tile_positions() const {
    return std::max<int64_t>(1, std::min(q_len, tile_rows_cap() / tile_heads()));
  }
  int64_t head_tiles() const { return (q_heads / kv_heads + tile_heads() - 1) / tile_heads(); }
  int64_t position_tiles() const { return (q_len + tile_positions() - 1) / tile_positions(); }
  // Tasks of run_attention: (position tile, batch, key/value head, head tile), the last position
  // tile first: with is_causal, the costliest tasks go first, so that the threads, taking ranges
  // of tasks in turn, end together.
  int64_t tasks() const { return position_tiles() * batch * kv_heads * head_tiles(); }

  // Keys query row `s` attends to: [0, num_keys(s)).
  int64_t num_keys(int64_t s) const {
    if (mask != nullptr) return kv_len;
    return causal ? start_pos + s + 1 : start_pos + q_len;
  }
};

// Checks the arguments of an attention over caches k and v at start_pos (ExecuTorch's rules:
// docs in README.md), resizes out to q's sizes and fills *job. `mask` is a Tensor or None,
// `scale` a Double, Int or None (None: 1/sqrt(head_dim)).
Error plan_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                     int64_t start_pos, const EValue& mask, bool causal, const EValue& scale,
                     Tensor& out, AttentionJob* job);

// Computes the planned attention, over (batch, key/value head, query row) on the context's
// threads, with the widest kernel variant cpu_isa() allows.
void run_attention(KernelContext& ctx, const AttentionJob& job);

// One instruction-set variant of the attention kernel (attention_rows.inc).
struct AttentionVariant {
  const char* name;  // "generic", "avx2"
  // Tasks [begin, end) of AttentionJob::tasks().
  void (*attend)(const AttentionJob& job, int64_t begin, int64_t end);
  // y[i] = exp(x[i]) for x[i] <= 0 (also -inf, NaN), as the kernel computes it (for its tests).
  void (*exp_nonpositive)(const float* x, float* y, int64_t n);
};

// The variants this build has and this CPU runs (whatever EMBER_CPU_ISA says), the baseline
// first: tests run each.
std::span<const AttentionVariant> attention_variants();

// run_attention with a given variant.
void run_attention(KernelContext& ctx, const AttentionJob& job, const AttentionVariant& variant);

// The variants' entry points (attention_generic.cc, attention_avx2.cc).
extern const AttentionVariant kAttentionGeneric;
extern const AttentionVariant kAttentionAvx2;

}  // namespace ember::llm
