// Conformance of the unary family (math, rounding, predicates, activations, clamp, copies) with
// ATen: a dtype sweep per op, plus edge cases (0-dim, empty, channels-last, dynamic and static
// outs) and contract C28 (ELU with scale and input_scale).
#include <cmath>
#include <set>

#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

using UnaryFn = std::function<at::Tensor(const at::Tensor&)>;

// A sweep case for a kernel whose arguments are (self, <extra>, out, out). With `widened`, a
// float16 or bfloat16 input that libtorch 1.13's CPU kernel refuses (PyTorch 2 has it) is compared
// with ATen's float32 result rounded to the dtype.
void add_unary_case(const std::string& kernel, UnaryFn aten,
                    std::function<void(KernelCall&)> extra = nullptr, bool widened = false) {
  add_sweep_case(kernel, [=](at::ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 5});
    const auto push = [&](KernelCall& c) {
      c.tensor(x);
      if (extra) extra(c);
    };
    if (widened) {
      return sweep_run_as(
          kernel, dtype, [&](at::ScalarType t) { return std::vector<at::Tensor>{aten(x.to(t))}; },
          push, why);
    }
    return sweep_run(
        kernel, [&] { return std::vector<at::Tensor>{aten(x)}; }, push, {dtype}, x.sizes(), why);
  });
}

const bool kUnaryCases = [] {
  const std::vector<std::pair<const char*, UnaryFn>> plain = {
      {"abs", [](const at::Tensor& x) { return at::abs(x); }},
      {"neg", [](const at::Tensor& x) { return at::neg(x); }},
      {"exp", [](const at::Tensor& x) { return at::exp(x); }},
      {"expm1", [](const at::Tensor& x) { return at::expm1(x); }},
      {"log", [](const at::Tensor& x) { return at::log(x); }},
      {"log1p", [](const at::Tensor& x) { return at::log1p(x); }},
      {"log2", [](const at::Tensor& x) { return at::log2(x); }},
      {"sqrt", [](const at::Tensor& x) { return at::sqrt(x); }},
      {"rsqrt", [](const at::Tensor& x) { return at::rsqrt(x); }},
      {"sin", [](const at::Tensor& x) { return at::sin(x); }},
      {"cos", [](const at::Tensor& x) { return at::cos(x); }},
      {"tan", [](const at::Tensor& x) { return at::tan(x); }},
      {"tanh", [](const at::Tensor& x) { return at::tanh(x); }},
      {"sigmoid", [](const at::Tensor& x) { return at::sigmoid(x); }},
      {"erf", [](const at::Tensor& x) { return at::erf(x); }},
      {"floor", [](const at::Tensor& x) { return at::floor(x); }},
      {"ceil", [](const at::Tensor& x) { return at::ceil(x); }},
      {"round", [](const at::Tensor& x) { return at::round(x); }},
      {"trunc", [](const at::Tensor& x) { return at::trunc(x); }},
      {"sign", [](const at::Tensor& x) { return at::sign(x); }},
      {"reciprocal", [](const at::Tensor& x) { return at::reciprocal(x); }},
      {"logical_not", [](const at::Tensor& x) { return at::logical_not(x); }},
      {"bitwise_not", [](const at::Tensor& x) { return at::bitwise_not(x); }},
      {"isnan", [](const at::Tensor& x) { return at::isnan(x); }},
      {"isinf", [](const at::Tensor& x) { return at::isinf(x); }},
      {"relu", [](const at::Tensor& x) { return at::relu(x); }},
      {"silu", [](const at::Tensor& x) { return at::silu(x); }},
      {"hardswish", [](const at::Tensor& x) { return at::hardswish(x); }},
      {"hardsigmoid", [](const at::Tensor& x) { return at::hardsigmoid(x); }},
  };
  // Ops whose float16 kernel PyTorch 2 has and libtorch 1.13 may lack.
  const std::set<std::string> widened = {
      "exp",  "expm1", "log",   "log1p", "log2",    "sqrt",      "rsqrt",
      "sin",  "cos",   "tan",   "tanh",  "sigmoid", "erf",       "floor",
      "ceil", "round", "trunc", "relu",  "silu",    "hardswish", "hardsigmoid"};
  for (const auto& [name, fn] : plain) {
    add_unary_case(std::string("aten::") + name + ".out", fn, nullptr, widened.count(name) > 0);
  }
  add_unary_case(
      "aten::round.decimals_out", [](const at::Tensor& x) { return at::round(x, 2); },
      [](KernelCall& c) { c.scalar(int64_t{2}); }, /*widened=*/true);
  add_unary_case(
      "aten::gelu.out", [](const at::Tensor& x) { return at::gelu(x); },
      [](KernelCall& c) { c.string("none"); }, /*widened=*/true);
  add_unary_case(
      "aten::gelu.out", [](const at::Tensor& x) { return at::gelu(x, "tanh"); },
      [](KernelCall& c) { c.string("tanh"); }, /*widened=*/true);
  add_unary_case(
      "aten::hardtanh.out", [](const at::Tensor& x) { return at::hardtanh(x, -2, 3); },
      [](KernelCall& c) { c.scalar(-2).scalar(3); }, /*widened=*/true);
  add_unary_case(
      "aten::leaky_relu.out", [](const at::Tensor& x) { return at::leaky_relu(x, 0.2); },
      [](KernelCall& c) { c.scalar(0.2); }, /*widened=*/true);
  add_unary_case(
      "aten::elu.out", [](const at::Tensor& x) { return at::elu(x, 0.5, 2, 3); },
      [](KernelCall& c) { c.scalar(0.5).scalar(2.0).scalar(3.0); }, /*widened=*/true);
  // float16: libtorch 1.13's CPU clamp lacks it (PyTorch 2 has it); compared widened.
  add_sweep_case("aten::clamp.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 5});
    return sweep_run_as(
        "aten::clamp.out", dtype,
        [&](at::ScalarType t) { return std::vector<at::Tensor>{at::clamp(x.to(t), -3, 50)}; },
        [&](KernelCall& c) { c.tensor(x).scalar(-3).scalar(50); }, why);
  });
  add_unary_case(
      "aten::clone.out", [](const at::Tensor& x) { return x.clone(); },
      [](KernelCall& c) { c.none(); });
  add_unary_case("aten::alias_copy.out", [](const at::Tensor& x) { return at::alias_copy(x); });
  // _to_copy: every source dtype into float32 and into int32 (finite values: float -> int of NaN is
  // undefined in ATen).
  for (at::ScalarType to : {at::kFloat, at::kInt, at::kBool, at::kHalf}) {
    add_sweep_case("aten::_to_copy.out", [=](at::ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {3, 4, 5}, /*specials=*/false);
      return sweep_run(
          "aten::_to_copy.out", [&] { return std::vector<at::Tensor>{x.to(to)}; },
          [&](KernelCall& c) { c.tensor(x).scalar(false).none(); }, {to}, x.sizes(), why);
    });
  }
  add_sweep_case("aten::clamp.Tensor_out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 5});
    const at::Tensor lo = sweep_input(dtype, {4, 1}, false), hi = sweep_input(dtype, {5}, false);
    return sweep_run_as(
        "aten::clamp.Tensor_out", dtype,
        [&](at::ScalarType t) {
          return std::vector<at::Tensor>{at::clamp(x.to(t), lo.to(t), hi.to(t))};
        },
        [&](KernelCall& c) { c.tensor(x).tensor(lo).tensor(hi); }, why);
  });
  return true;
}();

