// aten::masked_fill.Scalar_out(Tensor self, Tensor mask, Scalar value, *, Tensor(a!) out)
// out has the broadcast shape of self and a bool mask; value is cast to self's dtype.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {

Error masked_fill_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& self = args[0]->to_tensor();
  const Tensor& mask = args[1]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(mask.dtype() == ScalarType::Bool, Error::InvalidArgument,
              "masked_fill: only supports boolean masks, but got mask with dtype %s",
              to_string(mask.dtype()));
  EMBER_CHECK(out.dtype() == self.dtype(), Error::InvalidArgument,
              "masked_fill: out has dtype %s, expected %s", to_string(out.dtype()),
              to_string(self.dtype()));
  EMBER_CHECK(!is_integral(self.dtype(), true) || !args[2]->is_double(), Error::InvalidArgument,
              "masked_fill: a floating value cannot fill a %s tensor", to_string(self.dtype()));
  EMBER_TRY(resize_to_broadcast(self, mask, out));
  const bool* pm = mask.data<bool>();
  EMBER_SWITCH_ALL_TYPES(self.dtype(), T, (void)0, {
    const T value = scalar_to<T>(*args[2]);
    const T* ps = self.data<T>();
    T* po = out.data<T>();
    for_each_broadcast(self, mask, out, [&](int64_t is, int64_t im, int64_t io) {
      po[io] = pm[im] ? value : ps[is];
    });
  });
  return Error::Ok;
}

}  // namespace ember
