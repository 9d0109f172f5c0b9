// cortex_m::pad.out(Tensor input, int[] pre_pad, int[] post_pad, int pad_value, *,
//     Tensor(a!) out)
// Constant int8 pad of the tensor's physical (memory-order) 4-D view (cortex-m-ops.md §3.7):
// [N, H, W, C] for a channels-last tensor (dim order [0,2,3,1], or C == 1, or H == W == 1, §2.2),
// the logical sizes otherwise, a lower rank right-aligned. Export has already permuted the pads
// into that order, so pad i applies to physical dim i.
#include <cstring>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {
namespace {

constexpr int kChannelsLast[] = {0, 2, 3, 1};

bool is_channels_last(const Tensor& t) {
  if (t.dim() != 4) return false;
  const std::span<const uint8_t> order = t.dim_order();
  const bool nhwc = order[0] == 0 && order[1] == 2 && order[2] == 3 && order[3] == 1;
  return nhwc || t.size(1) == 1 || (t.size(2) == 1 && t.size(3) == 1);
}

// The physical dims of `t` read in `channels_last` mode, or false when its memory is not laid out
// that way (such a tensor has no physical 4-D view the kernel could pad).
bool physical_dims(const Tensor& t, bool channels_last, int64_t dims[4]) {
  if (channels_last) {
    dims[0] = t.size(0), dims[1] = t.size(2), dims[2] = t.size(3), dims[3] = t.size(1);
    return dense_in_order(t, kChannelsLast);
  }
  for (int i = 0; i < 4; ++i) dims[i] = 1;
  for (int i = 0; i < t.dim(); ++i) dims[4 - t.dim() + i] = t.size(i);
  return is_dense(t);
}

}  // namespace

Error pad_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::pad";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[4]->to_tensor();
  int32_t value = 0;
  EMBER_TRY(read_int(*args[3], op, "pad_value", INT8_MIN, INT8_MAX, &value));
  EMBER_TRY(check_dtype(in, ScalarType::Char, op, "input"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  EMBER_CHECK(in.dim() >= 1 && in.dim() <= 4, Error::InvalidArgument,
              "%s: input must have rank 1 to 4, got %d", op, in.dim());
  EMBER_TRY(check_rank(out, in.dim(), op, "out"));
  int64_t pads[2][4];
  for (int side = 0; side < 2; ++side) {
    const char* what = side == 0 ? "pre_pad" : "post_pad";
    const std::span<const int64_t> list = args[1 + side]->to_int_list();
    EMBER_CHECK(list.size() == 4, Error::InvalidArgument, "%s: %s has %zu entries, expected 4", op,
                what, list.size());
    for (int i = 0; i < 4; ++i) {
      EMBER_CHECK(list[i] >= 0 && list[i] <= (int64_t{1} << 30), Error::InvalidArgument,
                  "%s: %s[%d] is %lld, outside [0, 2^30]", op, what, i,
                  static_cast<long long>(list[i]));
      pads[side][i] = list[i];
    }
  }
  const bool cl = is_channels_last(in);
  int64_t din[4], dout[4];
  EMBER_CHECK(physical_dims(in, cl, din), Error::InvalidArgument,
              "%s: input is neither channels-last nor contiguous", op);
  EMBER_CHECK(physical_dims(out, cl, dout), Error::InvalidArgument,
              "%s: out must have the input's layout (%s)", op, cl ? "channels-last" : "contiguous");
  for (int i = 0; i < 4; ++i) {
    const int64_t want = din[i] + pads[0][i] + pads[1][i];
    EMBER_CHECK(dout[i] == want, Error::InvalidArgument,
                "%s: out's physical dim %d is %lld, expected %lld (input %lld + pads %lld + %lld)",
                op, i, static_cast<long long>(dout[i]), static_cast<long long>(want),
                static_cast<long long>(din[i]), static_cast<long long>(pads[0][i]),
                static_cast<long long>(pads[1][i]));
  }

  const int8_t* x = in.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  if (out.numel() == 0) return Error::Ok;
  std::memset(y, value, static_cast<size_t>(out.numel()));
  if (in.numel() == 0) return Error::Ok;
  // Each input row (innermost physical dim) lands at its offset in the output.
  for (int64_t a = 0; a < din[0]; ++a) {
    for (int64_t b = 0; b < din[1]; ++b) {
      for (int64_t c = 0; c < din[2]; ++c) {
        const int64_t src = ((a * din[1] + b) * din[2] + c) * din[3];
        const int64_t dst =
            (((a + pads[0][0]) * dout[1] + b + pads[0][1]) * dout[2] + c + pads[0][2]) * dout[3] +
            pads[0][3];
        std::memcpy(y + dst, x + src, static_cast<size_t>(din[3]));
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember::cortex_m
