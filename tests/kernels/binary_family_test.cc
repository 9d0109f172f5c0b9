// Conformance of the binary family (arithmetic, division modes, remainders, pow, min/max, bitwise,
// logical, comparisons, where) with ATen: a dtype sweep per op and overload, mixed dtypes, Scalar
// operands, integer division by zero, broadcasting and outs.
#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

using BinaryFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

const at::ScalarType kTypes[] = {at::kBool, at::kByte, at::kChar,  at::kShort,  at::kInt,
                                 at::kLong, at::kHalf, at::kFloat, at::kDouble, at::kBFloat16};

// Sweep case for a (self, other, out, out) kernel; `divisor` avoids zeros in `other`.
void add_binary_case(const std::string& kernel, BinaryFn aten, bool divisor = false) {
  add_sweep_case(kernel, [=](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4, 5});
    const at::Tensor b = divisor ? sweep_nonzero(dtype, {4, 1}) : sweep_input(dtype, {4, 1});
    return sweep_run(
        kernel, [&] { return std::vector<at::Tensor>{aten(a, b)}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b); }, {dtype}, a.sizes(), why);
  });
}

// Sweep case for a (self, Scalar other, out, out) kernel with an int scalar (floats: 2.5).
void add_scalar_case(const std::string& kernel,
                     std::function<at::Tensor(const at::Tensor&, const at::Scalar&)> aten) {
  add_sweep_case(kernel, [=](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4});
    const bool fl = at::isFloatingType(dtype);
    return sweep_run(
        kernel, [&] { return std::vector<at::Tensor>{fl ? aten(a, 2.5) : aten(a, int64_t{3})}; },
        [&](KernelCall& c) {
          c.tensor(a);
          if (fl)
            c.scalar(2.5);
          else
            c.scalar(int64_t{3});
        },
        {dtype}, a.sizes(), why);
  });
}

