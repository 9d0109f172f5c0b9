// cortex_m::quantized_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
//     int[] padding, int[] dilation, int input_offset, int output_offset,
//     Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min,
//     int activation_max, Tensor scratch, *, Tensor(a!) out)
// int8 (grouped) convolution with per-channel requantization (cortex-m-ops.md §3.3). Weights are
// OHWI [Cout, KH, KW, Cin/G]; activations are addressed through their strides, so any dim order
// gives the logical result (export writes channels-last). A direct loop: no scratch is needed.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/conv_common.h"

namespace ember::cortex_m {

Error quantized_conv2d_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_conv2d";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& weight = args[1]->to_tensor();
  const Tensor* bias = args[2]->tensor_ptr();
  Tensor& out = args[13]->to_tensor();
  ConvParams p;
  EMBER_TRY(read_conv_params(args, 3, 5, 6, 10, op, &p));
  EMBER_TRY(check_activation(in, op, "input"));
  EMBER_TRY(check_activation(out, op, "out"));
  EMBER_TRY(check_weight(weight, op));
  const int64_t cin = in.size(1), cout = weight.size(0), kh = weight.size(1), kw = weight.size(2);
  const int64_t cg = weight.size(3);
  EMBER_CHECK(cg > 0 && cin % cg == 0, Error::InvalidArgument,
              "%s: input channels %lld are not a multiple of weight.size(3) = %lld", op,
              static_cast<long long>(cin), static_cast<long long>(cg));
  const int64_t groups = cin / cg;
  EMBER_CHECK(cout % groups == 0, Error::InvalidArgument,
              "%s: %lld output channels are not divisible into %lld groups", op,
              static_cast<long long>(cout), static_cast<long long>(groups));
  EMBER_TRY(check_channel_params(bias, args[8]->to_tensor(), args[9]->to_tensor(), cout, op));
  int64_t oh = 0, ow = 0;
  EMBER_TRY(conv_out_size(in.size(2), kh, p.stride[0], p.pad[0], p.dil[0], op, "H", &oh));
  EMBER_TRY(conv_out_size(in.size(3), kw, p.stride[1], p.pad[1], p.dil[1], op, "W", &ow));
  const int64_t want[] = {in.size(0), cout, oh, ow};
  EMBER_TRY(check_sizes(out, want, op, "out"));

  const Act4 a = Act4::of(in), o = Act4::of(out);
  const int8_t* x = in.data<int8_t>();
  const int8_t* w = weight.data<int8_t>();
  const int32_t* b = bias == nullptr ? nullptr : bias->data<int32_t>();
  const int32_t* mult = args[8]->to_tensor().data<int32_t>();
  const int32_t* shift = args[9]->to_tensor().data<int32_t>();
  int8_t* y = out.data<int8_t>();
  const int64_t cout_g = cout / groups;
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        for (int64_t oc = 0; oc < cout; ++oc) {
          const int64_t c0 = oc / cout_g * cg;
          int32_t acc = b == nullptr ? 0 : b[oc];
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t iy = oy * p.stride[0] - p.pad[0] + ky * p.dil[0];
            if (iy < 0 || iy >= a.h) continue;  // padding contributes 0 (§3.3)
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ix = ox * p.stride[1] - p.pad[1] + kx * p.dil[1];
              if (ix < 0 || ix >= a.w) continue;
              const int8_t* px = x + a.at(n, c0, iy, ix);
              const int8_t* pw = w + ((oc * kh + ky) * kw + kx) * cg;
              for (int64_t kc = 0; kc < cg; ++kc) {
                acc = wrap_add(acc, wrap_mul(wrap_add(px[kc * a.sc], p.input_offset), pw[kc]));
              }
            }
          }
          y[o.at(n, oc, oy, ox)] = finish(acc, mult[oc], shift[oc], p);
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
