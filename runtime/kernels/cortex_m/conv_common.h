// What the three convolutions of the cortex_m library share (cortex-m-ops.md §3.3, §3.4, §3.17):
// stride/padding/dilation, the offsets, the activation bounds, the per-channel requantization
// tensors, and the final REQUANT + output offset + clamp.
//
//   ConvParams p;
//   EMBER_TRY(read_conv_params(args, 3, 5, 6, 10, op, &p));
//   y = finish(acc, mult[oc], shift[oc], p);
#pragma once

#include <span>

#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

struct ConvParams {
  int64_t stride[2], pad[2], dil[2];
  int32_t input_offset, output_offset, act_min, act_max;
};

// Reads stride, padding, dilation from args[first_pair..first_pair+2], except dilation when
// `dilation` < 0; the offsets from args[offsets], args[offsets+1]; the activation bounds from
// args[act], args[act+1].
Error read_conv_params(std::span<EValue*> args, int first_pair, int dilation, int offsets, int act,
                       const char* op, ConvParams* p);
// An int8 4-D dense weight.
Error check_weight(const Tensor& weight, const char* op);
// bias (null: 0) int32 [Cout]; multipliers and shifts int32 [Cout], shifts in range.
Error check_channel_params(const Tensor* bias, const Tensor& multipliers, const Tensor& shifts,
                           int64_t cout, const char* op);

// clamp(REQUANT(acc) + output_offset, act_min, act_max) as int8 (§2.7).
inline int8_t finish(int32_t acc, int32_t mult, int32_t shift, const ConvParams& p) {
  const int32_t v = wrap_add(requantize(acc, mult, shift), p.output_offset);
  return static_cast<int8_t>(clamp_i32(v, p.act_min, p.act_max));
}

}  // namespace ember::cortex_m
