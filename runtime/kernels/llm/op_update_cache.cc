// llama::update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out)
// Writes value [B, S, H, D] into cache [B, MaxS, H, D] at positions [start_pos, start_pos + S), in
// place; any dtype. out is ExecuTorch's placeholder (a 1-element tensor no program reads); it is
// zeroed so that it holds no stale bytes.
#include <cstring>

#include "runtime/kernels/llm/common.h"

namespace ember::llm {

Error update_cache_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  EMBER_TRY(write_cache("llama::update_cache", "cache", args[0]->to_tensor(), args[1]->to_tensor(),
                        args[2]->to_int()));
  Tensor& out = args[3]->to_tensor();
  if (out.nbytes() > 0 && out.mutable_data() != nullptr) {
    std::memset(out.mutable_data(), 0, out.nbytes());
  }
  return Error::Ok;
}

}  // namespace ember::llm