// Runs a (self, out, out) kernel on x with an out like `expected` and compares.
void check_unary(const std::string& kernel, const at::Tensor& x, const at::Tensor& expected) {
  KernelCall call(kernel);
  call.tensor(x).out_like(expected).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << kernel << ": " << last_error_message();
  expect_matches(call.out(), expected);
}

TEST(UnaryOps, EluScaleAndInputScaleContractC28) {
  // elu([-1, 0, 2], alpha=0.5, scale=2, input_scale=3) = [exp(-3) - 1, 0, 4].
  const at::Tensor x = at::tensor({-1.0f, 0.0f, 2.0f});
  KernelCall call("aten::elu.out");
  call.tensor(x).scalar(0.5).scalar(2.0).scalar(3.0).out_like(x).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  const float* p = call.out().data<float>();
  EXPECT_NEAR(p[0], std::exp(-3.0) - 1.0, 1e-6);  // -0.9502129
  EXPECT_NEAR(p[0], -0.9502129, 1e-6);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_EQ(p[2], 4.0f);

  at::manual_seed(7);
  const at::Tensor y = at::randn({64}) * 3;
  // SELU: alpha ~ 1.6733, scale ~ 1.0507, input_scale 1.
  const double selu_alpha = 1.6732632423543772848170429916717;
  const double selu_scale = 1.0507009873554804934193349852946;
  KernelCall selu("aten::elu.out");
  selu.tensor(y).scalar(selu_alpha).scalar(selu_scale).scalar(1.0).out_like(y).repeat_out();
  ASSERT_EQ(selu.run(), Error::Ok) << last_error_message();
  expect_matches(selu.out(), at::selu(y));
  // CELU(2): scale 1, input_scale 1/2; celu(-1, 2) ~ -0.7869387.
  KernelCall celu("aten::elu.out");
  celu.tensor(y).scalar(2.0).scalar(1.0).scalar(0.5).out_like(y).repeat_out();
  ASSERT_EQ(celu.run(), Error::Ok) << last_error_message();
  expect_matches(celu.out(), at::celu(y, 2.0));
  KernelCall one("aten::elu.out");
  const at::Tensor m1 = at::tensor({-1.0f});
  one.tensor(m1).scalar(2.0).scalar(1.0).scalar(0.5).out_like(m1).repeat_out();
  ASSERT_EQ(one.run(), Error::Ok) << last_error_message();
  EXPECT_NEAR(one.out().data<float>()[0], -0.7869387, 1e-6);
  // Omitted arguments take the schema defaults (1, 1, 1): plain F.elu.
  KernelCall plain("aten::elu.out");
  plain.tensor(y).scalar(int64_t{1}).scalar(int64_t{1}).scalar(int64_t{1}).out_like(y).repeat_out();
  ASSERT_EQ(plain.run(), Error::Ok) << last_error_message();
  expect_matches(plain.out(), at::elu(y));
  // The parameters matter: plain ELU differs from SELU on the same input.
  EXPECT_FALSE(at::allclose(at::elu(y), at::selu(y)));
}

