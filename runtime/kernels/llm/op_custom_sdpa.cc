// llama::custom_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos,
//     Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None, *,
//     Tensor(a!) out)
// Attention of query [B, S, Hq, D] over the caches key and value [B, MaxS, Hkv, D] (Hq a multiple
// of Hkv: grouped-query attention), which already hold the new positions: without a mask, query
// row s sees positions [0, start_pos + S), or [0, start_pos + s] when is_causal; with a Float
// [S, MaxS] mask (not with is_causal), every position, the mask added to the scores. scale
// defaults to 1/sqrt(D); drpout_p is ignored, as ExecuTorch's kernel ignores it (inference).
#include "runtime/kernels/llm/common.h"

namespace ember::llm {

Error custom_sdpa_out(KernelContext& ctx, std::span<EValue*> args) {
  AttentionJob job;
  EMBER_TRY(plan_attention("llama::custom_sdpa", args[0]->to_tensor(), args[1]->to_tensor(),
                           args[2]->to_tensor(), args[3]->to_int(), *args[4], args[6]->to_bool(),
                           *args[7], args[8]->to_tensor(), &job));
  run_attention(ctx, job);
  return Error::Ok;
}

}  // namespace ember::llm
