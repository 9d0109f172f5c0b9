// cortex_m::quantized_depthwise_conv2d.out(Tensor input, Tensor weight, Tensor? bias,
//     int[] stride, int[] padding, int[] dilation, int depth_multiplier, int input_offset,
//     int output_offset, Tensor requantize_multipliers, Tensor requantize_shifts,
//     int activation_min, int activation_max, Tensor scratch, *, Tensor(a!) out)
// int8 depthwise convolution (cortex-m-ops.md §3.4): weight IHWO [1, KH, KW, Cout], output
// channel oc reads input channel oc / depth_multiplier. Batch 1 only, as in the kernel.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/conv_common.h"

namespace ember::cortex_m {

Error quantized_depthwise_conv2d_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_depthwise_conv2d";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& weight = args[1]->to_tensor();
  const Tensor* bias = args[2]->tensor_ptr();
  Tensor& out = args[14]->to_tensor();
  ConvParams p;
  EMBER_TRY(read_conv_params(args, 3, 5, 7, 11, op, &p));
  int32_t dm = 0;
  EMBER_TRY(read_int(*args[6], op, "depth_multiplier", 1, kInt32Max, &dm));
  EMBER_TRY(check_activation(in, op, "input"));
  EMBER_TRY(check_activation(out, op, "out"));
  EMBER_TRY(check_weight(weight, op));
  EMBER_CHECK(in.size(0) == 1, Error::InvalidArgument,
              "%s: batch must be 1, got %d (export writes a grouped quantized_conv2d instead)", op,
              in.size(0));
  EMBER_CHECK(weight.size(0) == 1, Error::InvalidArgument,
              "%s: weight must be [1, KH, KW, Cout], got size(0) = %d", op, weight.size(0));
  const int64_t cin = in.size(1), kh = weight.size(1), kw = weight.size(2), cout = weight.size(3);
  EMBER_CHECK(cout == cin * dm, Error::InvalidArgument,
              "%s: weight has %lld output channels, expected input channels %lld x "
              "depth_multiplier %d",
              op, static_cast<long long>(cout), static_cast<long long>(cin), dm);
  EMBER_TRY(check_channel_params(bias, args[9]->to_tensor(), args[10]->to_tensor(), cout, op));
  int64_t oh = 0, ow = 0;
  EMBER_TRY(conv_out_size(in.size(2), kh, p.stride[0], p.pad[0], p.dil[0], op, "H", &oh));
  EMBER_TRY(conv_out_size(in.size(3), kw, p.stride[1], p.pad[1], p.dil[1], op, "W", &ow));
  const int64_t want[] = {1, cout, oh, ow};
  EMBER_TRY(check_sizes(out, want, op, "out"));

  const Act4 a = Act4::of(in), o = Act4::of(out);
  const int8_t* x = in.data<int8_t>();
  const int8_t* w = weight.data<int8_t>();
  const int32_t* b = bias == nullptr ? nullptr : bias->data<int32_t>();
  const int32_t* mult = args[9]->to_tensor().data<int32_t>();
  const int32_t* shift = args[10]->to_tensor().data<int32_t>();
  int8_t* y = out.data<int8_t>();
  for (int64_t oy = 0; oy < oh; ++oy) {
    for (int64_t ox = 0; ox < ow; ++ox) {
      for (int64_t oc = 0; oc < cout; ++oc) {
        const int64_t ic = oc / dm;
        int32_t acc = b == nullptr ? 0 : b[oc];
        for (int64_t ky = 0; ky < kh; ++ky) {
          const int64_t iy = oy * p.stride[0] - p.pad[0] + ky * p.dil[0];
          if (iy < 0 || iy >= a.h) continue;
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t ix = ox * p.stride[1] - p.pad[1] + kx * p.dil[1];
            if (ix < 0 || ix >= a.w) continue;
            const int32_t xv = wrap_add(x[a.at(0, ic, iy, ix)], p.input_offset);
            acc = wrap_add(acc, wrap_mul(xv, w[(ky * kw + kx) * cout + oc]));
          }
        }
        y[o.at(0, oc, oy, ox)] = finish(acc, mult[oc], shift[oc], p);
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