const bool kBinaryCases = [] {
  add_sweep_case("aten::add.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4}), b = sweep_input(dtype, {4});
    const bool is_bool = dtype == at::kBool;
    return sweep_run(
        "aten::add.out", [&] { return std::vector{is_bool ? at::add(a, b) : at::add(a, b, 2)}; },
        [&](KernelCall& c) {
          c.tensor(a).tensor(b);
          if (is_bool)
            c.scalar(true);
          else
            c.scalar(2);
        },
        {dtype}, a.sizes(), why);
  });
  add_sweep_case("aten::sub.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4}), b = sweep_input(dtype, {4});
    return sweep_run(
        "aten::sub.out", [&] { return std::vector{at::sub(a, b, 2)}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b).scalar(2); }, {dtype}, a.sizes(), why);
  });
  for (const char* op : {"add", "sub"}) {
    const std::string name = op;
    add_sweep_case("aten::" + name + ".Scalar_out", [=](at::ScalarType dtype, std::string* why) {
      const at::Tensor a = sweep_input(dtype, {3, 4});
      auto f = [&](const at::Tensor& x) {
        return name == "add" ? at::add(x, 3, 1) : at::sub(x, 3, 1);
      };
      return sweep_run(
          "aten::" + name + ".Scalar_out", [&] { return std::vector{f(a)}; },
          [&](KernelCall& c) { c.tensor(a).scalar(3).scalar(1); }, {dtype}, a.sizes(), why);
    });
  }
  add_binary_case("aten::mul.out", [](auto& a, auto& b) { return at::mul(a, b); });
  add_binary_case("aten::div.out", [](auto& a, auto& b) { return at::div(a, b); });
  add_binary_case(
      "aten::remainder.Tensor_out", [](auto& a, auto& b) { return at::remainder(a, b); }, true);
  add_binary_case(
      "aten::fmod.Tensor_out", [](auto& a, auto& b) { return at::fmod(a, b); }, true);
  add_binary_case("aten::maximum.out", [](auto& a, auto& b) { return at::maximum(a, b); });
  add_binary_case("aten::minimum.out", [](auto& a, auto& b) { return at::minimum(a, b); });
  // float16: libtorch 1.13's CPU atan2 may lack it (PyTorch 2 has it); compared widened.
  add_sweep_case("aten::atan2.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4}), b = sweep_input(dtype, {4});
    return sweep_run_as(
        "aten::atan2.out", dtype,
        [&](at::ScalarType t) { return std::vector<at::Tensor>{at::atan2(a.to(t), b.to(t))}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b); }, why);
  });
  add_binary_case("aten::bitwise_and.Tensor_out",
                  [](auto& a, auto& b) { return at::bitwise_and(a, b); });
  add_binary_case("aten::bitwise_or.Tensor_out",
                  [](auto& a, auto& b) { return at::bitwise_or(a, b); });
  add_binary_case("aten::bitwise_xor.Tensor_out",
                  [](auto& a, auto& b) { return at::bitwise_xor(a, b); });
  add_binary_case("aten::logical_and.out", [](auto& a, auto& b) { return at::logical_and(a, b); });
  add_binary_case("aten::logical_or.out", [](auto& a, auto& b) { return at::logical_or(a, b); });
  add_binary_case("aten::logical_xor.out", [](auto& a, auto& b) { return at::logical_xor(a, b); });
  add_binary_case("aten::eq.Tensor_out", [](auto& a, auto& b) { return at::eq(a, b); });
  add_binary_case("aten::ne.Tensor_out", [](auto& a, auto& b) { return at::ne(a, b); });
  add_binary_case("aten::lt.Tensor_out", [](auto& a, auto& b) { return at::lt(a, b); });
  add_binary_case("aten::le.Tensor_out", [](auto& a, auto& b) { return at::le(a, b); });
  add_binary_case("aten::gt.Tensor_out", [](auto& a, auto& b) { return at::gt(a, b); });
  add_binary_case("aten::ge.Tensor_out", [](auto& a, auto& b) { return at::ge(a, b); });
  add_sweep_case("aten::pow.Tensor_Tensor_out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4});
    // Small non-negative exponents keep integer results meaningful.
    const at::Tensor b = dtype == at::kBool          ? sweep_input(dtype, {4})
                         : at::isFloatingType(dtype) ? sweep_input(dtype, {4}, false)
                                                     : at::randint(0, 5, {4}).to(dtype);
    return sweep_run(
        "aten::pow.Tensor_Tensor_out", [&] { return std::vector{at::pow(a, b)}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b); }, {dtype}, a.sizes(), why);
  });
  add_sweep_case("aten::div.out_mode", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4}), b = sweep_nonzero(dtype, {4});
    return sweep_run(
        "aten::div.out_mode", [&] { return std::vector{at::div(a, b, "floor")}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b).string("floor"); }, {dtype}, a.sizes(), why);
  });
  add_sweep_case("aten::div.out_mode", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {3, 4}), b = sweep_nonzero(dtype, {4});
    return sweep_run(
        "aten::div.out_mode", [&] { return std::vector{at::div(a, b, "trunc")}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b).string("trunc"); }, {dtype}, a.sizes(), why);
  });
  add_sweep_case("aten::where.self_out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor cond = sweep_input(at::kBool, {3, 1});
    const at::Tensor a = sweep_input(dtype, {3, 4}), b = sweep_input(dtype, {4});
    return sweep_run(
        "aten::where.self_out", [&] { return std::vector{at::where(cond, a, b)}; },
        [&](KernelCall& c) { c.tensor(cond).tensor(a).tensor(b); }, {dtype}, a.sizes(), why);
  });
  add_scalar_case("aten::mul.Scalar_out", [](auto& a, auto& s) { return at::mul(a, s); });
  add_scalar_case("aten::div.Scalar_out", [](auto& a, auto& s) { return at::div(a, s); });
  add_scalar_case("aten::remainder.Scalar_out",
                  [](auto& a, auto& s) { return at::remainder(a, s); });
  add_scalar_case("aten::fmod.Scalar_out", [](auto& a, auto& s) { return at::fmod(a, s); });
  add_scalar_case("aten::pow.Tensor_Scalar_out", [](auto& a, auto& s) { return at::pow(a, s); });
  add_scalar_case("aten::bitwise_and.Scalar_out",
                  [](auto& a, auto& s) { return at::bitwise_and(a, s); });
  add_scalar_case("aten::bitwise_or.Scalar_out",
                  [](auto& a, auto& s) { return at::bitwise_or(a, s); });
  add_scalar_case("aten::bitwise_xor.Scalar_out",
                  [](auto& a, auto& s) { return at::bitwise_xor(a, s); });
  add_scalar_case("aten::eq.Scalar_out", [](auto& a, auto& s) { return at::eq(a, s); });
  add_scalar_case("aten::ne.Scalar_out", [](auto& a, auto& s) { return at::ne(a, s); });
  add_scalar_case("aten::lt.Scalar_out", [](auto& a, auto& s) { return at::lt(a, s); });
  add_scalar_case("aten::le.Scalar_out", [](auto& a, auto& s) { return at::le(a, s); });
  add_scalar_case("aten::gt.Scalar_out", [](auto& a, auto& s) { return at::gt(a, s); });
  add_scalar_case("aten::ge.Scalar_out", [](auto& a, auto& s) { return at::ge(a, s); });
  return true;
}();

