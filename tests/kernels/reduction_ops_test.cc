// Conformance of the reduction and scan families (sum, mean, prod, amax/amin, max/min.dim,
// argmax/argmin, var/std, any/all, logsumexp, cumsum/cumprod, cummax/cummin, softmax) with ATen:
// a dtype sweep per op, plus dims (negative, several, none), keepdim, 0-dim and empty inputs,
// channels-last inputs, outs, and contract C26 (cummin/cummax ties and NaN).
#include <cmath>
#include <limits>

#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

using Outs = std::vector<at::Tensor>;

at::Tensor ft(std::vector<float> v) { return at::tensor(v); }
at::Tensor lt(std::vector<int64_t> v) { return at::tensor(v); }

// Sums and products accumulate in another order than ATen's: a looser float32 tolerance.
std::optional<Tolerance> reduce_tolerance(at::ScalarType dtype) {
  if (dtype == at::kFloat) return Tolerance{1e-4, 1e-5};
  return std::nullopt;
}

void add_reduce_case(const std::string& label, std::function<Outs(const at::Tensor&)> aten,
                     std::function<void(KernelCall&)> args, std::vector<at::ScalarType> fallback,
                     bool specials = true, bool widen_half = false) {
  add_sweep_case(label, [=](at::ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 5}, specials);
    if (widen_half && dtype == at::kHalf) {
      // A float16 kernel PyTorch 2 has and libtorch 1.13 may lack: compared widened.
      return sweep_run_as(
          label, dtype, [&](at::ScalarType t) { return aten(x.to(t)); },
          [&](KernelCall& c) {
            c.tensor(x);
            args(c);
          },
          why, reduce_tolerance(dtype), reduce_tolerance(dtype));
    }
    std::vector<at::ScalarType> fb = fallback;
    for (auto& t : fb) {
      if (t == at::kByte) t = dtype;  // kByte here means "the input's dtype"
      // kQInt8 here means "int64 for integral inputs, else the input's dtype" (sum-like ops).
      if (t == at::kQInt8) t = at::isFloatingType(dtype) ? dtype : at::kLong;
    }
    // When ATen refuses the dtype, Ember gets outs of the shape ATen gives for float32 inputs,
    // so that only the dtype can make it refuse.
    const std::vector<int64_t> shape = aten(x.to(at::kFloat)).at(0).sizes().vec();
    return sweep_run(
        label, [&] { return aten(x); },
        [&](KernelCall& c) {
          c.tensor(x);
          args(c);
        },
        fb, shape, why, reduce_tolerance(dtype));
  });
}

