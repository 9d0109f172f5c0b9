// Conformance of mm, bmm, addmm, baddbmm and convolution (contract C29) with ATen.
#include "runtime/kernels/gemm/gemm.h"
#include "runtime/platform/cpu_isa.h"
#include "tests/kernels/aten_reference.h"
#include "tests/kernels/test_tensors.h"

namespace ember::testing {
namespace {

// Products of a few hundred terms round differently from ATen's BLAS. 16-bit floats are not
// compared here but with expect_rounded_once (aten_reference.h): check_matmul below.
Tolerance matmul_tolerance(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return {1e-4, 1e-4};
    case at::kDouble:
      return {1e-10, 1e-10};
    default:
      return {0, 0};
  }
}

bool is_16bit(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

// An operand of the reference: 16-bit floats upcast to float32 (rounded once, by check_matmul);
// `abs`: its absolute value, for the magnitude of the sums.
at::Tensor operand(const at::Tensor& t, bool abs) {
  const at::Tensor v = is_16bit(t.scalar_type()) ? t.to(at::kFloat) : t;
  return abs ? v.abs() : v;
}

// Checks `call` (already run) against `op` of ATen: op(a, b, self, alpha, beta) on the operands
// as they are (exact dtypes) or, for 16-bit floats, upcast to float32 and rounded once, within
// what float32 sums of `terms` products allow (the magnitude is op on the absolute values).
template <typename Op>
void check_matmul(const KernelCall& call, const Op& op, at::ScalarType dtype, int64_t terms) {
  if (!is_16bit(dtype)) {
    expect_matches(call.out(), op(false), matmul_tolerance(dtype));
    return;
  }
  expect_rounded_once(call.out(), op(false).to(dtype), op(true), terms);
}

std::vector<at::ScalarType> matmul_dtypes() {
  return {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kByte,
          at::kChar,  at::kShort,  at::kInt,  at::kLong};
}

TEST(Linalg, MmEveryDtypeAndShape) {
  at::manual_seed(0);
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1},      {3, 5, 7},       {17, 33, 65},
                                                      {96, 130, 200}, {200, 300, 150}, {0, 4, 3},
                                                      {4, 0, 3},      {4, 5, 0}};
  for (at::ScalarType dtype : matmul_dtypes()) {
    for (const auto& s : shapes) {
      const at::Tensor a = random_tensor(dtype, {s[0], s[1]}),
                       b = random_tensor(dtype, {s[1], s[2]});
      const auto op = [&](bool abs) { return at::mm(operand(a, abs), operand(b, abs)); };
      KernelCall call("aten::mm.out");
      call.tensor(a).tensor(b).out_like(op(false).to(dtype)).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
      SCOPED_TRACE(at::toString(dtype));
      check_matmul(call, op, dtype, s[1]);
    }
  }
}

TEST(Linalg, MmTransposedOperandsAndLargeThreaded) {
  at::manual_seed(1);
  // Dim order [1, 0]: the kernel reads through strides.
  const at::Tensor a = at::randn({300, 257}).t(), b = at::randn({515, 300}).t();
  const at::Tensor expected = at::mm(a, b);
  KernelCall call("aten::mm.out");
  call.tensor(a).tensor(b).out_like(expected).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), expected, matmul_tolerance(at::kFloat));
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const at::Tensor x = at::randn({513, 700}, dtype), y = at::randn({700, 1030}, dtype);
    KernelCall big("aten::mm.out");
    big.tensor(x).tensor(y).out_like(at::mm(x, y)).repeat_out();
    ASSERT_EQ(big.run(), Error::Ok) << last_error_message();
    expect_matches(big.out(), at::mm(x, y), matmul_tolerance(dtype));
  }
}

