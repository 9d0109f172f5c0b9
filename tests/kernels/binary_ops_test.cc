// Conformance of the binary family (add, mul, ...) with ATen: every supported dtype, mixed
// dtypes (type promotion), broadcasting, 0-dim and empty tensors, NaN and infinities.
#include "tests/kernels/aten_reference.h"

namespace ember::testing {
namespace {

const at::ScalarType kAllTypes[] = {at::kByte, at::kChar,  at::kShort,  at::kInt,  at::kLong,
                                    at::kHalf, at::kFloat, at::kDouble, at::kBool, at::kBFloat16};

at::Tensor random_of(at::ScalarType dtype, at::IntArrayRef sizes) {
  if (dtype == at::kBool) return at::randint(0, 2, sizes).to(at::kBool);
  if (at::isFloatingType(dtype)) return (at::randn(sizes) * 4).to(dtype);
  if (dtype == at::kByte) return at::randint(0, 255, sizes).to(dtype);
  return at::randint(-100, 100, sizes).to(dtype);
}

TEST(BinaryOps, AddEveryDtypeWithBroadcastAndAlpha) {
  at::manual_seed(0);
  for (at::ScalarType dtype : kAllTypes) {
    const at::Tensor a = random_of(dtype, {4, 1, 5}), b = random_of(dtype, {3, 1});
    const bool is_bool = dtype == at::kBool;
    const at::Tensor expected = is_bool ? at::add(a, b) : at::add(a, b, 3);
    KernelCall call("aten::add.out");
    call.tensor(a).tensor(b);
    if (is_bool)
      call.scalar(true);
    else
      call.scalar(3);
    call.out_like(expected).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
    expect_matches(call.out(), expected);
  }
}

TEST(BinaryOps, MulEveryDtype) {
  at::manual_seed(1);
  for (at::ScalarType dtype : kAllTypes) {
    const at::Tensor a = random_of(dtype, {2, 3, 4}), b = random_of(dtype, {2, 3, 4});
    const at::Tensor expected = at::mul(a, b);
    KernelCall call("aten::mul.out");
    call.tensor(a).tensor(b).out_like(expected).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
    expect_matches(call.out(), expected);
  }
}

TEST(BinaryOps, MixedDtypesPromoteLikeATen) {
  at::manual_seed(2);
  for (at::ScalarType x : kAllTypes) {
    for (at::ScalarType y : kAllTypes) {
      const at::Tensor a = random_of(x, {3, 4}), b = random_of(y, {4});
      const at::Tensor expected = at::mul(a, b);
      KernelCall call("aten::mul.out");
      call.tensor(a).tensor(b).out_like(expected).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok)
          << at::toString(x) << " * " << at::toString(y) << ": " << last_error_message();
      expect_matches(call.out(), expected);
    }
  }
}

TEST(BinaryOps, ZeroDimOperandsCountAsScalars) {
  // int8 tensor + int64 0-dim tensor stays int8; int tensor + float 0-dim tensor becomes float.
  const at::Tensor a = at::arange(6, at::kChar).reshape({2, 3});
  for (const at::Tensor& b :
       {at::scalar_tensor(100, at::kLong), at::scalar_tensor(0.5, at::kDouble)}) {
    const at::Tensor expected = at::add(a, b);
    KernelCall call("aten::add.out");
    call.tensor(a).tensor(b).scalar(1).out_like(expected).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(), expected);
  }
}

TEST(BinaryOps, EmptyNanInfAndIntegerWrap) {
  const at::Tensor e = at::empty({0, 3});
  KernelCall empty("aten::add.out");
  empty.tensor(e).tensor(at::ones({3})).scalar(1).out_like(at::add(e, at::ones({3}))).repeat_out();
  ASSERT_EQ(empty.run(), Error::Ok) << last_error_message();
  expect_matches(empty.out(), at::add(e, at::ones({3})));

  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const at::Tensor a = at::tensor({inf, -inf, nan, 1.0f, 0.0f});
  const at::Tensor b = at::tensor({-inf, -inf, 1.0f, nan, -0.0f});
  const at::Tensor expected = at::mul(a, b);
  KernelCall special("aten::mul.out");
  special.tensor(a).tensor(b).out_like(expected).repeat_out();
  ASSERT_EQ(special.run(), Error::Ok) << last_error_message();
  expect_matches(special.out(), expected);

  const at::Tensor big = at::full({2}, std::numeric_limits<int64_t>::max(), at::kLong);
  const at::Tensor wrapped = at::add(big, big, 3);
  KernelCall wrap("aten::add.out");
  wrap.tensor(big).tensor(big).scalar(3).out_like(wrapped).repeat_out();
  ASSERT_EQ(wrap.run(), Error::Ok) << last_error_message();
  expect_matches(wrap.out(), wrapped);
}

TEST(BinaryOps, ChannelsLastOperands) {
  at::manual_seed(3);
  const at::Tensor a = at::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor b = at::randn({2, 3, 4, 5});
  const at::Tensor expected = at::add(a, b, 2);
  KernelCall call("aten::add.out");
  call.tensor(a).tensor(b).scalar(2).out_like(expected.contiguous()).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), expected);
}

TEST(BinaryOps, DynamicOutIsResizedStaticOutOfWrongShapeIsRefused) {
  const at::Tensor a = at::randn({2, 3}), b = at::randn({3});
  KernelCall dynamic("aten::add.out");
  dynamic.tensor(a).tensor(b).scalar(1).out(at::kFloat, {4, 4}, /*dynamic=*/true).repeat_out();
  ASSERT_EQ(dynamic.run(), Error::Ok) << last_error_message();
  expect_matches(dynamic.out(), at::add(a, b));

  KernelCall wrong("aten::add.out");
  wrong.tensor(a).tensor(b).scalar(1).out(at::kFloat, {3, 2}, /*dynamic=*/false).repeat_out();
  EXPECT_NE(wrong.run(), Error::Ok);
}

TEST(BinaryOps, RefusesWhatATenRefuses) {
  // float result into an int out; float alpha with integer tensors; shapes that do not broadcast.
  const at::Tensor f = at::randn({3}), i = at::arange(3, at::kInt);
  KernelCall to_int("aten::add.out");
  to_int.tensor(f).tensor(f).scalar(1).out(at::kInt, {3}, false).repeat_out();
  EXPECT_EQ(to_int.run(), Error::InvalidArgument);
  KernelCall float_alpha("aten::add.out");
  float_alpha.tensor(i).tensor(i).scalar(0.5).out(at::kInt, {3}, false).repeat_out();
  EXPECT_EQ(float_alpha.run(), Error::InvalidArgument);
  KernelCall shapes("aten::mul.out");
  shapes.tensor(at::randn({2, 3}))
      .tensor(at::randn({4}))
      .out(at::kFloat, {2, 3}, false)
      .repeat_out();
  EXPECT_EQ(shapes.run(), Error::InvalidArgument);
}

}  // namespace
}  // namespace ember::testing
