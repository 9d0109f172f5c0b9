// aten::arange.out(Scalar end, *, Tensor(a!) out)
// aten::arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out)
// ATen's size rule: ceil((end - start) / step), in int64 when every bound is an integer, else in
// double; element i is start + i * step, computed in double (int64 for integer outs).
#include <cmath>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {
namespace {

Error arange(const EValue* start_v, const EValue& end_v, const EValue* step_v, Tensor& out) {
  const bool integral = (start_v == nullptr || !start_v->is_double()) && !end_v.is_double() &&
                        (step_v == nullptr || !step_v->is_double());
  const double start = start_v == nullptr ? 0 : start_v->scalar_as_double();
  const double end = end_v.scalar_as_double();
  const double step = step_v == nullptr ? 1 : step_v->scalar_as_double();
  EMBER_CHECK(step != 0, Error::InvalidArgument, "arange: step must be nonzero");
  EMBER_CHECK(std::isfinite(start) && std::isfinite(end), Error::InvalidArgument,
              "arange: unsupported range: %g -> %g", start, end);
  EMBER_CHECK((step > 0 && end >= start) || (step < 0 && end <= start), Error::InvalidArgument,
              "arange: upper bound and larger bound inconsistent with step sign");
  EMBER_CHECK(out.dim() == 1, Error::InvalidArgument, "arange: out must be 1-D, has rank %d",
              out.dim());
  double size_d = 0;
  if (integral && !is_floating(out.dtype())) {
    const int64_t s = start_v == nullptr ? 0 : start_v->to_int(), e = end_v.to_int();
    const int64_t st = step_v == nullptr ? 1 : step_v->to_int();
    size_d = std::ceil(static_cast<double>(e - s) / static_cast<double>(st));
  } else {
    size_d = std::ceil((end - start) / step);
  }
  EMBER_CHECK(size_d >= 0 && size_d < 2147483648.0, Error::InvalidArgument,
              "arange: invalid size %g", size_d);
  const int32_t size[1] = {static_cast<int32_t>(size_d)};
  EMBER_TRY(out.resize(size));
  EMBER_SWITCH_ALL_TYPES(out.dtype(), T, (void)0, {
    T* p = out.data<T>();
    for (int32_t i = 0; i < size[0]; ++i) {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        const int64_t s = start_v == nullptr ? 0 : static_cast<int64_t>(start);
        p[i] = static_cast<T>(s + static_cast<int64_t>(step) * i);
      } else {
        p[i] = convert<T>(start + step * i);
      }
    }
  });
  return Error::Ok;
}

}  // namespace

Error arange_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return arange(nullptr, *args[0], nullptr, args[1]->to_tensor());
}

Error arange_start_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return arange(args[0], *args[1], args[2], args[3]->to_tensor());
}

}  // namespace ember