const bool kReduceCases = [] {
  const at::ScalarType kSame = at::kByte;      // placeholder: the input's dtype
  const at::ScalarType kSumLike = at::kQInt8;  // placeholder: int64 or the floating input's dtype
  add_reduce_case(
      "aten::sum.IntList_out",
      [](auto& x) {
        return Outs{at::sum(x, {1, -1})};
      },
      [](KernelCall& c) {
        c.int_list({1, -1}).scalar(false).none();
      },
      {kSumLike});
  add_reduce_case(
      "aten::sum.out", [](auto& x) { return Outs{at::sum(x)}; }, [](KernelCall& c) { c.none(); },
      {kSumLike});
  add_reduce_case(
      "aten::mean.out", [](auto& x) { return Outs{at::mean(x, {0}, true)}; },
      [](KernelCall& c) { c.int_list({0}).scalar(true).none(); }, {kSame});
  add_reduce_case(
      "aten::prod.int_out", [](auto& x) { return Outs{at::prod(x, 1)}; },
      [](KernelCall& c) { c.scalar(int64_t{1}).scalar(false).none(); }, {kSumLike});
  add_reduce_case(
      "aten::prod.out", [](auto& x) { return Outs{at::prod(x)}; }, [](KernelCall& c) { c.none(); },
      {kSumLike});
  add_reduce_case(
      "aten::amax.out",
      [](auto& x) {
        return Outs{at::amax(x, {0, 2})};
      },
      [](KernelCall& c) {
        c.int_list({0, 2}).scalar(false);
      },
      {kSame});
  add_reduce_case(
      "aten::amin.out", [](auto& x) { return Outs{at::amin(x, {-1}, true)}; },
      [](KernelCall& c) { c.int_list({-1}).scalar(true); }, {kSame});
  add_reduce_case(
      "aten::max.dim_max",
      [](auto& x) {
        auto [v, i] = at::max(x, -1);
        return Outs{v, i};
      },
      [](KernelCall& c) { c.scalar(int64_t{-1}).scalar(false); }, {kSame, at::kLong});
  add_reduce_case(
      "aten::min.dim_min",
      [](auto& x) {
        auto [v, i] = at::min(x, 1, true);
        return Outs{v, i};
      },
      [](KernelCall& c) { c.scalar(int64_t{1}).scalar(true); }, {kSame, at::kLong});
  add_reduce_case(
      "aten::argmax.out", [](auto& x) { return Outs{at::argmax(x, 1)}; },
      [](KernelCall& c) { c.scalar(int64_t{1}).scalar(false); }, {at::kLong});
  add_reduce_case(
      "aten::argmax.out", [](auto& x) { return Outs{at::argmax(x)}; },
      [](KernelCall& c) { c.none().scalar(false); }, {at::kLong});
  add_reduce_case(
      "aten::argmin.out", [](auto& x) { return Outs{at::argmin(x, -1, true)}; },
      [](KernelCall& c) { c.scalar(int64_t{-1}).scalar(true); }, {at::kLong});
  add_reduce_case(
      "aten::var.correction_out",
      [](auto& x) {
        return Outs{at::var(x, at::IntArrayRef{1}, c10::optional<int64_t>(0), false)};
      },
      [](KernelCall& c) { c.int_list({1}).scalar(int64_t{0}).scalar(false); }, {kSame});
  add_reduce_case(
      "aten::var.out",
      [](auto& x) {
        return Outs{at::var(x, at::IntArrayRef{0, 2}, true, true)};
      },
      [](KernelCall& c) {
        c.int_list({0, 2}).scalar(true).scalar(true);
      },
      {kSame});
  add_reduce_case(
      "aten::std.correction_out",
      [](auto& x) {
        return Outs{at::std(x, at::IntArrayRef{2}, c10::optional<int64_t>(2), false)};
      },
      [](KernelCall& c) { c.int_list({2}).scalar(int64_t{2}).scalar(false); }, {kSame});
  add_reduce_case(
      "aten::std.out", [](auto& x) { return Outs{at::std(x, at::IntArrayRef{1}, false, false)}; },
      [](KernelCall& c) { c.int_list({1}).scalar(false).scalar(false); }, {kSame});
  add_reduce_case(
      "aten::any.out", [](auto& x) { return Outs{at::any(x, 1)}; },
      [](KernelCall& c) { c.scalar(int64_t{1}).scalar(false); }, {at::kBool});
  add_reduce_case(
      "aten::any.all_out", [](auto& x) { return Outs{at::any(x)}; }, [](KernelCall&) {},
      {at::kBool});
  add_reduce_case(
      "aten::all.out", [](auto& x) { return Outs{at::all(x, -1, true)}; },
      [](KernelCall& c) { c.scalar(int64_t{-1}).scalar(true); }, {at::kBool});
  add_reduce_case(
      "aten::all.all_out", [](auto& x) { return Outs{at::all(x)}; }, [](KernelCall&) {},
      {at::kBool});
  add_reduce_case(
      "aten::logsumexp.out", [](auto& x) { return Outs{at::logsumexp(x, {2})}; },
      [](KernelCall& c) { c.int_list({2}).scalar(false); }, {kSame}, true, /*widen_half=*/true);
  add_reduce_case(
      "aten::cumsum.out", [](auto& x) { return Outs{at::cumsum(x, 1)}; },
      [](KernelCall& c) { c.scalar(int64_t{1}).none(); }, {kSumLike});
  add_reduce_case(
      "aten::cumprod.out", [](auto& x) { return Outs{at::cumprod(x, -1)}; },
      [](KernelCall& c) { c.scalar(int64_t{-1}).none(); }, {kSumLike});
  add_reduce_case(
      "aten::cummax.out",
      [](auto& x) {
        // Contract C26 requires float16, which libtorch 1.13 lacks on CPU: the reference is ATen
        // on the float32 copy (exact, the op only selects values).
        const bool half = x.scalar_type() == at::kHalf;
        auto [v, i] = at::cummax(half ? x.to(at::kFloat) : x, 1);
        return Outs{half ? v.to(at::kHalf) : v, i};
      },
      [](KernelCall& c) { c.scalar(int64_t{1}); }, {kSame, at::kLong});
  add_reduce_case(
      "aten::cummin.out",
      [](auto& x) {
        // Contract C26 requires float16, which libtorch 1.13 lacks on CPU: the reference is ATen
        // on the float32 copy (exact, the op only selects values).
        const bool half = x.scalar_type() == at::kHalf;
        auto [v, i] = at::cummin(half ? x.to(at::kFloat) : x, -1);
        return Outs{half ? v.to(at::kHalf) : v, i};
      },
      [](KernelCall& c) { c.scalar(int64_t{-1}); }, {kSame, at::kLong});
  add_reduce_case(
      "aten::_softmax.out", [](auto& x) { return Outs{at::_softmax(x, -1, false)}; },
      [](KernelCall& c) { c.scalar(int64_t{-1}).scalar(false); }, {kSame}, /*specials=*/false,
      /*widen_half=*/true);
  add_reduce_case(
      "aten::_log_softmax.out", [](auto& x) { return Outs{at::_log_softmax(x, 1, false)}; },
      [](KernelCall& c) { c.scalar(int64_t{1}).scalar(false); }, {kSame}, /*specials=*/false,
      /*widen_half=*/true);
  return true;
}();

