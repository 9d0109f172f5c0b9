// cortex_m::quantized_transpose_conv2d.out(Tensor input, Tensor weight, Tensor? bias,
//     int[] stride, int[] padding, int[] output_padding, int[] dilation, int input_offset,
//     int output_offset, Tensor requantize_multipliers, Tensor requantize_shifts,
//     int activation_min, int activation_max, Tensor scratch, Tensor output_scratch, *,
//     Tensor(a!) out)
// int8 transposed convolution with PyTorch's conv_transpose2d semantics (cortex-m-ops.md §3.17).
// CMSIS-NN's kernel misplaces rows for stride > 1 with padding (§6.2); Ember computes what the
// model means there, as the document recommends. Groups are 1 (weight [Cout, KH, KW, Cin]).
// CMSIS-NN ignores dilation and output_padding (export only lets [1,1] and [0,0] through);
// Ember honours them as PyTorch does, which is the same function on every exported program.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/conv_common.h"

namespace ember::cortex_m {

Error quantized_transpose_conv2d_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_transpose_conv2d";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& weight = args[1]->to_tensor();
  const Tensor* bias = args[2]->tensor_ptr();
  Tensor& out = args[15]->to_tensor();
  ConvParams p;
  EMBER_TRY(read_conv_params(args, 3, 6, 7, 11, op, &p));
  int64_t out_pad[2];
  EMBER_TRY(read_pair(*args[5], op, "output_padding", 0, out_pad));
  EMBER_TRY(check_activation(in, op, "input"));
  EMBER_TRY(check_activation(out, op, "out"));
  EMBER_TRY(check_weight(weight, op));
  const int64_t cin = in.size(1), cout = weight.size(0), kh = weight.size(1), kw = weight.size(2);
  EMBER_CHECK(weight.size(3) == cin, Error::InvalidArgument,
              "%s: weight [Cout, KH, KW, Cin] has Cin %d, the input has %lld channels", op,
              weight.size(3), static_cast<long long>(cin));
  EMBER_TRY(check_channel_params(bias, args[9]->to_tensor(), args[10]->to_tensor(), cout, op));
  int64_t osz[2];
  const int64_t isz[2] = {in.size(2), in.size(3)}, ksz[2] = {kh, kw};
  for (int i = 0; i < 2; ++i) {
    osz[i] = (isz[i] - 1) * p.stride[i] - 2 * p.pad[i] + p.dil[i] * (ksz[i] - 1) + out_pad[i] + 1;
    EMBER_CHECK(isz[i] > 0 && osz[i] > 0, Error::InvalidArgument,
                "%s: output size %lld along %s is not positive", op, static_cast<long long>(osz[i]),
                i == 0 ? "H" : "W");
  }
  const int64_t want[] = {in.size(0), cout, osz[0], osz[1]};
  EMBER_TRY(check_sizes(out, want, op, "out"));

  const Act4 a = Act4::of(in), o = Act4::of(out);
  const int8_t* x = in.data<int8_t>();
  const int8_t* w = weight.data<int8_t>();
  const int32_t* b = bias == nullptr ? nullptr : bias->data<int32_t>();
  const int32_t* mult = args[9]->to_tensor().data<int32_t>();
  const int32_t* shift = args[10]->to_tensor().data<int32_t>();
  int8_t* y = out.data<int8_t>();
  // Output-stationary: out[oy] gathers input rows iy with oy = iy*s - p + ky*d.
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t oy = 0; oy < osz[0]; ++oy) {
      for (int64_t ox = 0; ox < osz[1]; ++ox) {
        for (int64_t oc = 0; oc < cout; ++oc) {
          int32_t acc = b == nullptr ? 0 : b[oc];
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t ty = oy + p.pad[0] - ky * p.dil[0];
            if (ty < 0 || ty % p.stride[0] != 0 || ty / p.stride[0] >= a.h) continue;
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t tx = ox + p.pad[1] - kx * p.dil[1];
              if (tx < 0 || tx % p.stride[1] != 0 || tx / p.stride[1] >= a.w) continue;
              const int8_t* px = x + a.at(n, 0, ty / p.stride[0], tx / p.stride[1]);
              const int8_t* pw = w + ((oc * kh + ky) * kw + kx) * cin;
              for (int64_t ic = 0; ic < cin; ++ic) {
                acc = wrap_add(acc, wrap_mul(wrap_add(px[ic * a.sc], p.input_offset), pw[ic]));
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
