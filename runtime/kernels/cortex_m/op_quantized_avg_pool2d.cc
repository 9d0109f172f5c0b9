// cortex_m::quantized_avg_pool2d.out(Tensor input, int[] kernel_size, int[] stride,
//     int[] padding, bool ceil_mode, int zero_point, int multiplier, int shift, Tensor scratch, *,
//     Tensor(a!) out)
// int8 average pool of the raw bytes (cortex-m-ops.md §3.6): padding is left out of the count, and
// the integer average rounds half away from zero. zero_point, multiplier and shift are ignored, as
// by the kernel: the quantizer gives the output the input's quantization.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

Error quantized_avg_pool2d_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_avg_pool2d";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[9]->to_tensor();
  int64_t k[2], s[2], p[2];
  EMBER_TRY(read_pair(*args[1], op, "kernel_size", 1, k));
  EMBER_TRY(read_pair(*args[2], op, "stride", 1, s));
  EMBER_TRY(read_pair(*args[3], op, "padding", 0, p));
  const bool ceil_mode = args[4]->to_bool();
  int32_t ignored;
  EMBER_TRY(read_int32(*args[5], op, "zero_point", &ignored));
  EMBER_TRY(read_int32(*args[6], op, "multiplier", &ignored));
  EMBER_TRY(read_int32(*args[7], op, "shift", &ignored));
  EMBER_TRY(check_activation(in, op, "input"));
  EMBER_TRY(check_activation(out, op, "out"));
  int64_t oh = 0, ow = 0;
  EMBER_TRY(pool_out_size(in.size(2), k[0], s[0], p[0], ceil_mode, op, "H", &oh));
  EMBER_TRY(pool_out_size(in.size(3), k[1], s[1], p[1], ceil_mode, op, "W", &ow));
  const int64_t want[] = {in.size(0), in.size(1), oh, ow};
  EMBER_TRY(check_sizes(out, want, op, "out"));

  const Act4 a = Act4::of(in), o = Act4::of(out);
  const int8_t* x = in.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t y0 = oy * s[0] - p[0];
      const int64_t ylo = y0 < 0 ? 0 : y0, yhi = y0 + k[0] < a.h ? y0 + k[0] : a.h;
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t x0 = ox * s[1] - p[1];
        const int64_t xlo = x0 < 0 ? 0 : x0, xhi = x0 + k[1] < a.w ? x0 + k[1] : a.w;
        // pool_out_size rejected windows without input, so count > 0.
        const int32_t count = static_cast<int32_t>((yhi - ylo) * (xhi - xlo));
        for (int64_t c = 0; c < a.c; ++c) {
          int32_t sum = 0;
          for (int64_t iy = ylo; iy < yhi; ++iy) {
            for (int64_t ix = xlo; ix < xhi; ++ix) sum = wrap_add(sum, x[a.at(n, c, iy, ix)]);
          }
          // C's truncating division after adding half the count: ties away from zero.
          const int32_t avg =
              sum > 0 ? wrap_add(sum, count / 2) / count : wrap_sub(sum, count / 2) / count;
          y[o.at(n, c, oy, ox)] = static_cast<int8_t>(clamp_i32(avg, -128, 127));
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
