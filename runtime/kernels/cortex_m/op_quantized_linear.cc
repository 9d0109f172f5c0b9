// cortex_m::quantized_linear.out(Tensor input, Tensor weights, Tensor? bias, Tensor? kernel_sum,
//     int input_offset, int filter_offset, int output_offset, int[] requantize_multipliers,
//     int[] requantize_shifts, int activation_max, int activation_min, *, Tensor(a!) out)
// int8 fully connected layer, per-tensor requantization (element 0 of the lists), cortex-m-ops.md
// §3.5. Both accumulator forms are implemented and chosen by whether kernel_sum is given: a
// program exported for an MVE target carries kernel_sum and no bias, and a runtime that ignored
// kernel_sum would drop its bias (§6.4). Note activation_max comes before activation_min.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

Error quantized_linear_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_linear";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& weight = args[1]->to_tensor();
  const Tensor* bias = args[2]->tensor_ptr();
  const Tensor* kernel_sum = args[3]->tensor_ptr();
  Tensor& out = args[11]->to_tensor();
  int32_t input_offset, filter_offset, output_offset, act_min, act_max;
  EMBER_TRY(read_int32(*args[4], op, "input_offset", &input_offset));
  EMBER_TRY(read_int32(*args[5], op, "filter_offset", &filter_offset));
  EMBER_TRY(read_int32(*args[6], op, "output_offset", &output_offset));
  EMBER_TRY(read_activation(*args[10], *args[9], op, &act_min, &act_max));
  const std::span<const int64_t> mults = args[7]->to_int_list();
  const std::span<const int64_t> shifts = args[8]->to_int_list();
  EMBER_CHECK(!mults.empty() && !shifts.empty(), Error::InvalidArgument,
              "%s: requantize_multipliers and requantize_shifts need an entry", op);
  EMBER_CHECK(mults[0] >= kInt32Min && mults[0] <= kInt32Max, Error::InvalidArgument,
              "%s: requantize_multipliers[0] %lld does not fit int32", op,
              static_cast<long long>(mults[0]));
  EMBER_CHECK(shifts[0] >= kMinShift && shifts[0] <= kMaxShift, Error::InvalidArgument,
              "%s: requantize_shifts[0] %lld is outside [%d, %d]", op,
              static_cast<long long>(shifts[0]), kMinShift, kMaxShift);
  const int32_t mult = static_cast<int32_t>(mults[0]), shift = static_cast<int32_t>(shifts[0]);

  EMBER_TRY(check_dtype(in, ScalarType::Char, op, "input"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  EMBER_TRY(check_dtype(weight, ScalarType::Char, op, "weights"));
  EMBER_TRY(check_rank(weight, 2, op, "weights"));
  EMBER_CHECK(in.dim() >= 1, Error::InvalidArgument, "%s: input must have rank >= 1", op);
  const int64_t k = in.size(in.dim() - 1), o_count = weight.size(0);
  EMBER_CHECK(weight.size(1) == k, Error::InvalidArgument,
              "%s: weights [O, K] have K = %d, the input's last dim is %lld", op, weight.size(1),
              static_cast<long long>(k));
  if (bias != nullptr) EMBER_TRY(check_vector(*bias, ScalarType::Int, o_count, op, "bias"));
  if (kernel_sum != nullptr) {
    EMBER_TRY(check_vector(*kernel_sum, ScalarType::Int, o_count, op, "kernel_sum"));
  }
  int64_t want[kMaxRank];
  for (int d = 0; d + 1 < in.dim(); ++d) want[d] = in.size(d);
  want[in.dim() - 1] = o_count;
  EMBER_TRY(check_sizes(out, {want, static_cast<size_t>(in.dim())}, op, "out"));
  EMBER_CHECK(is_dense(in) && is_dense(out) && is_dense(weight), Error::InvalidArgument,
              "%s: input, weights and out must be contiguous (rows are read in memory order)", op);

  int64_t batches = 1;
  for (int d = 0; d + 1 < in.dim(); ++d) batches *= in.size(d);
  const int8_t* x = in.data<int8_t>();
  const int8_t* w = weight.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  const int32_t* ks = kernel_sum == nullptr ? nullptr : kernel_sum->data<int32_t>();
  const int32_t* b = bias == nullptr ? nullptr : bias->data<int32_t>();
  for (int64_t r = 0; r < batches; ++r) {
    const int8_t* row = x + r * k;
    int32_t row_sum = 0;  // the kernel-sum form's filter_offset * sum(x) term
    for (int64_t j = 0; j < k; ++j) row_sum = wrap_add(row_sum, row[j]);
    for (int64_t oi = 0; oi < o_count; ++oi) {
      const int8_t* wr = w + oi * k;
      int32_t acc;
      if (ks != nullptr) {
        acc = wrap_add(ks[oi], wrap_mul(filter_offset, row_sum));
        for (int64_t j = 0; j < k; ++j) acc = wrap_add(acc, wrap_mul(row[j], wr[j]));
      } else {
        acc = b == nullptr ? 0 : b[oi];
        for (int64_t j = 0; j < k; ++j) {
          acc = wrap_add(acc,
                         wrap_mul(wrap_add(row[j], input_offset), wrap_add(wr[j], filter_offset)));
        }
      }
      const int32_t v = wrap_add(requantize(acc, mult, shift), output_offset);
      y[r * o_count + oi] = static_cast<int8_t>(clamp_i32(v, act_min, act_max));
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
