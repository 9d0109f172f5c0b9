// aten::arange.out(Scalar end, *, Tensor(a!) out)
// aten::arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out)
// ATen's size rule: ceil((end - start) / step), in int64 when every bound is an integer, else in
// double; element i is start + i * step, computed in double (int64 for integer outs).
#include <cmath>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {
namespace {

// Element i is start + i * step: in int64 for integer outs (of the bounds truncated), else in
// double. A template, so that each dtype compiles only its own branch (a discarded `if constexpr`
// branch outside a template is still compiled, e.g. int64 -> float16 for the 16-bit floats).
template <typename T>
void fill(T* p, int32_t size, double start, double step) {
  for (int32_t i = 0; i < size; ++i) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      p[i] = static_cast<T>(static_cast<int64_t>(start) + static_cast<int64_t>(step) * i);
    } else {
      p[i] = convert<T>(start + step * i);
    }
  }
}

Error arange(const EValue* start_v, const EValue& end_v, const EValue* step_v, Tensor& out) {
  const ScalarType dt = out.dtype();
  // ATen (libtorch 1.13) has no bool arange.
  EMBER_CHECK(dt != ScalarType::Bool, Error::InvalidArgument,
              "arange: dtype bool is not supported");
  EMBER_CHECK(out.dim() == 1, Error::InvalidArgument, "arange: out must be 1-D, has rank %d",
              out.dim());
  double start = start_v == nullptr ? 0 : start_v->scalar_as_double();
  double end = end_v.scalar_as_double();
  double step = step_v == nullptr ? 1 : step_v->scalar_as_double();
  EMBER_CHECK(std::isfinite(start) && std::isfinite(end), Error::InvalidArgument,
              "arange: unsupported range: %g -> %g", start, end);
  // ATen computes in the out's accumulation type, int64 for integer outs: the bounds and the step
  // are truncated to integers before the checks (a step of 0.5 is a zero step there).
  const bool integral = !is_floating(dt);
  const auto as_int = [](const EValue* v, double d) {
    return v != nullptr && v->is_int() ? v->to_int() : static_cast<int64_t>(d);
  };
  const int64_t istart = as_int(start_v, start), iend = as_int(&end_v, end),
                istep = as_int(step_v, step);
  if (integral) {
    start = static_cast<double>(istart);
    step = static_cast<double>(istep);
  }
  const double lo = integral ? static_cast<double>(istart) : start;
  const double hi = integral ? static_cast<double>(iend) : end;
  EMBER_CHECK(step != 0, Error::InvalidArgument, "arange: step must be nonzero");
  EMBER_CHECK((step > 0 && hi >= lo) || (step < 0 && hi <= lo), Error::InvalidArgument,
              "arange: upper bound and larger bound inconsistent with step sign");
  // The size: from the truncated bounds for int64 outs, else from the bounds as given, as ATen.
  const double size_d =
      dt == ScalarType::Long
          ? std::ceil(static_cast<double>(iend - istart) / static_cast<double>(istep))
          : std::ceil((end_v.scalar_as_double() -
                       (start_v == nullptr ? 0 : start_v->scalar_as_double())) /
                      (step_v == nullptr ? 1 : step_v->scalar_as_double()));
  EMBER_CHECK(size_d >= 0 && size_d < 2147483648.0, Error::InvalidArgument,
              "arange: invalid size %g", size_d);
  const int32_t size[1] = {static_cast<int32_t>(size_d)};
  EMBER_TRY(out.resize(size));
  EMBER_SWITCH_ALL_TYPES(dt, T, (void)0, fill(out.data<T>(), size[0], start, step));
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
