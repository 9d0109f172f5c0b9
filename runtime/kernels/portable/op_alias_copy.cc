// aten::alias_copy.out(Tensor self, *, Tensor(a!) out)
// The functional form of alias, which ExecuTorch's exporter writes for torch's aliases (Swin
// Transformer's): the input's elements, copied into out's dim order.
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error alias_copy_out(KernelContext& ctx, std::span<EValue*> args) {
  return copy_out(ctx.threads, args[0]->to_tensor(), args[1]->to_tensor(), "alias_copy");
}

}  // namespace ember
