// aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error clone_out(KernelContext& ctx, std::span<EValue*> args) {
  // The layout is the out tensor's dim order, fixed when the program was planned.
  return copy_out(ctx.threads, args[0]->to_tensor(), args[2]->to_tensor(), "clone");
}

}  // namespace ember
