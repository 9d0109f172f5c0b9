// The shape rules of quantized_add and quantized_mul (cortex-m-ops.md §3.9, §3.10): equal sizes
// in one layout, walked in memory order, or a channel broadcast of a [1, C, 1, 1] operand over a
// 4-D [N, C, H, W] one. The kernel walks a channels-last out in chunks of C bytes and reuses the
// small operand per chunk; Ember indexes by strides instead, the same values for the
// channels-last tensors export writes, and the logical result for any other dim order.
//
//   Broadcast mode;
//   EMBER_TRY(binary_shapes(self, other, out, op, &mode));
//   for_each_pair(self, other, out, mode, [&](int32_t x, int32_t y) { return ...; });
#pragma once

#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

enum class Broadcast { None, OtherIsChannel, SelfIsChannel };

// int8 self, other and out, and which shape rule applies.
Error binary_shapes(const Tensor& self, const Tensor& other, const Tensor& out, const char* op,
                    Broadcast* mode);

// out = f(self, other) element by element (f returns the int8 value as int32).
template <typename F>
void for_each_pair(const Tensor& self, const Tensor& other, Tensor& out, Broadcast mode, F f) {
  const int8_t* a = self.data<int8_t>();
  const int8_t* b = other.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  if (mode == Broadcast::None) {
    for (int64_t i = 0; i < out.numel(); ++i) y[i] = static_cast<int8_t>(f(a[i], b[i]));
    return;
  }
  const bool other_small = mode == Broadcast::OtherIsChannel;
  const Tensor& big = other_small ? self : other;
  const int8_t* big_data = other_small ? a : b;
  const int8_t* small_data = other_small ? b : a;
  const int64_t small_stride = (other_small ? other : self).stride(1);
  const Act4 s = Act4::of(big), o = Act4::of(out);
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      const int32_t v = small_data[c * small_stride];
      for (int64_t h = 0; h < s.h; ++h) {
        for (int64_t w = 0; w < s.w; ++w) {
          const int32_t u = big_data[s.at(n, c, h, w)];
          y[o.at(n, c, h, w)] = static_cast<int8_t>(other_small ? f(u, v) : f(v, u));
        }
      }
    }
  }
}

}  // namespace ember::cortex_m
