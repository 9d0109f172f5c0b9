// cortex_m::quantized_max_pool2d.out(Tensor input, int[] kernel_size, int[] stride,
//     int[] padding, int[] dilation, bool ceil_mode, int input_zero_point, int output_zero_point,
//     int activation_min, int activation_max, *, Tensor(a!) out)
// int8 max pool of the raw bytes over the in-range window positions (padding acts as -inf),
// clamped to the activation bounds (cortex-m-ops.md §3.8). Only dilation [1,1] and ceil_mode
// False, as in the kernel; export keeps aten::max_pool2d_with_indices for the rest.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

Error quantized_max_pool2d_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_max_pool2d";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[10]->to_tensor();
  int64_t k[2], s[2], p[2], d[2];
  EMBER_TRY(read_pair(*args[1], op, "kernel_size", 1, k));
  EMBER_TRY(read_pair(*args[2], op, "stride", 1, s));
  EMBER_TRY(read_pair(*args[3], op, "padding", 0, p));
  EMBER_TRY(read_pair(*args[4], op, "dilation", 1, d));
  EMBER_CHECK(d[0] == 1 && d[1] == 1, Error::InvalidArgument,
              "%s: dilation must be [1, 1], got [%lld, %lld]", op, static_cast<long long>(d[0]),
              static_cast<long long>(d[1]));
  EMBER_CHECK(!args[5]->to_bool(), Error::InvalidArgument, "%s: ceil_mode must be False", op);
  int32_t zp_in, zp_out, act_min, act_max;
  EMBER_TRY(read_int(*args[6], op, "input_zero_point", INT8_MIN, INT8_MAX, &zp_in));
  EMBER_TRY(read_int(*args[7], op, "output_zero_point", INT8_MIN, INT8_MAX, &zp_out));
  EMBER_CHECK(zp_in == zp_out, Error::InvalidArgument,
              "%s: output_zero_point %d must equal input_zero_point %d", op, zp_out, zp_in);
  EMBER_TRY(read_activation(*args[8], *args[9], op, &act_min, &act_max));
  EMBER_TRY(check_activation(in, op, "input"));
  EMBER_TRY(check_activation(out, op, "out"));
  int64_t oh = 0, ow = 0;
  EMBER_TRY(pool_out_size(in.size(2), k[0], s[0], p[0], false, op, "H", &oh));
  EMBER_TRY(pool_out_size(in.size(3), k[1], s[1], p[1], false, op, "W", &ow));
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
        for (int64_t c = 0; c < a.c; ++c) {
          int32_t best = INT8_MIN;  // every window has an input position (pool_out_size)
          for (int64_t iy = ylo; iy < yhi; ++iy) {
            for (int64_t ix = xlo; ix < xhi; ++ix) {
              const int32_t v = x[a.at(n, c, iy, ix)];
              best = v > best ? v : best;
            }
          }
          y[o.at(n, c, oy, ox)] = static_cast<int8_t>(clamp_i32(best, act_min, act_max));
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