// Runs cummin/cummax on x along dim and returns (values, indices) as ATen tensors.
std::pair<at::Tensor, at::Tensor> run_cum(const char* kernel, const at::Tensor& x, int64_t dim) {
  KernelCall call(kernel);
  call.tensor(x).scalar(dim).out_like(x).out(at::kLong, x.sizes(), false).repeat_outs(2);
  EXPECT_EQ(call.run(), Error::Ok) << last_error_message();
  return {aten_view(call.out(0)).clone(), aten_view(call.out(1)).clone()};
}

TEST(ReductionOps, CumminTiesAndNanContractC26) {
  auto [v1, i1] = run_cum("aten::cummin.out", ft({3, 1, 2, 1, 0}), 0);
  EXPECT_TRUE(at::equal(v1, ft({3, 1, 1, 1, 0})));
  EXPECT_TRUE(at::equal(i1, lt({0, 1, 1, 3, 4})));  // ties take the later index
  auto [v2, i2] = run_cum("aten::cummin.out", ft({2, NAN, 1}), 0);
  EXPECT_EQ(v2[0].item<float>(), 2.0f);
  EXPECT_TRUE(std::isnan(v2[1].item<float>()) && std::isnan(v2[2].item<float>()));
  EXPECT_TRUE(at::equal(i2, lt({0, 1, 1})));
  auto [v3, i3] = run_cum("aten::cummin.out", ft({NAN, 1, NAN}), 0);
  EXPECT_TRUE(at::isnan(v3).all().item<bool>());
  EXPECT_TRUE(at::equal(i3, lt({0, 0, 2})));  // each later NaN takes over the index
  const at::Tensor m = ft({3, 1, 2, 0, 5, 0}).reshape({2, 3});
  auto [v4, i4] = run_cum("aten::cummin.out", m, -1);
  EXPECT_TRUE(at::equal(v4, ft({3, 1, 1, 0, 0, 0}).reshape({2, 3})));
  EXPECT_TRUE(at::equal(i4, lt({0, 1, 1, 0, 0, 2}).reshape({2, 3})));
  auto [v5, i5] = run_cum("aten::cummin.out", m, 0);
  EXPECT_TRUE(at::equal(v5, ft({3, 1, 2, 0, 1, 0}).reshape({2, 3})));
  EXPECT_TRUE(at::equal(i5, lt({0, 0, 0, 1, 0, 1}).reshape({2, 3})));
  auto [v6, i6] = run_cum("aten::cummin.out", at::empty({0}), 0);
  EXPECT_EQ(v6.sizes().vec(), std::vector<int64_t>{0});
  EXPECT_EQ(i6.sizes().vec(), std::vector<int64_t>{0});
  auto [v7, i7] = run_cum("aten::cummin.out", at::scalar_tensor(5.0), 0);
  EXPECT_EQ(v7.dim(), 0);
  EXPECT_EQ(v7.item<double>(), 5.0);
  EXPECT_EQ(i7.item<int64_t>(), 0);
  // ATen agrees on all of it, for every dtype and both directions (also in the sweep).
  for (const at::Tensor& x :
       {ft({3, 1, 2, 1, 0}), ft({2, NAN, 1}), ft({NAN, 1, NAN}),
        at::tensor({1, 1, 0, 0}).to(at::kBool), at::tensor({5, 5, 7, 7, 1}).to(at::kChar)}) {
    for (const char* kernel : {"aten::cummin.out", "aten::cummax.out"}) {
      auto [v, i] = run_cum(kernel, x, 0);
      auto [ev, ei] =
          std::string(kernel) == "aten::cummin.out" ? at::cummin(x, 0) : at::cummax(x, 0);
      EXPECT_TRUE(at::equal(i, ei)) << kernel << " " << x;
      EXPECT_TRUE(at::allclose(v.to(at::kDouble), ev.to(at::kDouble), 0, 0, true)) << kernel;
    }
  }
}

