// aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
#include "runtime/kernels/portable/reduce_family.h"

namespace ember {

Error log_softmax_out(KernelContext& ctx, std::span<EValue*> args) {
  return softmax_along(ctx, args[0]->to_tensor(), args[1]->to_int(), args[2]->to_bool(),
                       args[3]->to_tensor(), /*log=*/true, "_log_softmax");
}

}  // namespace ember
