// cortex_m::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out)
// cortex_m::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out)
// Element-wise max/min of the raw int8 bytes with numpy broadcasting over shapes right-aligned
// into 4 dims; out is resized to the broadcast shape (cortex-m-ops.md §3.13). CMSIS-NN reads past
// its input for some inner broadcasts (§6.3); Ember implements the broadcast as numpy defines it.
// The kernel reads memory as logical order (§6.6), so non-contiguous tensors are rejected.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {
namespace {

// Sizes and broadcast strides (0 along a broadcast dim) of `t` right-aligned into 4 dims.
void aligned(const Tensor& t, int64_t sizes[4], int64_t strides[4]) {
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    const int d = t.dim() - 4 + i;
    sizes[i] = d >= 0 ? t.size(d) : 1;
    strides[i] = sizes[i] == 1 ? 0 : stride;
    stride *= sizes[i];
  }
}

Error max_min(std::span<EValue*> args, bool maximum) {
  const char* op = maximum ? "cortex_m::maximum" : "cortex_m::minimum";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  EMBER_TRY(check_dtype(a, ScalarType::Char, op, "self"));
  EMBER_TRY(check_dtype(b, ScalarType::Char, op, "other"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  EMBER_CHECK(a.dim() <= 4 && b.dim() <= 4, Error::InvalidArgument,
              "%s: self (rank %d) and other (rank %d) must have rank <= 4", op, a.dim(), b.dim());
  int64_t as[4], ast[4], bs[4], bst[4], os[4];
  aligned(a, as, ast);
  aligned(b, bs, bst);
  for (int i = 0; i < 4; ++i) {
    EMBER_CHECK(as[i] == bs[i] || as[i] == 1 || bs[i] == 1, Error::InvalidArgument,
                "%s: sizes %lld and %lld do not broadcast (dim %d of 4, right-aligned)", op,
                static_cast<long long>(as[i]), static_cast<long long>(bs[i]), i);
    os[i] = as[i] == 1 ? bs[i] : as[i];
  }
  const int rank = a.dim() > b.dim() ? a.dim() : b.dim();
  EMBER_TRY(check_rank(out, rank, op, "out"));
  int32_t want[4];
  for (int i = 0; i < rank; ++i) want[i] = static_cast<int32_t>(os[4 - rank + i]);
  if (Error e = out.resize({want, static_cast<size_t>(rank)}); e != Error::Ok) {
    return add_error_context(e, "%s: out", op);
  }
  EMBER_CHECK(is_dense(a) && is_dense(b) && is_dense(out), Error::InvalidArgument,
              "%s: self, other and out must be contiguous (read in logical order)", op);
  const int8_t* x = a.data<int8_t>();
  const int8_t* z = b.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  for (int64_t i0 = 0; i0 < os[0]; ++i0) {
    for (int64_t i1 = 0; i1 < os[1]; ++i1) {
      for (int64_t i2 = 0; i2 < os[2]; ++i2) {
        for (int64_t i3 = 0; i3 < os[3]; ++i3) {
          const int8_t u = x[i0 * ast[0] + i1 * ast[1] + i2 * ast[2] + i3 * ast[3]];
          const int8_t v = z[i0 * bst[0] + i1 * bst[1] + i2 * bst[2] + i3 * bst[3]];
          *y++ = maximum ? (u > v ? u : v) : (u < v ? u : v);
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace

Error maximum_out(KernelContext& /*ctx*/, std::span<EValue*> args) { return max_min(args, true); }

Error minimum_out(KernelContext& /*ctx*/, std::span<EValue*> args) { return max_min(args, false); }

}  // namespace ember::cortex_m