// Runs a reduction call and compares each out with ATen's.
void check(KernelCall& call, const Outs& expected) {
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  for (size_t i = 0; i < expected.size(); ++i) expect_matches(call.out(i), expected[i]);
}

// var and std of finite float32 values whose squares or sum overflow: std([0, 1e30]) is 7.07e29
// (the variance in float32 is inf), and a row of equal values near the limit has variance 0.
TEST(ReductionOps, VarStdHugeFiniteValuesLikeATen) {
  const float inf = std::numeric_limits<float>::infinity();
  const at::Tensor x =
      at::tensor({0.0f, 1e30f, 3e38f, 3e38f, -3e38f, 3e38f, 1e-30f, -1e-30f, 0.0f, inf, 1.0f, 2.0f})
          .reshape({6, 2});
  for (int64_t correction : {0, 1}) {
    for (bool keepdim : {false, true}) {
      const auto corr = c10::optional<int64_t>(correction);
      const at::Tensor sd = at::std(x, at::IntArrayRef{1}, corr, keepdim);
      KernelCall std_call("aten::std.correction_out");
      std_call.tensor(x).int_list({1}).scalar(correction).scalar(keepdim).out_like(sd).repeat_out();
      check(std_call, {sd});
      const at::Tensor var = at::var(x, at::IntArrayRef{1}, corr, keepdim);
      KernelCall var_call("aten::var.correction_out");
      var_call.tensor(x)
          .int_list({1})
          .scalar(correction)
          .scalar(keepdim)
          .out_like(var)
          .repeat_out();
      check(var_call, {var});
    }
  }
}

