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

#include "runtime/core/evalue.h"
#include "runtime/executor/kernel_registry.h"

namespace ember::llm {

// The largest head_dim the attention takes (its per-row scratch lives on the stack).
inline constexpr int64_t kMaxHeadDim = 1024;
// Keys scored at a time: the online softmax rescales its accumulator once a block.
inline constexpr int64_t kKeyBlock = 64;
// Query rows computed together, each cache row loaded once for them (their scratch is on the
// stack).
inline constexpr int64_t kTileRows = 8;

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

  // A task is a tile of query rows that read the same key/value head: up to kTileRows rows, as
  // heads of one group (grouped-query attention) times query positions (prefill), so that each
  // cache row is loaded once for the tile.
  int64_t tile_heads() const { return std::min(kTileRows, q_heads / kv_heads); }
  int64_t tile_positions() const {
    return std::max<int64_t>(1, std::min(q_len, kTileRows / tile_heads()));
  }
  int64_t head_tiles() const { return (q_heads / kv_heads + tile_heads() - 1) / tile_heads(); }
  int64_t position_tiles() const { return (q_len + tile_positions() - 1) / tile_positions(); }
  // Tasks of run_attention: (batch, key/value head, position tile, head tile).
  int64_t tasks() const { return batch * kv_heads * position_tiles() * head_tiles(); }

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
// threads.
void run_attention(KernelContext& ctx, const AttentionJob& job);

// The row kernels, one per instruction-set variant (attention_rows.inc): tasks [begin, end) of
// AttentionJob::tasks().
void attend_rows_generic(const AttentionJob& job, int64_t begin, int64_t end);
void attend_rows_avx2(const AttentionJob& job, int64_t begin, int64_t end);

}  // namespace ember::llm
