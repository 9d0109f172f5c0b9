// cortex_m::softmax.out(Tensor input, int dim, int input_zero_point, int output_zero_point,
//     int input_multiplier, int input_shift, int diff_min, *, Tensor(a!) out)
// int8 softmax over the last dim in gemmlowp-style fixed point (cortex-m-ops.md §3.14), bit for
// bit: exp of the Q5.26 differences in Q0.31, their sum, a Newton-Raphson reciprocal, and a
// rounding shift to the output's scale 1/256 with zero point -128. Every int32 step wraps.
#include <bit>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {
namespace {

// SATSHL(v, e) of §3.14: v * 2^e, saturating beyond +-(2^(31-e) - 1).
int32_t sat_shl(int32_t v, int e) {
  const int32_t limit = static_cast<int32_t>((int64_t{1} << (31 - e)) - 1);
  if (v > limit) return kInt32Max;
  if (v < -limit) return kInt32Min;
  return wrap_shl(v, e);
}

}  // namespace

// EXP(a): exp(a) for a <= 0, Q5.26 in, Q0.31 out.
int32_t exp_on_negative(int32_t a) {
  if (a == 0) return kInt32Max;
  constexpr int32_t kQuarter = 1 << 24;  // 1/4 in Q5.26
  const int32_t r = wrap_sub(a & (kQuarter - 1), kQuarter);
  const int32_t rem = wrap_sub(r, a);
  const int32_t x = wrap_add(wrap_mul(r, 32), 1 << 28);
  const int32_t x2 = dhm_sat(x, x), x3 = dhm_sat(x2, x), x4 = dhm_sat(x2, x2);
  const int32_t inner = wrap_add(dhm_sat(wrap_add(rdiv(x4, 2), x3), 715827883), x2);
  const int32_t p = wrap_add(x, rdiv(inner, 1));
  constexpr int32_t kExpMinusEighth = 1895147668;
  int32_t res = wrap_add(kExpMinusEighth, dhm_sat(kExpMinusEighth, p));
  // exp(-1/4), exp(-1/2), ..., exp(-16) in Q0.31, for bits 24..30 of the remainder.
  constexpr int32_t kFactors[] = {1672461947, 1302514674, 790015084, 290630308,
                                  39332535,   720401,     242};
  for (int k = 0; k < 7; ++k) {
    if (rem & (int32_t{1} << (24 + k))) res = dhm_sat(res, kFactors[k]);
  }
  return res;
}

// RECIP(v): 1/(1+x) for x in [0, 1), Q0.31.
int32_t one_over_one_plus_x(int32_t v) {
  const int64_t t = int64_t{v} + kInt32Max;
  const int32_t hd = static_cast<int32_t>((t + (t >= 0 ? 1 : -1)) / 2);
  int32_t x = wrap_add(1515870810, dhm_sat(hd, -1010580540));
  constexpr int32_t kOne = 1 << 29;  // 1 in Q2.29
  for (int i = 0; i < 3; ++i) {
    x = wrap_add(x, sat_shl(dhm_sat(x, wrap_sub(kOne, dhm_sat(hd, x))), 2));
  }
  return sat_shl(x, 1);
}

namespace {

void softmax_row(const int8_t* in, int8_t* out, int64_t n, int32_t mult, int shift,
                 int32_t diff_min) {
  int32_t mx = INT8_MIN;
  for (int64_t i = 0; i < n; ++i) mx = in[i] > mx ? in[i] : mx;
  int32_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t d = in[i] - mx;
    if (d >= diff_min) {
      sum = wrap_add(sum, rdiv(exp_on_negative(dhm_sat(wrap_shl(d, shift), mult)), 12));
    }
  }
  // countl_zero(0) is 32, and then the shifted sum is 0: a defined value where C's clz is not.
  const int h = std::countl_zero(static_cast<uint32_t>(sum));
  const uint32_t shifted = h >= 32 ? 0u : static_cast<uint32_t>(sum) << h;
  const int32_t recip = one_over_one_plus_x(static_cast<int32_t>(shifted - 0x80000000u));
  const int bits = 12 - h + 23;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t d = in[i] - mx;
    int32_t v = INT8_MIN;
    if (d >= diff_min) {
      const int32_t e = exp_on_negative(dhm_sat(wrap_shl(d, shift), mult));
      v = clamp_i32(wrap_sub(rdiv(dhm_sat(recip, e), bits), 128), INT8_MIN, INT8_MAX);
    }
    out[i] = static_cast<int8_t>(v);
  }
}

}  // namespace

Error softmax_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::softmax";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[7]->to_tensor();
  EMBER_TRY(check_dtype(in, ScalarType::Char, op, "input"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  EMBER_CHECK(in.dim() >= 1, Error::InvalidArgument, "%s: input must have rank >= 1", op);
  const int64_t dim = args[1]->to_int();
  EMBER_CHECK(dim == in.dim() - 1 || dim == -1, Error::InvalidArgument,
              "%s: dim %lld must be the last dim (%d)", op, static_cast<long long>(dim),
              in.dim() - 1);
  int32_t zp_in, zp_out, mult, shift, diff_min;
  EMBER_TRY(read_int32(*args[2], op, "input_zero_point", &zp_in));
  EMBER_TRY(read_int32(*args[3], op, "output_zero_point", &zp_out));
  EMBER_CHECK(zp_out == -128, Error::InvalidArgument,
              "%s: output_zero_point must be -128 (output scale 1/256), got %d", op, zp_out);
  EMBER_TRY(read_int32(*args[4], op, "input_multiplier", &mult));
  // The kernel shifts left by input_shift: a negative one would be undefined there.
  EMBER_TRY(read_int(*args[5], op, "input_shift", 0, 31, &shift));
  EMBER_TRY(read_int32(*args[6], op, "diff_min", &diff_min));
  EMBER_CHECK(same_layout(in, out) && is_dense(in), Error::InvalidArgument,
              "%s: input and out must be contiguous with equal sizes (rows are read in memory "
              "order)",
              op);
  const int64_t n = in.size(in.dim() - 1);
  if (n == 0) return Error::Ok;
  const int8_t* x = in.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  for (int64_t r = 0; r < in.numel() / n; ++r)
    softmax_row(x + r * n, y + r * n, n, mult, shift, diff_min);
  return Error::Ok;
}

}  // namespace ember::cortex_m