TEST(ReductionOps, ZeroDimEmptyAndIdentities) {
  const at::Tensor s = at::scalar_tensor(2.5);
  KernelCall sum0("aten::sum.IntList_out");
  sum0.tensor(s).int_list({0}).scalar(false).none().out_like(at::sum(s, {0})).repeat_out();
  check(sum0, {at::sum(s, {0})});
  KernelCall max0("aten::max.dim_max");
  auto [mv, mi] = at::max(s, 0);
  max0.tensor(s).scalar(int64_t{0}).scalar(false).out_like(mv).out_like(mi).repeat_outs(2);
  check(max0, {mv, mi});
  // Empty: sum 0, prod 1, mean NaN, any false, all true, logsumexp -inf.
  const at::Tensor e = at::empty({2, 0});
  KernelCall sum("aten::sum.IntList_out");
  sum.tensor(e).int_list({1}).scalar(false).none().out_like(at::sum(e, {1})).repeat_out();
  check(sum, {at::sum(e, {1})});
  KernelCall prod("aten::prod.int_out");
  prod.tensor(e).scalar(int64_t{1}).scalar(false).none().out_like(at::prod(e, 1)).repeat_out();
  check(prod, {at::prod(e, 1)});
  KernelCall mean("aten::mean.out");
  mean.tensor(e).int_list({1}).scalar(false).none().out_like(at::mean(e, {1})).repeat_out();
  check(mean, {at::mean(e, {1})});
  KernelCall any("aten::any.out");
  any.tensor(e).scalar(int64_t{1}).scalar(false).out_like(at::any(e, 1)).repeat_out();
  check(any, {at::any(e, 1)});
  KernelCall all("aten::all.out");
  all.tensor(e).scalar(int64_t{1}).scalar(false).out_like(at::all(e, 1)).repeat_out();
  check(all, {at::all(e, 1)});
  KernelCall lse("aten::logsumexp.out");
  lse.tensor(e).int_list({1}).scalar(false).out_like(at::logsumexp(e, {1})).repeat_out();
  check(lse, {at::logsumexp(e, {1})});
  // No identity: amax and argmax over a zero-size dim are refused, as in ATen.
  EXPECT_ANY_THROW(at::amax(e, {1}));
  KernelCall amax("aten::amax.out");
  amax.tensor(e).int_list({1}).scalar(false).out(at::kFloat, {2}, false).repeat_out();
  EXPECT_EQ(amax.run(), Error::InvalidArgument);
  EXPECT_ANY_THROW(at::argmax(e));
  KernelCall argmax("aten::argmax.out");
  argmax.tensor(e).none().scalar(false).out(at::kLong, {}, false).repeat_out();
  EXPECT_EQ(argmax.run(), Error::InvalidArgument);
  // Reducing the non-empty dim of an empty tensor is fine.
  const at::Tensor amax_kept = at::amax(e, {0});
  KernelCall kept("aten::amax.out");
  kept.tensor(e).int_list({0}).scalar(false).out_like(amax_kept).repeat_out();
  check(kept, {amax_kept});
}

TEST(ReductionOps, DimsKeepdimDtypeAndLayouts) {
  at::manual_seed(21);
  const at::Tensor x = at::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor expected = at::sum(x, {1}, true);  // over channels of a channels-last input
  KernelCall sum("aten::sum.IntList_out");
  sum.tensor(x).int_list({1}).scalar(true).none().out_like(expected.contiguous()).repeat_out();
  check(sum, {expected});
  // dtype: int input summed as float64 (out must have that dtype).
  const at::Tensor ints = at::randint(-50, 50, {4, 6}, at::kInt);
  const at::Tensor as_double = at::sum(ints, {0}, false, at::kDouble);
  KernelCall typed("aten::sum.IntList_out");
  typed.tensor(ints)
      .int_list({0})
      .scalar(false)
      .scalar(int64_t{7})
      .out_like(as_double)
      .repeat_out();
  check(typed, {as_double});
  KernelCall mismatch("aten::sum.IntList_out");
  mismatch.tensor(ints)
      .int_list({0})
      .scalar(false)
      .scalar(int64_t{7})
      .out(at::kFloat, {6}, false)
      .repeat_out();
  EXPECT_EQ(mismatch.run(), Error::InvalidArgument);
  // Duplicate and out-of-range dims are refused.
  KernelCall dup("aten::sum.IntList_out");
  dup.tensor(ints).int_list({0, -2}).scalar(false).none().out(at::kLong, {6}, false).repeat_out();
  EXPECT_EQ(dup.run(), Error::InvalidArgument);
  KernelCall range("aten::amax.out");
  range.tensor(ints).int_list({2}).scalar(false).out(at::kInt, {4}, false).repeat_out();
  EXPECT_EQ(range.run(), Error::InvalidArgument);
  // mean of integers without dtype is refused (ATen cannot infer a floating dtype).
  EXPECT_ANY_THROW(at::mean(ints, {0}));
  KernelCall mean("aten::mean.out");
  mean.tensor(ints).int_list({0}).scalar(false).none().out(at::kInt, {6}, false).repeat_out();
  EXPECT_EQ(mean.run(), Error::InvalidArgument);
  // Dynamic out resized; static out of the wrong shape refused.
  KernelCall dynamic("aten::mean.out");
  const at::Tensor f = at::randn({4, 6});
  dynamic.tensor(f).int_list({1}).scalar(false).none().out(at::kFloat, {8}, true).repeat_out();
  check(dynamic, {at::mean(f, {1})});
  KernelCall wrong("aten::mean.out");
  wrong.tensor(f).int_list({1}).scalar(false).none().out(at::kFloat, {6}, false).repeat_out();
  EXPECT_NE(wrong.run(), Error::Ok);
  // argmax / max.dim ties take the first index.
  const at::Tensor ties = ft({1, 3, 3, 0, 3});
  KernelCall am("aten::argmax.out");
  am.tensor(ties).scalar(int64_t{0}).scalar(false).out_like(at::argmax(ties, 0)).repeat_out();
  check(am, {at::argmax(ties, 0)});
}