TEST(UnaryOps, ZeroDimEmptyAndChannelsLast) {
  check_unary("aten::exp.out", at::scalar_tensor(1.5), at::exp(at::scalar_tensor(1.5)));
  const at::Tensor e = at::empty({0, 4});
  check_unary("aten::sigmoid.out", e, at::sigmoid(e));
  at::manual_seed(3);
  const at::Tensor cl = at::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  check_unary("aten::tanh.out", cl, at::tanh(cl).contiguous());
  KernelCall cl_out("aten::tanh.out");  // channels-last in and out
  cl_out.tensor(cl).out_like_layout(at::tanh(cl)).repeat_out();
  ASSERT_EQ(cl_out.run(), Error::Ok) << last_error_message();
  expect_matches(cl_out.out(), at::tanh(cl));
  const at::Tensor ints = at::arange(-5, 5, at::kInt);
  check_unary("aten::sqrt.out", ints, at::sqrt(ints));  // integers compute in float32
}

TEST(UnaryOps, SpecialValuesAndIntegerEdges) {
  const float inf = INFINITY, nan = NAN;
  const at::Tensor x = at::tensor({nan, inf, -inf, 0.0f, -0.0f, 2.5f, -2.5f, 0.5f, 1.5f});
  for (const char* op : {"abs", "sign", "round", "floor", "relu", "sigmoid", "isnan", "isinf",
                         "logical_not", "reciprocal", "rsqrt", "log1p", "expm1", "neg"}) {
    const std::string kernel = std::string("aten::") + op + ".out";
    at::Tensor expected;
    if (std::string(op) == "abs") expected = at::abs(x);
    if (std::string(op) == "sign") expected = at::sign(x);
    if (std::string(op) == "round") expected = at::round(x);
    if (std::string(op) == "floor") expected = at::floor(x);
    if (std::string(op) == "relu") expected = at::relu(x);
    if (std::string(op) == "sigmoid") expected = at::sigmoid(x);
    if (std::string(op) == "isnan") expected = at::isnan(x);
    if (std::string(op) == "isinf") expected = at::isinf(x);
    if (std::string(op) == "logical_not") expected = at::logical_not(x);
    if (std::string(op) == "reciprocal") expected = at::reciprocal(x);
    if (std::string(op) == "rsqrt") expected = at::rsqrt(x);
    if (std::string(op) == "log1p") expected = at::log1p(x);
    if (std::string(op) == "expm1") expected = at::expm1(x);
    if (std::string(op) == "neg") expected = at::neg(x);
    check_unary(kernel, x, expected);
  }
  // Integer minimum: abs and neg wrap like ATen.
  const at::Tensor mins = at::tensor({std::numeric_limits<int64_t>::min(), int64_t{-3}});
  check_unary("aten::abs.out", mins, at::abs(mins));
  check_unary("aten::neg.out", mins, at::neg(mins));
  const at::Tensor b = at::tensor({1, 0}).to(at::kBool);
  check_unary("aten::bitwise_not.out", b, at::bitwise_not(b));
}

