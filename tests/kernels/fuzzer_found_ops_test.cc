// Conformance with ATen of the kernels added because the differential fuzzer's programs were often
// refused for lack of them: bucketize, adaptive_max_pool2d, rsub.Scalar, and clamp in float16.
#include "tests/kernels/aten_reference.h"
#include "tests/kernels/dtype_sweep.h"
#include "tests/kernels/test_tensors.h"

namespace ember::testing {
namespace {

using Outs = std::vector<at::Tensor>;

at::Tensor with_specials(at::Tensor x) {
  at::Tensor flat = x.view({-1});
  flat[0] = NAN;
  flat[1] = INFINITY;
  flat[2] = -INFINITY;
  return x;
}

TEST(Bucketize, LeftRightInt32NanAndMixedDtypes) {
  at::manual_seed(20);
  const at::Tensor x = with_specials(at::randn({3, 5}) * 2);
  for (at::ScalarType bdtype : {at::kFloat, at::kDouble, at::kLong, at::kHalf}) {
    // Boundaries with repeats, so that left and right differ.
    const at::Tensor b = at::tensor(std::vector<float>{-2, -1, -1, 0, 0.5f, 1, 3}).to(bdtype);
    for (const bool right : {false, true}) {
      for (const bool int32 : {false, true}) {
        const at::Tensor expected = at::bucketize(x, b, int32, right);
        KernelCall call("aten::bucketize.Tensor_out");
        call.tensor(x).tensor(b).scalar(int32).scalar(right).out_like(expected).repeat_out();
        ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
        expect_matches(call.out(), expected);
      }
    }
  }
}

TEST(Bucketize, EmptyPermutedAndErrors) {
  const at::Tensor b = at::tensor(std::vector<int64_t>{1, 3, 5, 7, 9, 11});
  const at::Tensor prefix = b.slice(0, 0, 3).contiguous();  // 1, 3, 5
  const at::Tensor x = at::arange(12).view({3, 4}).t();
  for (const at::Tensor& bounds : {prefix, b.slice(0, 0, 0)}) {
    const at::Tensor expected = at::bucketize(x, bounds);
    KernelCall call("aten::bucketize.Tensor_out");
    call.tensor(x).tensor(bounds).scalar(false).scalar(false).out_like(expected).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(), expected);
  }
  const at::Tensor empty = at::empty({0, 3});
  KernelCall e("aten::bucketize.Tensor_out");
  e.tensor(empty).tensor(b).scalar(false).scalar(false).out(at::kLong, {0, 3}, false).repeat_out();
  ASSERT_EQ(e.run(), Error::Ok) << last_error_message();

  KernelCall two_d("aten::bucketize.Tensor_out");
  two_d.tensor(x).tensor(b.view({2, 3})).scalar(false).scalar(false).out(at::kLong, {4, 3}, false);
  EXPECT_EQ(two_d.repeat_out().run(), Error::InvalidArgument);
  KernelCall wrong_out("aten::bucketize.Tensor_out");
  wrong_out.tensor(x).tensor(b).scalar(true).scalar(false).out(at::kLong, {4, 3}, false);
  EXPECT_EQ(wrong_out.repeat_out().run(), Error::InvalidArgument);
}

TEST(Pooling, AdaptiveMaxPool2d) {
  at::manual_seed(21);
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    for (const auto& [shape, size] :
         std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{1, 2, 7, 5}, {3, 2}},
             {{2, 3, 8, 8}, {4, 4}},
             {{3, 9, 6}, {4, 5}},
             {{1, 1, 5, 5}, {7, 6}}}) {
      at::Tensor x = at::randn(shape).to(dtype);
      x.view({-1})[3] = NAN;
      const auto [y, idx] = at::adaptive_max_pool2d(x, size);
      for (const bool channels_last : {false, true}) {
        const at::Tensor in =
            channels_last && x.dim() == 4 ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
        KernelCall call("aten::adaptive_max_pool2d.out");
        call.tensor(in).int_list(size).out_like(y).out_like(idx).repeat_outs(2);
        ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
        expect_matches(call.out(0), y);
        expect_matches(call.out(1), idx);
      }
    }
  }
  KernelCall ints("aten::adaptive_max_pool2d.out");
  ints.tensor(at::ones({1, 2, 4, 4}, at::kLong))
      .int_list({2, 2})
      .out(at::kLong, {1, 2, 2, 2}, false)
      .out(at::kLong, {1, 2, 2, 2}, false)
      .repeat_outs(2);
  EXPECT_EQ(ints.run(), Error::InvalidArgument);
}