TEST(Linalg, BmmAddmmBaddbmm) {
  at::manual_seed(2);
  for (at::ScalarType dtype : matmul_dtypes()) {
    SCOPED_TRACE(at::toString(dtype));
    const bool fl = at::isFloatingType(dtype);
    const at::Tensor a = random_tensor(dtype, {5, 6, 7}), b = random_tensor(dtype, {5, 7, 9});
    const auto product = [&](bool abs) { return at::bmm(operand(a, abs), operand(b, abs)); };
    KernelCall bmm("aten::bmm.out");
    bmm.tensor(a).tensor(b).out_like(product(false).to(dtype)).repeat_out();
    ASSERT_EQ(bmm.run(), Error::Ok) << last_error_message();
    check_matmul(bmm, product, dtype, 7);

    const at::Tensor m1 = random_tensor(dtype, {6, 7}), m2 = random_tensor(dtype, {7, 9});
    for (const at::Tensor& self :
         {random_tensor(dtype, {9}), random_tensor(dtype, {6, 1}), random_tensor(dtype, {6, 9})}) {
      const auto op = [&](bool abs) {
        return fl ? at::addmm(operand(self, abs), operand(m1, abs), operand(m2, abs), 0.5, 2.0)
                  : at::addmm(self, m1, m2, 3, 2);
      };
      KernelCall call("aten::addmm.out");
      call.tensor(self).tensor(m1).tensor(m2);
      if (fl)
        call.scalar(0.5).scalar(2.0);
      else
        call.scalar(3).scalar(2);
      call.out_like(op(false).to(dtype)).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      check_matmul(call, op, dtype, 7 + 1);
    }
    const at::Tensor self3 = random_tensor(dtype, {1, 6, 9});
    const auto op = [&](bool abs) {
      return fl ? at::baddbmm(operand(self3, abs), operand(a, abs), operand(b, abs), 1.5,
                              abs ? 1.0 : -1.0)
                : at::baddbmm(self3, a, b, 2, -1);
    };
    KernelCall call("aten::baddbmm.out");
    call.tensor(self3).tensor(a).tensor(b);
    if (fl)
      call.scalar(1.5).scalar(-1.0);
    else
      call.scalar(2).scalar(-1);
    call.out_like(op(false).to(dtype)).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    check_matmul(call, op, dtype, 7 + 1);
  }
}

// linear (ExecuTorch's LLM programs call aten::linear.out): inputs of rank 1 to 4, with and without
// a bias (also a one-element one), a transposed 2-D input and weight (read through strides).
TEST(Linalg, Linear) {
  at::manual_seed(4);
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(at::toString(dtype));
    for (const std::vector<int64_t>& in_sizes :
         std::vector<std::vector<int64_t>>{{7}, {3, 7}, {2, 3, 7}, {2, 1, 3, 7}, {0, 7}}) {
      const at::Tensor x = random_tensor(dtype, in_sizes), w = random_tensor(dtype, {5, 7});
      for (const std::optional<at::Tensor>& bias :
           {std::optional<at::Tensor>(), std::optional<at::Tensor>(random_tensor(dtype, {5})),
            std::optional<at::Tensor>(random_tensor(dtype, {1}))}) {
        const auto op = [&](bool abs) {
          return bias ? at::linear(operand(x, abs), operand(w, abs), operand(*bias, abs))
                      : at::linear(operand(x, abs), operand(w, abs));
        };
        KernelCall call("aten::linear.out");
        call.tensor(x).tensor(w);
        if (bias) {
          call.tensor(*bias);
        } else {
          call.none();
        }
        call.out_like(op(false).to(dtype)).repeat_out();
        ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
        check_matmul(call, op, dtype, 7 + 1);
      }
    }
  }
  const at::Tensor x = at::randn({6, 9}).t(), w = at::randn({6, 4}).t(), b = at::randn({4});
  KernelCall call("aten::linear.out");
  call.tensor(x).tensor(w).tensor(b).out_like(at::linear(x, w, b)).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), at::linear(x, w, b), matmul_tolerance(at::kFloat));
  // A weight whose columns are not the input's features is refused.
  KernelCall bad("aten::linear.out");
  const at::Tensor wrong = at::randn({4, 5});
  bad.tensor(at::randn({2, 6})).tensor(wrong).none().out_like(at::zeros({2, 4})).repeat_out();
  EXPECT_EQ(bad.run(), Error::InvalidArgument);
}

