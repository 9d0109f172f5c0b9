// cortex_m::quantized_batch_matmul.out(Tensor lhs, int lhs_zero_point, Tensor rhs_transposed,
//     int rhs_zero_point, int output_zero_point, int output_multiplier, int output_shift,
//     Tensor scratch, *, Tensor(a!) out)
// int8 batched matmul, lhs [B, M, K] times rhs_transposed [B, N, K] (cortex-m-ops.md §3.16).
// Despite their names, lhs_zero_point and rhs_zero_point hold offsets (-zp) and are added (§2.3).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

Error quantized_batch_matmul_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_batch_matmul";
  const Tensor& lhs = args[0]->to_tensor();
  const Tensor& rhs = args[2]->to_tensor();
  Tensor& out = args[8]->to_tensor();
  int32_t lhs_offset, rhs_offset, out_zp, mult, shift;
  EMBER_TRY(read_int32(*args[1], op, "lhs_zero_point", &lhs_offset));
  EMBER_TRY(read_int32(*args[3], op, "rhs_zero_point", &rhs_offset));
  EMBER_TRY(read_int32(*args[4], op, "output_zero_point", &out_zp));
  EMBER_TRY(read_int32(*args[5], op, "output_multiplier", &mult));
  EMBER_TRY(read_int(*args[6], op, "output_shift", kMinShift, kMaxShift, &shift));
  EMBER_TRY(check_dtype(lhs, ScalarType::Char, op, "lhs"));
  EMBER_TRY(check_dtype(rhs, ScalarType::Char, op, "rhs_transposed"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  EMBER_TRY(check_rank(lhs, 3, op, "lhs"));
  EMBER_TRY(check_rank(rhs, 3, op, "rhs_transposed"));
  const int64_t b = lhs.size(0), m = lhs.size(1), k = lhs.size(2), n = rhs.size(1);
  const int64_t rhs_want[] = {b, n, k};
  EMBER_TRY(check_sizes(rhs, rhs_want, op, "rhs_transposed"));
  const int64_t out_want[] = {b, m, n};
  EMBER_TRY(check_sizes(out, out_want, op, "out"));
  EMBER_CHECK(is_dense(lhs) && is_dense(rhs) && is_dense(out), Error::InvalidArgument,
              "%s: lhs, rhs_transposed and out must be contiguous", op);

  const int8_t* a = lhs.data<int8_t>();
  const int8_t* r = rhs.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      const int8_t* row = a + (bi * m + i) * k;
      for (int64_t j = 0; j < n; ++j) {
        const int8_t* col = r + (bi * n + j) * k;
        int32_t acc = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          acc =
              wrap_add(acc, wrap_mul(wrap_add(row[kk], lhs_offset), wrap_add(col[kk], rhs_offset)));
        }
        const int32_t v = wrap_add(requantize(acc, mult, shift), out_zp);
        y[(bi * m + i) * n + j] = static_cast<int8_t>(clamp_i32(v, -128, 127));
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