// Runs kernel(a, b) with an out like `expected` and compares.
void check_binary(const std::string& kernel, const at::Tensor& a, const at::Tensor& b,
                  const at::Tensor& expected) {
  KernelCall call(kernel);
  call.tensor(a).tensor(b).out_like(expected).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << kernel << ": " << last_error_message();
  expect_matches(call.out(), expected);
}

TEST(BinaryFamily, MixedDtypesPromoteForEveryKindOfOp) {
  at::manual_seed(11);
  for (at::ScalarType x : kTypes) {
    for (at::ScalarType y : kTypes) {
      const at::Tensor a = sweep_input(x, {2, 3}, false), b = sweep_nonzero(y, {3});
      SCOPED_TRACE(std::string(at::toString(x)) + " op " + at::toString(y));
      check_binary("aten::div.out", a, b, at::div(a, b));
      check_binary("aten::lt.Tensor_out", a, b, at::lt(a, b));
      check_binary("aten::maximum.out", a, b, at::maximum(a, b));
      check_binary("aten::logical_xor.out", a, b, at::logical_xor(a, b));
      if (x != at::kBool || y != at::kBool) {
        check_binary("aten::remainder.Tensor_out", a, b, at::remainder(a, b));
      }
    }
  }
}

TEST(BinaryFamily, ScalarOperandsJoinPromotionAsNumbers) {
  const at::Tensor i8 = at::arange(-4, 4, at::kChar);
  const at::Tensor h = at::randn({5}).to(at::kHalf);
  // int8 tensor * int scalar stays int8 (wrapping), * float scalar becomes float32.
  for (const at::Scalar& s : {at::Scalar(int64_t{100}), at::Scalar(0.75), at::Scalar(true)}) {
    const at::Tensor expected = at::mul(i8, s);
    KernelCall call("aten::mul.Scalar_out");
    call.tensor(i8);
    if (s.isFloatingPoint())
      call.scalar(s.toDouble());
    else if (s.isBoolean())
      call.scalar(s.toBool());
    else
      call.scalar(s.toLong());
    call.out_like(expected).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(), expected);
  }
  const at::Tensor hexp = at::div(h, 3);
  KernelCall hdiv("aten::div.Scalar_out");
  hdiv.tensor(h).scalar(3).out_like(hexp).repeat_out();
  ASSERT_EQ(hdiv.run(), Error::Ok) << last_error_message();
  expect_matches(hdiv.out(), hexp);
  // Scalar self: remainder.Scalar_Tensor_out, pow.Scalar_out, bitwise_or.Scalar_Tensor_out.
  const at::Tensor d = at::tensor({1, 2, -3, 5});
  const at::Tensor r = at::remainder(7, d);
  KernelCall rem("aten::remainder.Scalar_Tensor_out");
  rem.scalar(7).tensor(d).out_like(r).repeat_out();
  ASSERT_EQ(rem.run(), Error::Ok) << last_error_message();
  expect_matches(rem.out(), r);
  const at::Tensor p = at::pow(2.5, d);
  KernelCall pw("aten::pow.Scalar_out");
  pw.scalar(2.5).tensor(d).out_like(p).repeat_out();
  ASSERT_EQ(pw.run(), Error::Ok) << last_error_message();
  expect_matches(pw.out(), p);
  const at::Tensor bo = at::bitwise_or(at::Scalar(12), d);
  KernelCall bor("aten::bitwise_or.Scalar_Tensor_out");
  bor.scalar(12).tensor(d).out_like(bo).repeat_out();
  ASSERT_EQ(bor.run(), Error::Ok) << last_error_message();
  expect_matches(bor.out(), bo);
}

