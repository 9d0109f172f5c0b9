// aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out)
// aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out)
#include "runtime/kernels/portable/binary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error clamp_out(KernelContext& ctx, std::span<EValue*> args) {
  const bool has_min = !args[1]->is_none(), has_max = !args[2]->is_none();
  EMBER_CHECK(has_min || has_max, Error::InvalidArgument,
              "clamp: at least one of 'min' or 'max' must not be None");
  // Scalar bounds let a NaN input through; tensor bounds propagate their own NaNs too (ATen).
  // float16 computes in float, as ATen's CPU kernel does (libtorch 1.13 lacked it; PyTorch 2 has
  // it, and a program that clamps a half tensor ran there).
  const bool tensor_bounds = args[1]->is_tensor() || args[2]->is_tensor();
  return elementwise_op_out<3>(ctx, {args[0], args[1], args[2]}, nullptr, args[3]->to_tensor(),
                               {"clamp", kAcceptInt | kAcceptFloating},
                               [=](auto x, auto lo, auto hi) {
                                 if (tensor_bounds) {
                                   if (has_min) x = nan_max(x, lo);
                                   if (has_max) x = nan_min(x, hi);
                                   return x;
                                 }
                                 if (is_nan_value(x)) return x;
                                 if (has_min) x = x < lo ? lo : x;
                                 if (has_max) x = x > hi ? hi : x;
                                 return x;
                               });
}

}  // namespace ember
