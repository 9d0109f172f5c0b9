// Every worked example of ../shared/docs/cortex-m-ops.md, with the document's integers as the
// expected values. The error paths are cortex_m_errors_test.cc; the randomized comparison with an
// independent numpy model is python/tests/test_runtime_cortex_m.py.
#include "runtime/kernels/cortex_m/cortex_m_test_util.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember {
namespace {

using cortex_m_test::Call;
using cortex_m_test::kNhwc;
using i8 = std::vector<int8_t>;
using i16 = std::vector<int16_t>;
using i32 = std::vector<int32_t>;
constexpr ScalarType kI8 = ScalarType::Char, kI32 = ScalarType::Int, kF32 = ScalarType::Float;
constexpr int32_t k2p30 = 1 << 30;

TEST(CortexMArith, RequantizeTableOfSection2_5) {
  const i32 quarter = {-1, -1, -1, -1, 0, 0, 1, 1, 1, 1, 2};
  const i32 half = {-2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3};
  for (int32_t v = -5; v <= 5; ++v) {
    EXPECT_EQ(cortex_m::requantize(v, k2p30, -1), quarter[v + 5]) << v;
    EXPECT_EQ(cortex_m::requantize(v, k2p30, 0), half[v + 5]) << v;
  }
  EXPECT_EQ(cortex_m::requantize(1000, 1518500250, -3), 88);
  EXPECT_EQ(cortex_m::requantize(-1000, 1518500250, -3), -88);
  EXPECT_EQ(cortex_m::requantize(7, 1500406475, -8), 0);
  EXPECT_EQ(cortex_m::requantize(12345, 1085000000, -7), 49);
  EXPECT_EQ(cortex_m::requantize(100, k2p30, 1), 100);
  EXPECT_EQ(cortex_m::requantize(1 << 29, k2p30, 2), -1073741824);  // the left shift wraps
  EXPECT_EQ(cortex_m::requantize(1 << 30, k2p30, 2), 0);
  EXPECT_EQ(cortex_m::requantize(5, k2p30, -1), 2);  // DHM 3 (from 2.5), then RDIV(3, 1)
  EXPECT_EQ(cortex_m::requantize(-5, k2p30, -1), -1);
  EXPECT_EQ(cortex_m::requantize(1, k2p30, -1), 1);
}

TEST(CortexMArith, DhmTiesTowardPlusInfinityAndRdivAwayFromZero) {
  EXPECT_EQ(cortex_m::dhm(-1, k2p30), 0);                     // -0.5
  EXPECT_EQ(cortex_m::dhm(1, k2p30), 1);                      // +0.5
  EXPECT_EQ(cortex_m::dhm(-3, k2p30), -1);                    // -1.5
  EXPECT_EQ(cortex_m::dhm(INT32_MIN, INT32_MIN), INT32_MIN);  // low 32 bits
  EXPECT_EQ(cortex_m::dhm_sat(INT32_MIN, INT32_MIN), INT32_MAX);
  EXPECT_EQ(cortex_m::rdiv(3, 1), 2);
  EXPECT_EQ(cortex_m::rdiv(-3, 1), -2);
  EXPECT_EQ(cortex_m::rdiv(-10, 2), -3);  // conv example: -2.5 -> -3
  EXPECT_EQ(cortex_m::rdiv(7, 0), 7);
  EXPECT_EQ(cortex_m::rdiv(INT32_MIN, 33), 0);  // exact beyond 32 bits
}

TEST(CortexMQuantize, WorkedExamples) {
  struct Case {
    double scale;
    int zp;
    std::vector<float> x;
    i8 want;
  };
  const Case cases[] = {
      {0.5, -1, {0.25f, -0.75f, 1.0f, 100.0f, -1.25f, 0.75f}, {-1, -3, 1, 127, -3, 1}},
      {0.1, 0, {0.35f, 0.45f, 0.25f, -0.35f, 1.05f}, {4, 4, 2, -4, 10}},
      {2.822781801223755,
       68,
       {-230.0f, 0.0f, 1.4113909f, 10.0f, -500.0f, 200.0f},
       {-13, 68, 68, 72, -109, 127}},
  };
  for (const Case& k : cases) {
    Call c;
    std::vector<float> x = k.x;
    i8 y(x.size());
    const int32_t n = static_cast<int32_t>(x.size());
    ASSERT_EQ(c.run("cortex_m::quantize_per_tensor.out",
                    {c.tensor(kF32, {n}, x), c.d(k.scale), c.i(k.zp), c.i(-128), c.i(127), c.i(1)},
                    c.tensor(kI8, {n}, y)),
              Error::Ok)
        << last_error_message();
    EXPECT_EQ(y, k.want) << k.scale;
  }
  // int16: the same rule, a wider clamp.
  Call c;
  std::vector<float> x = {100.0f, -1.25f};
  i16 y(2);
  ASSERT_EQ(c.run("cortex_m::quantize_per_tensor.out",
                  {c.tensor(kF32, {2}, x), c.d(0.5), c.i(-1), c.i(-32768), c.i(32767), c.i(2)},
                  c.tensor(ScalarType::Short, {2}, y)),
            Error::Ok);
  EXPECT_EQ(y, (i16{199, -3}));
}

TEST(CortexMDequantize, WorkedExamples) {
  Call c;
  i8 q = {-128, 0, 127};
  std::vector<float> y(3);
  ASSERT_EQ(c.run("cortex_m::dequantize_per_tensor.out",
                  {c.tensor(kI8, {3}, q), c.d(0.1), c.i(3), c.i(-128), c.i(127), c.i(1)},
                  c.tensor(kF32, {3}, y)),
            Error::Ok);
  EXPECT_EQ(y,
            (std::vector<float>{-13.100000381469727f, -0.30000001192092896f, 12.40000057220459f}));
  i8 kws = {127, -128};
  std::vector<float> z(2);
  ASSERT_EQ(c.run("cortex_m::dequantize_per_tensor.out",
                  {c.tensor(kI8, {2}, kws), c.d(0.15429316461086273), c.i(23), c.i(-128), c.i(127),
                   c.i(1)},
                  c.tensor(kF32, {2}, z)),
            Error::Ok);
  EXPECT_NEAR(z[0], 16.04649f, 1e-5f);
  EXPECT_NEAR(z[1], -23.298267f, 1e-5f);
}

TEST(CortexMConv, WorkedExample) {
  Call c;
  i8 x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  i8 w = {1, 0, 0, -1, 2, 1, 1, 2};
  i32 bias = {10, -20}, mult = {1073741824, 1518500250}, shift = {-1, -2};
  i8 y(8);
  ASSERT_EQ(c.run("cortex_m::quantized_conv2d.out",
                  {c.tensor(kI8, {1, 1, 3, 3}, x, kNhwc), c.tensor(kI8, {2, 2, 2, 1}, w),
                   c.tensor(kI32, {2}, bias), c.list({2, 2}), c.list({1, 1}), c.list({1, 1}),
                   c.i(2), c.i(-5), c.tensor(kI32, {2}, mult), c.tensor(kI32, {2}, shift),
                   c.i(-128), c.i(127), c.scratch()},
                  c.tensor(kI8, {1, 2, 2, 2}, y, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{-3, -8, -3, -6, -4, -4, -3, 1}));
}

TEST(CortexMDepthwiseConv, WorkedExample) {
  Call c;
  i8 x = {1, -1, 2, -2, 3, -3, 4, -4};
  i8 w = {1, 2, 3, 4, 1, 1, 1, 1, 0, 1, 0, 1, -1, 0, 1, 2};
  i32 bias = {0, 100, -100, 5}, mult(4, k2p30), shift(4, 0);
  i8 y(4);
  ASSERT_EQ(c.run("cortex_m::quantized_depthwise_conv2d.out",
                  {c.tensor(kI8, {1, 2, 2, 2}, x, kNhwc), c.tensor(kI8, {1, 2, 2, 4}, w),
                   c.tensor(kI32, {4}, bias), c.list({1, 1}), c.list({0, 0}), c.list({1, 1}),
                   c.i(2), c.i(1), c.i(3), c.tensor(kI32, {4}, mult), c.tensor(kI32, {4}, shift),
                   c.i(-128), c.i(127), c.scratch()},
                  c.tensor(kI8, {1, 4, 1, 1}, y, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{3, 59, -49, 1}));
}

TEST(CortexMLinear, WorkedExampleInBothForms) {
  for (bool kernel_sum : {false, true}) {
    Call c;
    i8 x = {10, -20, 30, -40};
    i8 w = {1, 2, 3, 4, -1, 0, 1, 0, 5, -5, 5, -5};
    i32 bias = {100, -50, 0}, sums = {1380, -50, 0};
    i8 y(3);
    ASSERT_EQ(c.run("cortex_m::quantized_linear.out",
                    {c.tensor(kI8, {1, 4}, x), c.tensor(kI8, {3, 4}, w),
                     kernel_sum ? c.none() : c.tensor(kI32, {3}, bias),
                     kernel_sum ? c.tensor(kI32, {1, 3}, sums) : c.none(), c.i(128), c.i(0),
                     c.i(23), c.list({1500406475}), c.list({-8}), c.i(127), c.i(-128)},
                    c.tensor(kI8, {1, 3}, y)),
              Error::Ok)
        << last_error_message();
    EXPECT_EQ(y, (i8{26, 23, 24})) << "kernel_sum " << kernel_sum;
  }
}

TEST(CortexMAvgPool, RoundsHalfAwayFromZeroAndLeavesPaddingOutOfTheCount) {
  Call c;
  i8 x = {2, 3, -2, -3}, y(2);
  ASSERT_EQ(c.run("cortex_m::quantized_avg_pool2d.out",
                  {c.tensor(kI8, {1, 1, 1, 4}, x, kNhwc), c.list({1, 2}), c.list({1, 2}),
                   c.list({0, 0}), c.b(false), c.i(0), c.i(k2p30), c.i(0), c.scratch()},
                  c.tensor(kI8, {1, 1, 1, 2}, y, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{3, -3}));
  i8 x2 = {10, 20, 31}, y2(2);
  ASSERT_EQ(c.run("cortex_m::quantized_avg_pool2d.out",
                  {c.tensor(kI8, {1, 1, 1, 3}, x2, kNhwc), c.list({1, 3}), c.list({1, 2}),
                   c.list({0, 1}), c.b(false), c.i(0), c.i(k2p30), c.i(0), c.scratch()},
                  c.tensor(kI8, {1, 1, 1, 2}, y2, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y2, (i8{15, 26}));
}

TEST(CortexMPad, ChannelsLastPadOfW) {
  Call c;
  i8 x = {1, 2, 3, 4}, y(6);
  ASSERT_EQ(c.run("cortex_m::pad.out",
                  {c.tensor(kI8, {1, 2, 1, 2}, x, kNhwc), c.list({0, 0, 1, 0}),
                   c.list({0, 0, 0, 0}), c.i(-128)},
                  c.tensor(kI8, {1, 2, 1, 3}, y, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{-128, -128, 1, 2, 3, 4}));
  // KWS #12: all pads 0, a plain copy.
  i8 z(4);
  ASSERT_EQ(c.run("cortex_m::pad.out",
                  {c.tensor(kI8, {1, 2, 1, 2}, x, kNhwc), c.list({0, 0, 0, 0}),
                   c.list({0, 0, 0, 0}), c.i(5)},
                  c.tensor(kI8, {1, 2, 1, 2}, z, kNhwc)),
            Error::Ok);
  EXPECT_EQ(z, x);
}

TEST(CortexMMaxPool, WorkedExample) {
  Call c;
  i8 x = {1, -100, 5, -7, 3, -2, -4, -50}, y(2);
  ASSERT_EQ(c.run("cortex_m::quantized_max_pool2d.out",
                  {c.tensor(kI8, {1, 2, 2, 2}, x, kNhwc), c.list({2, 2}), c.list({2, 2}),
                   c.list({0, 0}), c.list({1, 1}), c.b(false), c.i(0), c.i(0), c.i(-128), c.i(0)},
                  c.tensor(kI8, {1, 2, 1, 1}, y, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{0, -2}));
}

TEST(CortexMAdd, WorkedExample) {
  Call c;
  i8 a = {20, -128, 127, 0}, b = {-5, 50, 127, 5}, y(4);
  ASSERT_EQ(c.run("cortex_m::quantized_add.out",
                  {c.tensor(kI8, {4}, a), c.i(-10), c.i(k2p30), c.i(-1), c.tensor(kI8, {4}, b),
                   c.i(5), c.i(k2p30), c.i(0), c.i(0), c.i(k2p30), c.i(-19), c.i(-128), c.i(127)},
                  c.tensor(kI8, {4}, y)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{3, -7, 95, 3}));
  // The steps of element 0.
  EXPECT_EQ(cortex_m::requantize(30 << 20, k2p30, -1), 7864320);
  EXPECT_EQ(cortex_m::requantize(-10 << 20, k2p30, 0), -5242880);
  EXPECT_EQ(cortex_m::requantize(2621440, k2p30, -19), 3);
}

TEST(CortexMMul, WorkedExample) {
  Call c;
  i8 a = {10, -20, 3, 127}, b = {5, 5, -3, 127}, y(4);
  ASSERT_EQ(c.run("cortex_m::quantized_mul.out",
                  {c.tensor(kI8, {4}, a), c.i(0), c.tensor(kI8, {4}, b), c.i(-1), c.i(2),
                   c.i(k2p30), c.i(-1)},
                  c.tensor(kI8, {4}, y)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{17, -28, 0, 127}));
}

TEST(CortexMDiv, WorkedExamples) {
  Call c;
  i8 a = {10, -7, 4, 0, 1}, b = {4, 2, 0, 3, 2}, y(5);
  ASSERT_EQ(c.run("cortex_m::quantized_div.out",
                  {c.tensor(kI8, {5}, a), c.i(0), c.tensor(kI8, {5}, b), c.i(0), c.i(1), c.d(1.5)},
                  c.tensor(kI8, {5}, y)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{5, -4, 1, 1, 2}));
  i16 a2 = {1, -1, 5, 7}, b2 = {2, 2, 2, 2}, y2(4);
  ASSERT_EQ(c.run("cortex_m::quantized_div.out",
                  {c.tensor(ScalarType::Short, {4}, a2), c.i(0),
                   c.tensor(ScalarType::Short, {4}, b2), c.i(0), c.i(0), c.d(1.0)},
                  c.tensor(ScalarType::Short, {4}, y2)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y2, (i16{1, -1, 3, 4}));
}

TEST(CortexMActivation, TableLookup) {
  Call c;
  i8 lut(256);
  for (int k = 0; k < 256; ++k) lut[k] = static_cast<int8_t>(k - 118 > 127 ? 127 : k - 118);
  i8 x = {-128, 0, 127}, y(3);
  ASSERT_EQ(c.run("cortex_m::quantized_activation.out",
                  {c.tensor(kI8, {3}, x), c.tensor(kI8, {256}, lut)}, c.tensor(kI8, {3}, y)),
            Error::Ok);
  EXPECT_EQ(y, (i8{-118, 10, 127}));
}

TEST(CortexMMaximumMinimum, ScalarBroadcast) {
  Call c;
  i8 a = {-5, 0, 7}, b = {3}, mx(3), mn(3);
  ASSERT_EQ(c.run("cortex_m::maximum.out", {c.tensor(kI8, {1, 3}, a), c.tensor(kI8, {1, 1}, b)},
                  c.tensor(kI8, {1, 3}, mx)),
            Error::Ok);
  ASSERT_EQ(c.run("cortex_m::minimum.out", {c.tensor(kI8, {1, 3}, a), c.tensor(kI8, {1, 1}, b)},
                  c.tensor(kI8, {1, 3}, mn)),
            Error::Ok);
  EXPECT_EQ(mx, (i8{3, 3, 7}));
  EXPECT_EQ(mn, (i8{-5, 0, 3}));
}

TEST(CortexMSoftmax, WorkedExampleAndItsIntermediates) {
  const i32 z = {-134217728, -67108864, 0, -201326592};
  const i32 exps = {290630390, 790015308, 2147483647, 106916946};
  const i32 d = {-20, -10, 0, -30};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(cortex_m::dhm_sat(d[i] * (1 << 23), 1717986918), z[i]);
    EXPECT_EQ(cortex_m::exp_on_negative(z[i]), exps[i]);
  }
  EXPECT_EQ(cortex_m::rdiv(exps[0], 12), 70955);
  EXPECT_EQ(cortex_m::one_over_one_plus_x(1187565568), 1382793992);
  Call c;
  i8 x = {10, 20, 30, 0}, y(4);
  ASSERT_EQ(c.run("cortex_m::softmax.out",
                  {c.tensor(kI8, {1, 4}, x), c.i(1), c.i(0), c.i(-128), c.i(1717986918), c.i(23),
                   c.i(-248)},
                  c.tensor(kI8, {1, 4}, y)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{-106, -67, 37, -120}));
  i8 x2 = {-128, 127, 127, -128, 0}, y2(5);
  ASSERT_EQ(c.run("cortex_m::softmax.out",
                  {c.tensor(kI8, {5}, x2), c.i(-1), c.i(0), c.i(-128), c.i(1717986918), c.i(22),
                   c.i(-496)},
                  c.tensor(kI8, {5}, y2)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y2, (i8{-128, 0, 0, -128, -128}));
}

TEST(CortexMTranspose, WorkedExamples) {
  Call c;
  i8 x = {0, 1, 2, 3, 4, 5}, y(6);
  ASSERT_EQ(c.run("cortex_m::transpose.out", {c.tensor(kI8, {2, 3}, x), c.list({1, 0})},
                  c.tensor(kI8, {3, 2}, y)),
            Error::Ok);
  EXPECT_EQ(y, (i8{0, 3, 1, 4, 2, 5}));
  i8 r(24), t(24);
  for (int i = 0; i < 24; ++i) r[i] = static_cast<int8_t>(i);
  ASSERT_EQ(c.run("cortex_m::transpose.out", {c.tensor(kI8, {2, 3, 4}, r), c.list({2, 0, 1})},
                  c.tensor(kI8, {4, 2, 3}, t)),
            Error::Ok);
  EXPECT_EQ(i8(t.begin(), t.begin() + 12), (i8{0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21}));
}

TEST(CortexMBatchMatmul, WorkedExample) {
  Call c;
  i8 lhs = {1, 2, 3, 4, 5, 6}, rhs = {1, 0, -1, 2, 2, 2}, y(4);
  ASSERT_EQ(c.run("cortex_m::quantized_batch_matmul.out",
                  {c.tensor(kI8, {1, 2, 3}, lhs), c.i(1), c.tensor(kI8, {1, 2, 3}, rhs), c.i(0),
                   c.i(-3), c.i(k2p30), c.i(-2), c.scratch()},
                  c.tensor(kI8, {1, 2, 2}, y)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{-3, -1, -3, 2}));
}

TEST(CortexMTransposeConv, WorkedExamplesWithPyTorchSemantics) {
  struct Case {
    int64_t stride, pad;
    int32_t out;
    i8 want;
  };
  const Case cases[] = {
      {2, 0, 4, {1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16}},
      {1, 0, 3, {1, 4, 4, 6, 20, 16, 9, 24, 16}},
      // CMSIS-NN gives [[10,10],[12,12]] here (§6.2); PyTorch's semantics give this.
      {2, 1, 2, {4, 6, 6, 4}},
  };
  for (const Case& k : cases) {
    Call c;
    i8 x = {1, 2, 3, 4}, w = {1, 2, 3, 4};
    i32 bias = {0}, mult = {k2p30}, shift = {1};
    i8 y(static_cast<size_t>(k.out * k.out));
    ASSERT_EQ(
        c.run("cortex_m::quantized_transpose_conv2d.out",
              {c.tensor(kI8, {1, 1, 2, 2}, x, kNhwc), c.tensor(kI8, {1, 2, 2, 1}, w),
               c.tensor(kI32, {1}, bias), c.list({k.stride, k.stride}), c.list({k.pad, k.pad}),
               c.list({0, 0}), c.list({1, 1}), c.i(0), c.i(0), c.tensor(kI32, {1}, mult),
               c.tensor(kI32, {1}, shift), c.i(-128), c.i(127), c.scratch(), c.scratch()},
              c.tensor(kI8, {1, 1, k.out, k.out}, y, kNhwc)),
        Error::Ok)
        << last_error_message();
    EXPECT_EQ(y, k.want) << "stride " << k.stride << " pad " << k.pad;
  }
}

// §4.1: the dim-order copy a Cortex-M program calls, from the portable library.
TEST(CortexMDimOrder, CloneToChannelsLast) {
  Call c;
  i8 x = {1, 2, 3, 4}, y(4), z(4);
  ASSERT_EQ(c.run("dim_order_ops::_clone_dim_order.out",
                  {c.tensor(kI8, {1, 2, 1, 2}, x), c.b(false), c.list({0, 2, 3, 1})},
                  c.tensor(kI8, {1, 2, 1, 2}, y, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(y, (i8{1, 3, 2, 4}));
  // KWS's case: the same dim order, a byte copy; a Null dim_order keeps out's.
  ASSERT_EQ(c.run("dim_order_ops::_clone_dim_order.out",
                  {c.tensor(kI8, {1, 2, 1, 2}, y, kNhwc), c.b(false), c.none()},
                  c.tensor(kI8, {1, 2, 1, 2}, z, kNhwc)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(z, y);
  i8 w(4);
  ASSERT_EQ(c.run("dim_order_ops::_to_dim_order_copy.out",
                  {c.tensor(kI8, {1, 2, 1, 2}, y, kNhwc), c.b(false), c.list({0, 1, 2, 3})},
                  c.tensor(kI8, {1, 2, 1, 2}, w)),
            Error::Ok)
      << last_error_message();
  EXPECT_EQ(w, x);
}

}  // namespace
}  // namespace ember
