// cortex_m::transpose.out(Tensor input, int[] perm, *, Tensor(a!) out)
// numpy's transpose(perm) of an int8 tensor of rank 1 to 4, both tensors read as contiguous in
// logical order (cortex-m-ops.md §3.15). CMSIS-NN swaps a rank-2 tensor whatever perm says; export
// only writes [1, 0] there, and Ember follows perm (an identity perm is a copy).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

Error transpose_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::transpose";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  EMBER_TRY(check_dtype(in, ScalarType::Char, op, "input"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  const int rank = in.dim();
  EMBER_CHECK(rank >= 1 && rank <= 4, Error::InvalidArgument,
              "%s: input must have rank 1 to 4, got %d", op, rank);
  const std::span<const int64_t> perm = args[1]->to_int_list();
  EMBER_CHECK(perm.size() == static_cast<size_t>(rank), Error::InvalidArgument,
              "%s: perm has %zu entries for a rank-%d input", op, perm.size(), rank);
  bool seen[4] = {};
  for (int i = 0; i < rank; ++i) {
    EMBER_CHECK(perm[i] >= 0 && perm[i] < rank && !seen[perm[i]], Error::InvalidArgument,
                "%s: perm is not a permutation of 0..%d", op, rank - 1);
    seen[perm[i]] = true;
  }
  // 4-D views: output dim k of 4 reads input dim perm[k]; lower ranks are left-padded with 1s.
  int64_t in_stride[4] = {}, size[4] = {1, 1, 1, 1}, stride[4] = {0, 0, 0, 0}, want[4];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= in.size(d);
  }
  for (int k = 0; k < rank; ++k) {
    want[k] = in.size(static_cast<int>(perm[k]));
    size[4 - rank + k] = want[k];
    stride[4 - rank + k] = in_stride[perm[k]];
  }
  EMBER_TRY(check_sizes(out, {want, static_cast<size_t>(rank)}, op, "out"));
  EMBER_CHECK(is_dense(in) && is_dense(out), Error::InvalidArgument,
              "%s: input and out must be contiguous (read in logical order)", op);
  const int8_t* x = in.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  for (int64_t i0 = 0; i0 < size[0]; ++i0) {
    for (int64_t i1 = 0; i1 < size[1]; ++i1) {
      for (int64_t i2 = 0; i2 < size[2]; ++i2) {
        for (int64_t i3 = 0; i3 < size[3]; ++i3) {
          *y++ = x[i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3]];
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
