// aten::_to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None,
//                    Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"

namespace ember {

Error to_copy_out(KernelContext& ctx, std::span<EValue*> args) {
  // The layout is the out tensor's dim order, fixed when the program was planned.
  return copy_out(ctx.threads, args[0]->to_tensor(), args[3]->to_tensor(), "_to_copy");
}

}  // namespace ember