TEST(ReductionOps, SoftmaxLargeRowsAndRefusals) {
  at::manual_seed(22);
  const at::Tensor x = at::randn({64, 1000}) * 10;
  for (int64_t dim : {int64_t{-1}, int64_t{0}}) {
    KernelCall sm("aten::_softmax.out");
    sm.tensor(x).scalar(dim).scalar(false).out_like(x).repeat_out();
    check(sm, {at::_softmax(x, dim, false)});
    KernelCall lsm("aten::_log_softmax.out");
    lsm.tensor(x).scalar(dim).scalar(false).out_like(x).repeat_out();
    check(lsm, {at::_log_softmax(x, dim, false)});
  }
  // A row with -inf entries and one with +inf (NaN in ATen too).
  const at::Tensor special = ft({-INFINITY, 0, 1, INFINITY, 0, 1}).reshape({2, 3});
  KernelCall sp("aten::_softmax.out");
  sp.tensor(special).scalar(int64_t{1}).scalar(false).out_like(special).repeat_out();
  check(sp, {at::_softmax(special, 1, false)});
  // Rows long enough for the vectorized float32 path, with a tail (37 = 2 * 16 + 5): NaN, +inf,
  // -inf, a row of -inf, and values so far below the max that their exp underflows.
  at::Tensor rows = at::randn({6, 37}) * 30;
  rows[0][3] = NAN;
  rows[1][20] = INFINITY;
  rows[2][36] = -INFINITY;
  rows[3].fill_(-INFINITY);
  rows[4][0] = 300;
  rows[5][33] = NAN;
  for (const bool log : {false, true}) {
    KernelCall call(log ? "aten::_log_softmax.out" : "aten::_softmax.out");
    call.tensor(rows).scalar(int64_t{-1}).scalar(false).out_like(rows).repeat_out();
    check(call, {log ? at::_log_softmax(rows, -1, false) : at::_softmax(rows, -1, false)});
  }
  // float16 rows (with the special values): PyTorch 2's float16 CPU kernel computes in float32
  // and rounds the result (libtorch 1.13, linked here, has none), so ATen's float32 softmax of
  // the same values, rounded to float16, is the reference.
  const at::Tensor rows_h = rows.to(at::kHalf);
  for (const bool log : {false, true}) {
    KernelCall call(log ? "aten::_log_softmax.out" : "aten::_softmax.out");
    call.tensor(rows_h).scalar(int64_t{-1}).scalar(false).out_like(rows_h).repeat_out();
    const at::Tensor f = rows_h.to(at::kFloat);
    check(call,
          {(log ? at::_log_softmax(f, -1, false) : at::_softmax(f, -1, false)).to(at::kHalf)});
  }
  // half_to_float is CUDA-only in ATen.
  const at::Tensor h = x.to(at::kHalf);
  EXPECT_ANY_THROW(at::_softmax(h, -1, true));
  KernelCall htf("aten::_softmax.out");
  htf.tensor(h).scalar(int64_t{-1}).scalar(true).out(at::kFloat, h.sizes(), false).repeat_out();
  EXPECT_EQ(htf.run(), Error::InvalidArgument);
}

}  // namespace
}  // namespace ember::testing