TEST(BinaryFamily, DivisionModesAndSignsLikePython) {
  const at::Tensor a = at::tensor({7, -7, 7, -7, 0, 6}), b = at::tensor({2, 2, -2, -2, 3, -3});
  for (const char* mode : {"floor", "trunc"}) {
    const at::Tensor expected = at::div(a, b, mode);
    KernelCall call("aten::div.out_mode");
    call.tensor(a).tensor(b).string(mode).out_like(expected).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(), expected);
    const at::Tensor af = a.to(at::kFloat) + 0.5, bf = b.to(at::kFloat);
    const at::Tensor fexpected = at::div(af, bf, mode);
    KernelCall fcall("aten::div.out_mode");
    fcall.tensor(af).tensor(bf).string(mode).out_like(fexpected).repeat_out();
    ASSERT_EQ(fcall.run(), Error::Ok) << last_error_message();
    expect_matches(fcall.out(), fexpected);
  }
  KernelCall none("aten::div.out_mode");
  none.tensor(a).tensor(b).none().out_like(at::div(a, b)).repeat_out();
  ASSERT_EQ(none.run(), Error::Ok) << last_error_message();
  expect_matches(none.out(), at::div(a, b));
  check_binary("aten::remainder.Tensor_out", a, b, at::remainder(a, b));
  check_binary("aten::fmod.Tensor_out", a, b, at::fmod(a, b));
  // Float division by zero gives inf/nan; the integer minimum divided by -1 wraps.
  const at::Tensor fz = at::tensor({1.0f, -1.0f, 0.0f}), z = at::zeros({3});
  check_binary("aten::div.out", fz, z, at::div(fz, z));
  check_binary("aten::remainder.Tensor_out", fz, z, at::remainder(fz, z));
  // ATen itself traps (SIGFPE) on the integer minimum % -1; Ember gives the exact answer, 0.
  const at::Tensor mn = at::tensor({std::numeric_limits<int64_t>::min()}), m1 = at::tensor({-1L});
  check_binary("aten::remainder.Tensor_out", mn, m1, at::zeros({1}, at::kLong));
}

// Where two values compare equal (-0.0 and 0.0), ATen's maximum, minimum, clamp, hardtanh and
// relu keep the first operand (the input), so a -0.0 input stays -0.0; atan2 and division then
// tell the signs apart (found by the fuzzer: atan2(relu(-0.0), relu(-0.0)) is -pi in eager).
TEST(BinaryFamily, EqualZerosKeepTheFirstOperandLikeATen) {
  const at::Tensor z = at::tensor({-0.0f, 0.0f, -0.0f, 0.0f}),
                   w = at::tensor({0.0f, -0.0f, -0.0f, 0.0f});
  auto expect_signs = [](KernelCall& call, const at::Tensor& want, const char* what) {
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    EXPECT_TRUE(at::equal(at::signbit(aten_view(call.out())), at::signbit(want)))
        << what << ": got " << aten_view(call.out()) << ", ATen " << want;
  };
  for (const bool max : {true, false}) {
    const at::Tensor want = max ? at::maximum(z, w) : at::minimum(z, w);
    KernelCall call(max ? "aten::maximum.out" : "aten::minimum.out");
    call.tensor(z).tensor(w).out_like(want).repeat_out();
    expect_signs(call, want, max ? "maximum" : "minimum");
  }
  {
    const at::Tensor want = at::relu(z);
    KernelCall call("aten::relu.out");
    call.tensor(z).out_like(want).repeat_out();
    expect_signs(call, want, "relu");
  }
  {
    const at::Tensor want = at::clamp(z, 0.0, 6.0);
    KernelCall call("aten::clamp.out");
    call.tensor(z).scalar(0.0).scalar(6.0).out_like(want).repeat_out();
    expect_signs(call, want, "clamp");
  }
  {
    const at::Tensor want = at::clamp(z, w, at::full_like(z, 6.0));
    KernelCall call("aten::clamp.Tensor_out");
    call.tensor(z).tensor(w).tensor(at::full_like(z, 6.0)).out_like(want).repeat_out();
    expect_signs(call, want, "clamp with tensor bounds");
  }
  {
    const at::Tensor want = at::hardtanh(z, 0.0, 6.0);
    KernelCall call("aten::hardtanh.out");
    call.tensor(z).scalar(0.0).scalar(6.0).out_like(want).repeat_out();
    expect_signs(call, want, "hardtanh");
  }
}