TEST(UnaryOps, DynamicOutResizedStaticWrongShapeRefusedWrongDtypeRefused) {
  const at::Tensor x = at::randn({2, 3});
  KernelCall dynamic("aten::exp.out");
  dynamic.tensor(x).out(at::kFloat, {4, 4}, /*dynamic=*/true).repeat_out();
  ASSERT_EQ(dynamic.run(), Error::Ok) << last_error_message();
  expect_matches(dynamic.out(), at::exp(x));
  KernelCall wrong("aten::exp.out");
  wrong.tensor(x).out(at::kFloat, {3, 2}, /*dynamic=*/false).repeat_out();
  EXPECT_NE(wrong.run(), Error::Ok);
  // A float result cannot go into an integer out (ATen: "result type Float can't be cast").
  KernelCall to_int("aten::exp.out");
  to_int.tensor(x).out(at::kInt, {2, 3}, false).repeat_out();
  EXPECT_EQ(to_int.run(), Error::InvalidArgument);
  // gelu's approximate must be 'none' or 'tanh'.
  KernelCall gelu("aten::gelu.out");
  gelu.tensor(x).string("erf").out_like(x).repeat_out();
  EXPECT_EQ(gelu.run(), Error::InvalidArgument);
  // clamp needs at least one bound.
  KernelCall clamp("aten::clamp.out");
  clamp.tensor(x).none().none().out_like(x).repeat_out();
  EXPECT_EQ(clamp.run(), Error::InvalidArgument);
}

TEST(UnaryOps, ClampBoundsLikeATen) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({4, 5}) * 3;
  // Only one bound; min above max gives max; integer tensor with float bounds promotes.
  const at::Tensor lo_only = at::clamp(x, -1.0);
  KernelCall a("aten::clamp.out");
  a.tensor(x).scalar(-1.0).none().out_like(lo_only).repeat_out();
  ASSERT_EQ(a.run(), Error::Ok) << last_error_message();
  expect_matches(a.out(), lo_only);
  const at::Tensor crossed = at::clamp(x, 2.0, -2.0);
  KernelCall b("aten::clamp.out");
  b.tensor(x).scalar(2.0).scalar(-2.0).out_like(crossed).repeat_out();
  ASSERT_EQ(b.run(), Error::Ok) << last_error_message();
  expect_matches(b.out(), crossed);
  const at::Tensor ints = at::arange(-5, 5, at::kInt);
  const at::Tensor promoted = at::clamp(ints, -2.5, 2.5);
  KernelCall c("aten::clamp.out");
  c.tensor(ints).scalar(-2.5).scalar(2.5).out_like(promoted).repeat_out();
  ASSERT_EQ(c.run(), Error::Ok) << last_error_message();
  expect_matches(c.out(), promoted);
  const at::Tensor hi = at::randn({5});
  const at::Tensor tensor_hi = at::clamp(x, c10::nullopt, hi);
  KernelCall d("aten::clamp.Tensor_out");
  d.tensor(x).none().tensor(hi).out_like(tensor_hi).repeat_out();
  ASSERT_EQ(d.run(), Error::Ok) << last_error_message();
  expect_matches(d.out(), tensor_hi);
}

TEST(UnaryOps, ToCopyConvertsAndChangesLayout) {
  at::manual_seed(6);
  const at::Tensor x = at::randn({2, 3, 4, 5}) * 100;
  const at::Tensor expected = x.to(at::kShort).contiguous(at::MemoryFormat::ChannelsLast);
  KernelCall call("aten::_to_copy.out");
  call.tensor(x).scalar(false).scalar(int64_t{2}).out_like_layout(expected).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), expected);
  EXPECT_EQ(call.out().dim_order()[1], 2);  // the out keeps its channels-last dim order
}

// Float to integer casts of values an integer type cannot hold (C++ leaves them undefined): what
// ATen gives on this CPU, for every integer width, from float and double. In-range values
// truncate toward zero.
TEST(UnaryOps, ToCopyOutOfRangeFloatToIntegerLikeATen) {
  const std::vector<double> values = {300.7, -129.5,       70000.25,      -40000.5,    3e9,
                                      -3e9,  5e9,          1e19,          -1e19,       1e30,
                                      -1e30, 0.75,         -0.75,         INFINITY,    -INFINITY,
                                      NAN,   2147483647.0, -2147483648.0, 4294967296.0};
  for (at::ScalarType from : {at::kFloat, at::kDouble}) {
    const at::Tensor x = at::tensor(values, at::kDouble).to(from);
    for (at::ScalarType to : {at::kInt, at::kLong, at::kShort, at::kChar, at::kByte}) {
      SCOPED_TRACE(std::string(at::toString(from)) + " -> " + at::toString(to));
      const at::Tensor expected = x.to(to);
      KernelCall call("aten::_to_copy.out");
      call.tensor(x).scalar(false).none().out_like(expected).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      expect_matches(call.out(), expected);
    }
  }
}

}  // namespace
}  // namespace ember::testing
