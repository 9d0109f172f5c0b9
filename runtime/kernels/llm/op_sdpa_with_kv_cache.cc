// llama::sdpa_with_kv_cache.out(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache,
//     Tensor(b!) value_cache, SymInt start_pos, SymInt seq_len, Tensor? attn_mask=None,
//     float drpout_p=0., bool is_causal=False, float? scale=None, *, Tensor(c!) out)
// update_cache of key and value into their caches at start_pos, then custom_sdpa of query over
// the caches. seq_len must be the length of query, key and value. Every argument is checked
// before a cache is written.
#include "runtime/kernels/llm/common.h"

namespace ember::llm {

Error sdpa_with_kv_cache_out(KernelContext& ctx, std::span<EValue*> args) {
  constexpr const char* op = "llama::sdpa_with_kv_cache";
  const Tensor& q = args[0]->to_tensor();
  const Tensor& k = args[1]->to_tensor();
  const Tensor& v = args[2]->to_tensor();
  Tensor& k_cache = args[3]->to_tensor();
  Tensor& v_cache = args[4]->to_tensor();
  const int64_t start_pos = args[5]->to_int(), seq_len = args[6]->to_int();
  EMBER_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, Error::InvalidArgument,
              "%s: query, key and value must be 4-D [batch, seq, heads, head_dim]", op);
  EMBER_CHECK(seq_len == q.size(1) && seq_len == k.size(1) && seq_len == v.size(1),
              Error::InvalidArgument,
              "%s: seq_len %lld must be the length of query, key and value (%d, %d, %d)", op,
              static_cast<long long>(seq_len), q.size(1), k.size(1), v.size(1));
  AttentionJob job;
  EMBER_TRY(plan_attention(op, q, k_cache, v_cache, start_pos, *args[7], args[9]->to_bool(),
                           *args[10], args[11]->to_tensor(), &job));
  EMBER_CHECK(same_sizes(k.sizes(), v.sizes()), Error::InvalidArgument,
              "%s: key and value must have the same sizes", op);
  // Both writes are checked first (the second can fail only where the first would): a failing
  // call leaves the caches as they were.
  EMBER_CHECK(k.dtype() == k_cache.dtype() && k.size(0) == k_cache.size(0) &&
                  k.size(2) == k_cache.size(2) && k.size(3) == k_cache.size(3) &&
                  k.is_contiguous() && v.is_contiguous() && start_pos + seq_len <= k_cache.size(1),
              Error::InvalidArgument,
              "%s: key and value must be contiguous [%d, %lld, %d, %d] %s tensors that fit the "
              "caches at start_pos %lld",
              op, k_cache.size(0), static_cast<long long>(seq_len), k_cache.size(2),
              k_cache.size(3), to_string(k_cache.dtype()), static_cast<long long>(start_pos));
  EMBER_TRY(write_cache(op, "key_cache", k, k_cache, start_pos));
  EMBER_TRY(write_cache(op, "value_cache", v, v_cache, start_pos));
  run_attention(ctx, job);
  return Error::Ok;
}

}  // namespace ember::llm
