// aten::bucketize.Tensor_out(Tensor self, Tensor boundaries, *, bool out_int32=False,
//     bool right=False, Tensor(a!) out)
// For each element x the index of its bucket in the sorted 1-D `boundaries`: the first i with
// x <= boundaries[i] (right: x < boundaries[i]), or the number of boundaries. As in ATen, both
// are first converted to their promoted dtype, and the search tests !(b >= x) (right: !(b > x)),
// so a NaN x lands past every boundary.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/promotion.h"

namespace ember {
namespace {

template <typename C>
void bucketize(const Tensor& in, const Tensor& boundaries, bool right, Tensor& out) {
  const LoadFn<C> load_in = load_fn<C>(in.dtype());
  const LoadFn<C> load_b = load_fn<C>(boundaries.dtype());
  const int64_t n = boundaries.numel();
  const int64_t b_stride = boundaries.dim() == 1 ? boundaries.stride(0) : 1;
  const bool wide = out.dtype() == ScalarType::Long;
  for (int64_t i = 0, numel = in.numel(); i < numel; ++i) {
    const C x = load_in(in.data(), offset_of(in, i));
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const C b = load_b(boundaries.data(), mid * b_stride);
      const bool before = right ? !(b > x) : !(b >= x);
      if (before) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const int64_t o = offset_of(out, i);
    if (wide) {
      out.data<int64_t>()[o] = lo;
    } else {
      out.data<int32_t>()[o] = static_cast<int32_t>(lo);
    }
  }
}

}  // namespace

Error bucketize_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "bucketize";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& boundaries = args[1]->to_tensor();
  const bool out_int32 = args[2]->to_bool();
  const bool right = args[3]->to_bool();
  Tensor& out = args[4]->to_tensor();
  EMBER_CHECK(boundaries.dim() == 1, Error::InvalidArgument,
              "%s: boundaries tensor must be 1 dimension, but got dim(%d)", op, boundaries.dim());
  EMBER_CHECK(out.dtype() == (out_int32 ? ScalarType::Int : ScalarType::Long),
              Error::InvalidArgument, "%s: out must be %s, got %s", op,
              out_int32 ? "int32" : "int64", to_string(out.dtype()));
  EMBER_CHECK(!out_int32 || boundaries.numel() < INT32_MAX, Error::InvalidArgument,
              "%s: the size of boundaries must be below 2^31 - 1 for an int32 result", op);
  const ScalarType common = result_type({&boundaries, &in});
  EMBER_CHECK(common != ScalarType::Bool, Error::InvalidArgument,
              "%s: not implemented for bool boundaries and input", op);
  EMBER_TRY(out.resize(in.sizes()));
  EMBER_SWITCH_REAL_TYPES(
      common, C,
      return fail(Error::InvalidArgument, "%s: dtype %s is not supported", op, to_string(common)),
      bucketize<C>(in, boundaries, right, out));
  return Error::Ok;
}

}  // namespace ember