TEST(BinaryFamily, RefusesWhatATenRefuses) {
  const at::Tensor i = at::tensor({4, 5, 6}), zero = at::tensor({1, 0, 1});
  // Integer division (floor/trunc), remainder and fmod by zero raise in ATen.
  for (const char* mode : {"floor", "trunc"}) {
    EXPECT_ANY_THROW(at::div(i, zero, mode));
    KernelCall call("aten::div.out_mode");
    call.tensor(i).tensor(zero).string(mode).out_like(i).repeat_out();
    EXPECT_EQ(call.run(), Error::InvalidArgument) << mode;
  }
  KernelCall rem("aten::remainder.Scalar_out");
  rem.tensor(i).scalar(0).out_like(i).repeat_out();
  EXPECT_EQ(rem.run(), Error::InvalidArgument);
  KernelCall mode("aten::div.out_mode");
  mode.tensor(i).tensor(i).string("round").out_like(i).repeat_out();
  EXPECT_EQ(mode.run(), Error::InvalidArgument);
  // Bitwise ops on floats; sub with bool; integer tensor to a negative integer power.
  EXPECT_ANY_THROW(at::bitwise_and(at::ones({2}), at::ones({2})));
  KernelCall band("aten::bitwise_and.Tensor_out");
  band.tensor(at::ones({2})).tensor(at::ones({2})).out(at::kFloat, {2}, false).repeat_out();
  EXPECT_EQ(band.run(), Error::InvalidArgument);
  const at::Tensor b = at::tensor({1, 0}).to(at::kBool);
  EXPECT_ANY_THROW(at::sub(b, b));
  KernelCall sub("aten::sub.out");
  sub.tensor(b).tensor(b).scalar(1).out_like(b).repeat_out();
  EXPECT_EQ(sub.run(), Error::InvalidArgument);
  EXPECT_ANY_THROW(at::pow(i, -1));
  KernelCall pw("aten::pow.Tensor_Scalar_out");
  pw.tensor(i).scalar(-1).out_like(i).repeat_out();
  EXPECT_EQ(pw.run(), Error::InvalidArgument);
  // A comparison into a float out is fine (ATen casts), a float result into an int out is not.
  const at::Tensor f = at::randn({3});
  KernelCall cmp("aten::gt.Tensor_out");
  cmp.tensor(f).tensor(f).out(at::kFloat, {3}, false).repeat_out();
  EXPECT_EQ(cmp.run(), Error::Ok) << last_error_message();
  KernelCall div("aten::div.out");
  div.tensor(i).tensor(i).out(at::kLong, {3}, false).repeat_out();
  EXPECT_EQ(div.run(), Error::InvalidArgument);
  // where needs a bool condition.
  KernelCall where("aten::where.self_out");
  where.tensor(at::ones({3}, at::kFloat)).tensor(f).tensor(f).out_like(f).repeat_out();
  EXPECT_EQ(where.run(), Error::InvalidArgument);
}

TEST(BinaryFamily, LargeBroadcastSplitsOverThreadsAndMatches) {
  at::manual_seed(12);
  const at::Tensor a = at::randn({64, 1, 2048}), b = at::randn({3, 1}).to(at::kDouble);
  check_binary("aten::atan2.out", a, b, at::atan2(a, b));
  const at::Tensor cl = at::randn({8, 16, 32, 32}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor c = at::randn({8, 16, 32, 32});
  check_binary("aten::ge.Tensor_out", cl, c, at::ge(cl, c));
  check_binary("aten::minimum.out", cl, c, at::minimum(cl, c));
}

// pow with a Scalar exponent: ATen computes 2, 3, -2, 0.5, -0.5 and -1 with plain arithmetic for
// float and double, so Ember must give the same bits (special values and signs included); other
// exponents, half tensors and an int 2 on an int tensor go through pow as before.
TEST(BinaryFamily, PowScalarShortcutsMatchAtenExactly) {
  at::manual_seed(12);
  const std::vector<double> exponents = {2.0, 3.0, -2.0, 0.5, -0.5, -1.0, 1.5, 4.0};
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kHalf}) {
    at::Tensor a = at::randn({4, 37}, at::kDouble) * 3;
    a.index_put_(
        {0, at::indexing::Slice(0, 8)},
        at::tensor({0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-30, 1e30}, at::kDouble));
    a = a.to(dtype);
    for (double e : exponents) {
      SCOPED_TRACE(std::string(at::toString(dtype)) + " ** " + std::to_string(e));
      const at::Tensor expected = at::pow(a, e);
      KernelCall call("aten::pow.Tensor_Scalar_out");
      call.tensor(a).scalar(e).out_like(expected).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      // pow itself is ATen's vectorized one there (a last-bit difference is allowed as before).
      const bool shortcut = e != 1.5 && e != 4.0 && dtype != at::kHalf;
      expect_matches(call.out(), expected,
                     shortcut ? std::optional<Tolerance>(Tolerance{0, 0}) : std::nullopt);
    }
  }
  const at::Tensor i = at::arange(-5, 6, at::kInt);
  const at::Tensor expected = at::pow(i, 2);
  KernelCall call("aten::pow.Tensor_Scalar_out");
  call.tensor(i).scalar(int64_t{2}).out_like(expected).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), expected);
}

}  // namespace
}  // namespace ember::testing