TEST(Linalg, BetaZeroIgnoresNanInSelfAndManySmallBatches) {
  const at::Tensor self = at::full({3, 4}, NAN), a = at::randn({3, 5}), b = at::randn({5, 4});
  KernelCall call("aten::addmm.out");
  call.tensor(self).tensor(a).tensor(b).scalar(0.0).scalar(1.0).out_like(self).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), at::mm(a, b), matmul_tolerance(at::kFloat));

  const at::Tensor x = at::randn({4096, 8, 16}), y = at::randn({4096, 16, 12});
  KernelCall many("aten::bmm.out");
  many.tensor(x).tensor(y).out_like(at::bmm(x, y)).repeat_out();
  ASSERT_EQ(many.run(), Error::Ok) << last_error_message();
  expect_matches(many.out(), at::bmm(x, y), matmul_tolerance(at::kFloat));
}

// The sign of a sum of zero products follows ATen: sums over two or more elements, and bmm,
// start from +0.0. (mm over one element is the product itself in PyTorch 2, -0.0 for 0 * -x, and
// +0.0 in libtorch 1.13, this suite's reference: the fuzzer's regression
// all_wrong_mm_one_element.py checks it against the pinned torch.) Float sums that overflow in the
// GEMM's order (values near float32's maximum) are summed again in double: the reference is ATen in
// float64, rounded once.
TEST(Linalg, ZeroSignsAndOverflowedSumsLikeATen) {
  for (int64_t k : {1, 2, 7}) {
    const at::Tensor a = at::zeros({3, k}), b = -at::ones({k, 4});
    const at::Tensor want = at::mm(a, b);
    KernelCall call("aten::mm.out");
    call.tensor(a).tensor(b).out_like(want).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    if (k > 1) {
      EXPECT_TRUE(at::equal(at::signbit(aten_view(call.out())), at::signbit(want))) << "K = " << k;
    }
    KernelCall batched("aten::bmm.out");
    const at::Tensor want3 = at::bmm(a.unsqueeze(0), b.unsqueeze(0));
    batched.tensor(a.unsqueeze(0)).tensor(b.unsqueeze(0)).out_like(want3).repeat_out();
    ASSERT_EQ(batched.run(), Error::Ok) << last_error_message();
    EXPECT_TRUE(at::equal(at::signbit(aten_view(batched.out())), at::signbit(want3)))
        << "bmm, K = " << k;
  }
  // Every partial sum of the row is exact unless it overflows: 2^127 + 2^127 does, in the order
  // the row is stored; the exact value is 2^127 + 1.
  const float big = std::ldexp(1.0f, 127);
  const at::Tensor a = at::tensor({big, big, -big, 1.0f}).reshape({1, 4}).repeat({5, 1});
  const at::Tensor b = at::ones({4, 3});
  const at::Tensor want = at::mm(a.to(at::kDouble), b.to(at::kDouble)).to(at::kFloat);
  ASSERT_TRUE(at::isfinite(want).all().item<bool>());
  KernelCall call("aten::mm.out");
  call.tensor(a).tensor(b).out_like(want).repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  EXPECT_TRUE(at::equal(aten_view(call.out()), want)) << aten_view(call.out());
}

