#include "runtime/kernels/cortex_m/conv_common.h"

namespace ember::cortex_m {

Error read_conv_params(std::span<EValue*> args, int first_pair, int dilation, int offsets, int act,
                       const char* op, ConvParams* p) {
  EMBER_TRY(read_pair(*args[first_pair], op, "stride", 1, p->stride));
  EMBER_TRY(read_pair(*args[first_pair + 1], op, "padding", 0, p->pad));
  p->dil[0] = p->dil[1] = 1;
  if (dilation >= 0) EMBER_TRY(read_pair(*args[dilation], op, "dilation", 1, p->dil));
  EMBER_TRY(read_int32(*args[offsets], op, "input_offset", &p->input_offset));
  EMBER_TRY(read_int32(*args[offsets + 1], op, "output_offset", &p->output_offset));
  return read_activation(*args[act], *args[act + 1], op, &p->act_min, &p->act_max);
}

Error check_weight(const Tensor& weight, const char* op) {
  EMBER_TRY(check_dtype(weight, ScalarType::Char, op, "weight"));
  EMBER_TRY(check_rank(weight, 4, op, "weight"));
  EMBER_CHECK(is_dense(weight), Error::InvalidArgument,
              "%s: weight must be contiguous (its logical shape is the CMSIS-NN layout)", op);
  EMBER_CHECK(weight.size(1) > 0 && weight.size(2) > 0, Error::InvalidArgument,
              "%s: the kernel size must be positive", op);
  return Error::Ok;
}

Error check_channel_params(const Tensor* bias, const Tensor& multipliers, const Tensor& shifts,
                           int64_t cout, const char* op) {
  if (bias != nullptr) EMBER_TRY(check_vector(*bias, ScalarType::Int, cout, op, "bias"));
  EMBER_TRY(check_vector(multipliers, ScalarType::Int, cout, op, "requantize_multipliers"));
  EMBER_TRY(check_vector(shifts, ScalarType::Int, cout, op, "requantize_shifts"));
  return check_shifts(shifts, op);
}

}  // namespace ember::cortex_m