TEST(BinaryOps, RsubScalar) {
  at::manual_seed(22);
  for (at::ScalarType dtype : {at::kFloat, at::kHalf, at::kLong, at::kInt, at::kByte}) {
    const at::Tensor x = at::isFloatingType(dtype) ? with_specials(at::randn({3, 4}).to(dtype))
                                                   : at::randint(-5, 5, {3, 4}).to(dtype);
    for (const bool float_scalar : {false, true}) {
      const at::Scalar other = float_scalar ? at::Scalar(2.5) : at::Scalar(int64_t{3});
      const at::Tensor expected = at::rsub(x, other, 2);
      KernelCall call("aten::rsub.Scalar_out");
      call.tensor(x);
      if (float_scalar) {
        call.scalar(2.5);
      } else {
        call.scalar(int64_t{3});
      }
      call.scalar(int64_t{2}).out_like(expected).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
      expect_matches(call.out(), expected);
    }
  }
  KernelCall b("aten::rsub.Scalar_out");
  b.tensor(at::ones({2}, at::kBool)).scalar(true).scalar(int64_t{1}).out(at::kBool, {2}, false);
  EXPECT_EQ(b.repeat_out().run(), Error::InvalidArgument);
}

// The fuzzer's program clamped a float16 tensor by tensor bounds, which PyTorch 2 runs (libtorch
// 1.13, the reference here, lacks float16 clamp: compared with float32 rounded, exact for clamp).
TEST(Clamp, Float16TensorAndScalarBoundsWithNan) {
  const at::Tensor x = at::tensor(std::vector<float>{1, NAN, -3, 5, 0.25f}).to(at::kHalf);
  const at::Tensor lo = at::tensor(std::vector<float>{0, 0, NAN, -1, 0.5f}).to(at::kHalf);
  const at::Tensor hi = at::tensor(std::vector<float>{2}).to(at::kHalf);
  const at::Tensor expected = at::clamp(x.to(at::kFloat), lo.to(at::kFloat), hi.to(at::kFloat));
  KernelCall t("aten::clamp.Tensor_out");
  t.tensor(x).tensor(lo).tensor(hi).out_like(x).repeat_out();
  ASSERT_EQ(t.run(), Error::Ok) << last_error_message();
  expect_matches(t.out(), expected.to(at::kHalf));
  KernelCall s("aten::clamp.out");
  s.tensor(x).scalar(-1.0).scalar(2.0).out_like(x).repeat_out();
  ASSERT_EQ(s.run(), Error::Ok) << last_error_message();
  expect_matches(s.out(), at::clamp(x.to(at::kFloat), -1.0, 2.0).to(at::kHalf));
}

EMBER_SWEEP_CASE("aten::rsub.Scalar_out", [](at::ScalarType dtype, std::string* why) {
  const at::Tensor x = sweep_input(dtype, {3, 4});
  return sweep_run(
      "aten::rsub.Scalar_out", [&] { return Outs{at::rsub(x, 3, 2)}; },
      [&](KernelCall& c) { c.tensor(x).scalar(int64_t{3}).scalar(int64_t{2}); }, {dtype}, x.sizes(),
      why);
});

EMBER_SWEEP_CASE("aten::bucketize.Tensor_out", [](at::ScalarType dtype, std::string* why) {
  const at::Tensor x = sweep_input(dtype, {3, 4});
  const at::Tensor b = std::get<0>(at::sort(sweep_input(dtype, {5}, false)));
  return sweep_run_as(
      "aten::bucketize.Tensor_out", dtype,
      [&](at::ScalarType t) { return Outs{at::bucketize(x.to(t), b.to(t))}; },
      [&](KernelCall& c) { c.tensor(x).tensor(b).scalar(false).scalar(false); }, why);
});

EMBER_SWEEP_CASE("aten::adaptive_max_pool2d.out", [](at::ScalarType dtype, std::string* why) {
  const at::Tensor x = sweep_input(dtype, {1, 2, 7, 6});
  return sweep_run_as(
      "aten::adaptive_max_pool2d.out", dtype,
      [&](at::ScalarType t) {
        const auto [y, i] = at::adaptive_max_pool2d(x.to(t), {3, 4});
        return Outs{y, i};
      },
      [&](KernelCall& c) {
        c.tensor(x).int_list({3, 4});
      },
      why);
});

}  // namespace
}  // namespace ember::testing