TEST(Linalg, DynamicOutResizedWrongShapesAndDtypesRefused) {
  const at::Tensor a = at::randn({3, 4}), b = at::randn({4, 5});
  KernelCall dynamic("aten::mm.out");
  dynamic.tensor(a).tensor(b).out(at::kFloat, {8, 8}, true).repeat_out();
  ASSERT_EQ(dynamic.run(), Error::Ok) << last_error_message();
  expect_matches(dynamic.out(), at::mm(a, b), matmul_tolerance(at::kFloat));

  KernelCall wrong_out("aten::mm.out");
  wrong_out.tensor(a).tensor(b).out(at::kFloat, {3, 4}, false).repeat_out();
  EXPECT_NE(wrong_out.run(), Error::Ok);
  KernelCall inner("aten::mm.out");
  inner.tensor(a).tensor(a).out(at::kFloat, {3, 4}, false).repeat_out();
  EXPECT_EQ(inner.run(), Error::InvalidArgument);
  KernelCall mixed("aten::mm.out");
  mixed.tensor(a).tensor(b.to(at::kDouble)).out(at::kFloat, {3, 5}, false).repeat_out();
  EXPECT_EQ(mixed.run(), Error::InvalidArgument);
  KernelCall rank("aten::bmm.out");
  rank.tensor(a).tensor(b).out(at::kFloat, {3, 5}, false).repeat_out();
  EXPECT_EQ(rank.run(), Error::InvalidArgument);
  KernelCall bad_self("aten::addmm.out");
  bad_self.tensor(at::randn({2, 5}))
      .tensor(a)
      .tensor(b)
      .scalar(1)
      .scalar(1)
      .out(at::kFloat, {3, 5}, false)
      .repeat_out();
  EXPECT_EQ(bad_self.run(), Error::InvalidArgument);
}

