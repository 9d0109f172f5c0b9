// aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out)
#include "runtime/kernels/portable/unary_family.h"
#include "runtime/kernels/portable/util/math.h"

namespace ember {

Error hardtanh_out(KernelContext& ctx, std::span<EValue*> args) {
  const EValue lo = *args[1], hi = *args[2];
  EMBER_CHECK(args[0]->to_tensor().dtype() != ScalarType::Byte ||
                  (scalar_arg(lo) >= 0 && scalar_arg(hi) >= 0),
              Error::InvalidArgument,
              "hardtanh: cannot do hardtanh on an unsigned type with "
              "negative limits");
  return unary_op_out(ctx, args[0]->to_tensor(), args[3]->to_tensor(),
                      {"hardtanh", kAcceptInt | kAcceptFloating}, [&](auto x) {
                        using T = decltype(x);
                        if (is_nan_value(x)) return x;
                        const T l = scalar_to<T>(lo), h = scalar_to<T>(hi);
                        return x < l ? l : x > h ? h : x;
                      });
}

}  // namespace ember
