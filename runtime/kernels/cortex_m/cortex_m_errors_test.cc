// The cortex_m kernels reject bad input with InvalidArgument and a message (never a crash), and
// address activations through their strides (any dim order gives the logical result).
#include "runtime/kernels/cortex_m/cortex_m_test_util.h"

namespace ember {
namespace {

using cortex_m_test::Call;
using cortex_m_test::expect_invalid;
using cortex_m_test::kNhwc;
using i8 = std::vector<int8_t>;
using i32 = std::vector<int32_t>;
constexpr ScalarType kI8 = ScalarType::Char, kI32 = ScalarType::Int, kF32 = ScalarType::Float;
constexpr int32_t k2p30 = 1 << 30;

// A 1x1-channel 3x3 conv call whose pieces a test can spoil.
struct ConvCall {
  i8 x = i8(9, 1), w = i8(8, 1), y = i8(8);
  i32 bias = {0, 0}, mult = {k2p30, k2p30}, shift = {-1, -1};
  std::vector<int64_t> stride = {2, 2};
  int64_t act_min = -128, act_max = 127;
  ScalarType in_type = kI8;
  std::vector<int32_t> out_sizes = {1, 2, 2, 2};
  Error run(Call& c) {
    return c.run("cortex_m::quantized_conv2d.out",
                 {c.tensor(in_type, {1, 1, 3, 3}, x), c.tensor(kI8, {2, 2, 2, 1}, w),
                  c.tensor(kI32, {static_cast<int32_t>(bias.size())}, bias), c.list(stride),
                  c.list({1, 1}), c.list({1, 1}), c.i(0), c.i(0), c.tensor(kI32, {2}, mult),
                  c.tensor(kI32, {2}, shift), c.i(act_min), c.i(act_max), c.scratch()},
                 c.tensor(kI8, out_sizes, y, kNhwc));
  }
};

TEST(CortexMErrors, ConvRejectsBadArguments) {
  {
    Call c;
    ConvCall k;
    ASSERT_EQ(k.run(c), Error::Ok) << last_error_message();
  }
  {
    Call c;
    ConvCall k;
    k.out_sizes = {1, 2, 3, 3};
    k.y.resize(18);
    expect_invalid(k.run(c), "out has sizes [1, 2, 3, 3], expected [1, 2, 2, 2]");
  }
  {
    Call c;
    ConvCall k;
    k.stride = {0, 2};
    expect_invalid(k.run(c), "stride[0] is 0");
  }
  {
    Call c;
    ConvCall k;
    k.stride = {2};
    expect_invalid(k.run(c), "stride has 1 entries");
  }
  {
    Call c;
    ConvCall k;
    k.bias = {0, 0, 0};
    expect_invalid(k.run(c), "bias has 3 elements");
  }
  {
    Call c;
    ConvCall k;
    k.shift = {-1, 40};
    expect_invalid(k.run(c), "requantize_shifts[1] is 40");
  }
  {
    Call c;
    ConvCall k;
    k.act_min = 10;
    k.act_max = 5;
    expect_invalid(k.run(c), "activation_min 10 is above activation_max 5");
  }
  {
    Call c;
    ConvCall k;
    k.act_max = 300;
    expect_invalid(k.run(c), "activation_max is 300");
  }
  {
    Call c;
    ConvCall k;
    k.in_type = ScalarType::Byte;  // same bytes, wrong dtype
    expect_invalid(k.run(c), "input has dtype");
  }
}

TEST(CortexMErrors, OtherKernelsRejectBadArguments) {
  Call c;
  std::vector<float> f(4);
  i8 q(4), q3(3), lut(255);
  expect_invalid(c.run("cortex_m::quantize_per_tensor.out",
                       {c.tensor(kF32, {4}, f), c.d(0.1), c.i(0), c.i(-128), c.i(127), c.i(3)},
                       c.tensor(kI8, {4}, q)),
                 "dtype 3 is not supported");
  expect_invalid(c.run("cortex_m::quantize_per_tensor.out",
                       {c.tensor(kF32, {4}, f), c.d(0.0), c.i(0), c.i(-128), c.i(127), c.i(1)},
                       c.tensor(kI8, {4}, q)),
                 "must be positive");
  expect_invalid(c.run("cortex_m::quantize_per_tensor.out",
                       {c.tensor(kF32, {4}, f), c.d(0.1), c.i(0), c.i(-129), c.i(127), c.i(1)},
                       c.tensor(kI8, {4}, q)),
                 "quant_min is -129");
  // A static out of other sizes cannot be resized.
  EXPECT_NE(c.run("cortex_m::quantize_per_tensor.out",
                  {c.tensor(kF32, {4}, f), c.d(0.1), c.i(0), c.i(-128), c.i(127), c.i(1)},
                  c.tensor(kI8, {3}, q3)),
            Error::Ok);
  expect_invalid(c.run("cortex_m::dequantize_per_tensor.out",
                       {c.tensor(kI8, {4}, q), c.d(0.1), c.i(200), c.i(-128), c.i(127), c.i(1)},
                       c.tensor(kF32, {4}, f)),
                 "zero_point 200 is outside");
  expect_invalid(c.run("cortex_m::quantized_activation.out",
                       {c.tensor(kI8, {4}, q), c.tensor(kI8, {255}, lut)}, c.tensor(kI8, {4}, q)),
                 "lut has 255 elements");
  expect_invalid(
      c.run("cortex_m::softmax.out",
            {c.tensor(kI8, {4}, q), c.i(0), c.i(0), c.i(0), c.i(k2p30), c.i(1), c.i(-100)},
            c.tensor(kI8, {4}, q)),
      "output_zero_point must be -128");
  i8 m(4);
  expect_invalid(
      c.run("cortex_m::softmax.out",
            {c.tensor(kI8, {2, 2}, q), c.i(0), c.i(0), c.i(-128), c.i(k2p30), c.i(1), c.i(-100)},
            c.tensor(kI8, {2, 2}, m)),
      "must be the last dim");
  expect_invalid(c.run("cortex_m::maximum.out", {c.tensor(kI8, {4}, q), c.tensor(kI8, {3}, q3)},
                       c.tensor(kI8, {4}, m)),
                 "do not broadcast");
  expect_invalid(c.run("cortex_m::transpose.out", {c.tensor(kI8, {2, 2}, q), c.list({0, 0})},
                       c.tensor(kI8, {2, 2}, m)),
                 "not a permutation");
  expect_invalid(
      c.run("cortex_m::quantized_add.out",
            {c.tensor(kI8, {4}, q), c.i(0), c.i(k2p30), c.i(-1), c.tensor(kI8, {3}, q3), c.i(0),
             c.i(k2p30), c.i(-1), c.i(0), c.i(k2p30), c.i(-19), c.i(-128), c.i(127)},
            c.tensor(kI8, {4}, m)),
      "not a channel broadcast");
  expect_invalid(c.run("cortex_m::quantized_mul.out",
                       {c.tensor(kI8, {4}, q), c.i(0), c.tensor(kI8, {4}, q), c.i(0), c.i(0),
                        c.i(k2p30), c.i(32)},
                       c.tensor(kI8, {4}, m)),
                 "output_shift is 32");
  expect_invalid(
      c.run("cortex_m::quantized_div.out",
            {c.tensor(kI8, {4}, q), c.i(0), c.tensor(kI8, {2, 2}, q), c.i(0), c.i(0), c.d(1.0)},
            c.tensor(kI8, {4}, m)),
      "no broadcasting");
  expect_invalid(c.run("cortex_m::pad.out",
                       {c.tensor(kI8, {4}, q), c.list({0, 0, 0, -1}), c.list({0, 0, 0, 0}), c.i(0)},
                       c.tensor(kI8, {4}, m)),
                 "pre_pad[3] is -1");
  expect_invalid(c.run("cortex_m::pad.out",
                       {c.tensor(kI8, {4}, q), c.list({0, 0, 0, 1}), c.list({0, 0, 0, 0}), c.i(0)},
                       c.tensor(kI8, {4}, m)),
                 "expected 5");
  expect_invalid(c.run("cortex_m::quantized_batch_matmul.out",
                       {c.tensor(kI8, {1, 2, 2}, q), c.i(0), c.tensor(kI8, {1, 2, 2}, q), c.i(0),
                        c.i(0), c.i(k2p30), c.i(0), c.scratch()},
                       c.tensor(kI8, {1, 4, 1}, m)),
                 "out has sizes [1, 4, 1], expected [1, 2, 2]");
}

TEST(CortexMErrors, PoolsAndDepthwiseRejectWhatTheKernelsReject) {
  Call c;
  i8 x(8), y(8), w(8);
  i32 mult(2, k2p30), shift(2, 0);
  // A window that covers only padding: avg pool would divide by zero.
  expect_invalid(c.run("cortex_m::quantized_avg_pool2d.out",
                       {c.tensor(kI8, {1, 1, 1, 2}, x), c.list({1, 1}), c.list({1, 1}),
                        c.list({0, 1}), c.b(false), c.i(0), c.i(0), c.i(0), c.scratch()},
                       c.tensor(kI8, {1, 1, 1, 4}, y)),
                 "covers no input position");
  expect_invalid(
      c.run("cortex_m::quantized_max_pool2d.out",
            {c.tensor(kI8, {1, 1, 2, 2}, x), c.list({2, 2}), c.list({1, 1}), c.list({0, 0}),
             c.list({2, 1}), c.b(false), c.i(0), c.i(0), c.i(-128), c.i(127)},
            c.tensor(kI8, {1, 1, 1, 1}, y)),
      "dilation must be [1, 1]");
  expect_invalid(
      c.run("cortex_m::quantized_max_pool2d.out",
            {c.tensor(kI8, {1, 1, 2, 2}, x), c.list({2, 2}), c.list({1, 1}), c.list({0, 0}),
             c.list({1, 1}), c.b(false), c.i(1), c.i(2), c.i(-128), c.i(127)},
            c.tensor(kI8, {1, 1, 1, 1}, y)),
      "must equal input_zero_point");
  expect_invalid(c.run("cortex_m::quantized_depthwise_conv2d.out",
                       {c.tensor(kI8, {2, 2, 1, 1}, x), c.tensor(kI8, {1, 1, 1, 2}, w), c.none(),
                        c.list({1, 1}), c.list({0, 0}), c.list({1, 1}), c.i(1), c.i(0), c.i(0),
                        c.tensor(kI32, {2}, mult), c.tensor(kI32, {2}, shift), c.i(-128), c.i(127),
                        c.scratch()},
                       c.tensor(kI8, {2, 2, 1, 1}, y)),
                 "batch must be 1");
  // quantized_linear takes activation_max before activation_min: swapped bounds are caught.
  expect_invalid(c.run("cortex_m::quantized_linear.out",
                       {c.tensor(kI8, {2, 4}, x), c.tensor(kI8, {2, 4}, w), c.none(), c.none(),
                        c.i(0), c.i(0), c.i(0), c.list({k2p30}), c.list({0}), c.i(-128), c.i(127)},
                       c.tensor(kI8, {2, 2}, y)),
                 "activation_min 127 is above activation_max -128");
}

// The same logical conv and channel-broadcast add in NHWC and NCHW memory give the same values.
TEST(CortexMLayout, ChannelsLastAndContiguousAgree) {
  const int n = 2, cin = 3, h = 4, wd = 5, cout = 4;
  i8 nchw(n * cin * h * wd), nhwc(nchw.size()), w(cout * 3 * 3 * cin);
  for (size_t i = 0; i < nchw.size(); ++i) nchw[i] = static_cast<int8_t>((i * 37) % 251 - 125);
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < cin; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < wd; ++x)
          nhwc[((b * h + y) * wd + x) * cin + ch] = nchw[((b * cin + ch) * h + y) * wd + x];
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>((i * 13) % 17 - 8);
  i32 bias = {5, -7, 100, 0}, mult = {1518500250, k2p30, 1085000000, 1500406475};
  i32 shift = {-3, -2, -4, -1};
  i8 y_cl(n * cout * h * wd), y_c(y_cl.size());
  auto conv = [&](i8& x, std::span<const uint8_t> order, i8& y) {
    Call c;
    return c.run("cortex_m::quantized_conv2d.out",
                 {c.tensor(kI8, {n, cin, h, wd}, x, order), c.tensor(kI8, {cout, 3, 3, cin}, w),
                  c.tensor(kI32, {cout}, bias), c.list({1, 1}), c.list({1, 1}), c.list({1, 1}),
                  c.i(3), c.i(-2), c.tensor(kI32, {cout}, mult), c.tensor(kI32, {cout}, shift),
                  c.i(-128), c.i(127), c.scratch()},
                 c.tensor(kI8, {n, cout, h, wd}, y, order));
  };
  ASSERT_EQ(conv(nhwc, kNhwc, y_cl), Error::Ok) << last_error_message();
  ASSERT_EQ(conv(nchw, {}, y_c), Error::Ok) << last_error_message();
  int differing = 0, nonzero = 0;
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < cout; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < wd; ++x) {
          const int8_t a = y_cl[((b * h + y) * wd + x) * cout + ch];
          differing += a != y_c[((b * cout + ch) * h + y) * wd + x];
          nonzero += a != 0;
        }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(nonzero, 10);
  // Channel broadcast: out[n, c, y, x] = self[n, c, y, x] * other[c] in both layouts.
  i8 small = {2, -3, 4}, m_cl(nchw.size()), m_c(nchw.size());
  auto mul = [&](i8& x, std::span<const uint8_t> order, i8& y) {
    Call c;
    return c.run("cortex_m::quantized_mul.out",
                 {c.tensor(kI8, {n, cin, h, wd}, x, order), c.i(0),
                  c.tensor(kI8, {1, cin, 1, 1}, small), c.i(0), c.i(0), c.i(k2p30), c.i(1)},
                 c.tensor(kI8, {n, cin, h, wd}, y, order));
  };
  ASSERT_EQ(mul(nhwc, kNhwc, m_cl), Error::Ok) << last_error_message();
  ASSERT_EQ(mul(nchw, {}, m_c), Error::Ok) << last_error_message();
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < cin; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < wd; ++x) {
          const int i_c = ((b * cin + ch) * h + y) * wd + x;
          const int want = std::clamp(nchw[i_c] * small[ch], -128, 127);
          EXPECT_EQ(m_c[i_c], want);
          EXPECT_EQ(m_cl[((b * h + y) * wd + x) * cin + ch], want);
        }
}

}  // namespace
}  // namespace ember