// The GEMM runs the level cpu_isa() allows: what the CPU has, capped by EMBER_CPU_ISA (the switch
// scripts/test uses to run this suite as an AVX2-only CPU would).
TEST(Linalg, GemmRunsTheIsaInForce) {
  const CpuIsa detected = detected_cpu_isa();
#if defined(__x86_64__)
  __builtin_cpu_init();
  EXPECT_EQ(detected >= CpuIsa::Avx2,
            __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  if (detected == CpuIsa::Avx512) {
    EXPECT_TRUE(__builtin_cpu_supports("avx512bw"));
  }
#endif
  CpuIsa want = detected;
  const char* cap = std::getenv("EMBER_CPU_ISA");
  if (cap != nullptr && std::string(cap) == "avx2") want = std::min(want, CpuIsa::Avx2);
  if (cap != nullptr && std::string(cap) == "generic") want = CpuIsa::Generic;
  EXPECT_EQ(cpu_isa(), want) << "EMBER_CPU_ISA=" << (cap ? cap : "");
#if defined(__x86_64__)
  EXPECT_STREQ(gemm_isa(), cpu_isa_name(want));
#else
  EXPECT_STREQ(gemm_isa(), "generic");
#endif
}

// --- convolution

struct ConvCase {
  std::vector<int64_t> input, weight;
  std::vector<int64_t> stride, padding, dilation;
  bool transposed;
  std::vector<int64_t> output_padding;
  int64_t groups;
};

void check_conv(const ConvCase& c, at::ScalarType dtype, bool bias, bool channels_last = false) {
  at::Tensor x = at::randn(c.input).to(dtype), w = at::randn(c.weight).to(dtype);
  if (channels_last) {
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
    w = w.contiguous(at::MemoryFormat::ChannelsLast);
  }
  const int64_t c_out = c.transposed ? c.weight[1] * c.groups : c.weight[0];
  const at::Tensor b = bias ? at::randn({c_out}).to(dtype) : at::Tensor();
  // ATen 1.13 lacks Half CPU convolution and runs bf16 through oneDNN (which refuses some
  // transposed shapes): 16-bit floats are compared with float computed, then rounded.
  const bool via_float = dtype == at::kHalf || dtype == at::kBFloat16;
  const auto conv = [&](const at::Tensor& xx, const at::Tensor& ww, const at::Tensor& bb) {
    return at::convolution(xx, ww, bb.defined() ? c10::optional<at::Tensor>(bb) : c10::nullopt,
                           c.stride, c.padding, c.dilation, c.transposed, c.output_padding,
                           c.groups);
  };
  const at::Tensor expected =
      via_float ? conv(x.to(at::kFloat), w.to(at::kFloat), bias ? b.to(at::kFloat) : b).to(dtype)
                : conv(x, w, b);
  KernelCall call("aten::convolution.out");
  call.tensor(x).tensor(w);
  if (bias)
    call.tensor(b);
  else
    call.none();
  call.int_list(c.stride)
      .int_list(c.padding)
      .int_list(c.dilation)
      .scalar(c.transposed)
      .int_list(c.output_padding)
      .scalar(c.groups)
      .out_like(expected.contiguous())
      .repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
  const Tolerance tol = dtype == at::kFloat    ? Tolerance{1e-4, 1e-4}
                        : dtype == at::kDouble ? Tolerance{1e-10, 1e-10}
                                               : Tolerance{3e-2, 3e-2};
  expect_matches(call.out(), expected, tol);
}

TEST(Convolution, TwoDOneDStridePaddingDilationGroups) {
  at::manual_seed(3);
  const std::vector<ConvCase> cases = {
      {{2, 3, 9, 8}, {8, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1},
      {{1, 4, 11, 10}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, false, {0, 0}, 2},
      {{1, 6, 7, 7}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 6},  // depthwise
      {{2, 16, 12, 12}, {32, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1},
      {{1, 8, 20, 20}, {16, 4, 5, 5}, {2, 2}, {2}, {2}, false, {0, 0}, 2},
      {{3, 4, 15}, {8, 4, 3}, {2}, {1}, {1}, false, {0}, 1},
      {{1, 6, 9}, {6, 2, 4}, {1}, {0}, {2}, false, {0}, 3},
  };
  for (const ConvCase& c : cases) {
    for (at::ScalarType dtype : float_dtypes()) {
      for (bool bias : {false, true}) check_conv(c, dtype, bias);
    }
  }
  check_conv(cases[0], at::kFloat, true, /*channels_last=*/true);
  check_conv(cases[1], at::kFloat, false, /*channels_last=*/true);
}

TEST(Convolution, LargeThreadedGemmPath) {
  at::manual_seed(4);
  check_conv({{2, 64, 30, 30}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1},
             at::kFloat, true);
  check_conv({{1, 32, 20, 20}, {64, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 4},
             at::kDouble, true);
}

// Contract C29: transposed convolution, by hand and against ATen.
TEST(Convolution, C29TransposedByHand) {
  const at::Tensor x = at::tensor({1.0f, 2.0f}).reshape({1, 1, 2});
  const at::Tensor w = at::ones({1, 1, 3});
  const std::vector<std::tuple<int64_t, int64_t, std::vector<float>>> cases = {
      {0, 0, {1, 1, 3, 2, 2}}, {1, 0, {1, 3, 2}}, {1, 1, {1, 3, 2, 2}}};
  for (const auto& [padding, output_padding, want] : cases) {
    const at::Tensor expected = at::tensor(want).reshape({1, 1, -1});
    KernelCall call("aten::convolution.out");
    call.tensor(x)
        .tensor(w)
        .none()
        .int_list({2})
        .int_list({padding})
        .int_list({1})
        .scalar(true)
        .int_list({output_padding})
        .scalar(int64_t{1})
        .out(at::kFloat, {1, 1, 8}, true)
        .repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(), expected);
  }
}

TEST(Convolution, C29TransposedModules) {
  at::manual_seed(5);
  // ConvTranspose1d(4, 8, 3, stride=2, padding=1, output_padding=1) on [1, 4, 5] -> [1, 8, 10].
  const ConvCase one_d{{1, 4, 5}, {4, 8, 3}, {2}, {1}, {1}, true, {1}, 1};
  // ConvTranspose2d(4, 8, (3, 2), stride=(2, 1), padding=(1, 0), groups=2) on [1, 4, 5, 6].
  const ConvCase two_d{{1, 4, 5, 6}, {4, 4, 3, 2}, {2, 1}, {1, 0}, {1, 1}, true, {0, 0}, 2};
  for (bool bias : {false, true}) {
    for (const ConvCase& c : {one_d, two_d}) {
      at::Tensor x = at::randn(c.input), w = at::randn(c.weight);
      const at::Tensor b = bias ? at::randn({8}) : at::Tensor();
      const at::Tensor expected =
          at::convolution(x, w, bias ? c10::optional<at::Tensor>(b) : c10::nullopt, c.stride,
                          c.padding, c.dilation, true, c.output_padding, c.groups);
      EXPECT_EQ(expected.sizes().vec(), (c.input.size() == 3 ? std::vector<int64_t>{1, 8, 10}
                                                             : std::vector<int64_t>{1, 8, 9, 7}));
      KernelCall call("aten::convolution.out");
      call.tensor(x).tensor(w);
      if (bias)
        call.tensor(b);
      else
        call.none();
      call.int_list(c.stride)
          .int_list(c.padding)
          .int_list(c.dilation)
          .scalar(true)
          .int_list(c.output_padding)
          .scalar(c.groups)
          .out_like(expected)
          .repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      expect_matches(call.out(), expected, Tolerance{1e-4, 1e-5});
    }
  }
}

TEST(Convolution, TransposedWithDilationAndDtypes) {
  at::manual_seed(6);
  const std::vector<ConvCase> cases = {
      {{2, 4, 5, 4}, {4, 3, 3, 3}, {2, 3}, {1, 2}, {2, 1}, true, {1, 2}, 1},
      {{1, 6, 7}, {6, 2, 3}, {3}, {2}, {2}, true, {1}, 3},
  };
  for (const ConvCase& c : cases) {
    for (at::ScalarType dtype : float_dtypes()) check_conv(c, dtype, true);
  }
}

TEST(Convolution, RefusesWhatATenRefuses) {
  const at::Tensor x = at::randn({1, 4, 5, 5});
  const auto run = [&](const at::Tensor& w, std::vector<int64_t> stride, int64_t groups,
                       bool transposed, std::vector<int64_t> output_padding) {
    KernelCall call("aten::convolution.out");
    call.tensor(x)
        .tensor(w)
        .none()
        .int_list(stride)
        .int_list({0, 0})
        .int_list({1, 1})
        .scalar(transposed)
        .int_list(output_padding)
        .scalar(groups)
        .out(at::kFloat, {1, 64, 64, 64}, true)
        .repeat_out();
    return call.run();
  };
  EXPECT_EQ(run(at::randn({8, 3, 3, 3}), {1, 1}, 1, false, {0, 0}), Error::InvalidArgument);
  EXPECT_EQ(run(at::randn({8, 4, 6, 6}), {1, 1}, 1, false, {0, 0}), Error::InvalidArgument);
  EXPECT_EQ(run(at::randn({6, 2, 3, 3}), {1, 1}, 4, false, {0, 0}), Error::InvalidArgument);
  EXPECT_EQ(run(at::randn({8, 4, 3, 3}), {0, 1}, 1, false, {0, 0}), Error::InvalidArgument);
  EXPECT_EQ(run(at::randn({4, 2, 3, 3}), {2, 2}, 1, true, {2, 0}), Error::InvalidArgument);
  EXPECT_EQ(run(at::randn({8, 4, 3}), {1}, 1, false, {0}), Error::InvalidArgument);
  EXPECT_EQ(run(at::randn({8, 4, 3, 3}).to(at::kDouble), {1, 1}, 1, false, {0, 0}),
            Error::InvalidArgument);
  // A static out of the wrong shape.
  KernelCall wrong("aten::convolution.out");
  wrong.tensor(x)
      .tensor(at::randn({8, 4, 3, 3}))
      .none()
      .int_list({1, 1})
      .int_list({0, 0})
      .int_list({1, 1})
      .scalar(false)
      .int_list({0, 0})
      .scalar(int64_t{1})
      .out(at::kFloat, {1, 8, 5, 5}, false)
      .repeat_out();
  EXPECT_NE(wrong.run(), Error::Ok);
}

}  // namespace
}  // namespace ember::testing
