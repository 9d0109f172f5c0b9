// Conformance of the normalization, pooling and resampling kernels with ATen.
#include <limits>

#include "tests/kernels/aten_reference.h"
#include "tests/kernels/test_tensors.h"

namespace ember::testing {
namespace {

at::Tensor cast_floating(const at::Tensor& t, at::ScalarType d) {
  return t.is_floating_point() ? t.to(d) : t;
}
template <typename... Ts>
std::tuple<Ts...> cast_floating(const std::tuple<Ts...>& t, at::ScalarType d) {
  return std::apply([&](const auto&... x) { return std::tuple<Ts...>(cast_floating(x, d)...); }, t);
}

// ATen's own result, or (for a dtype ATen 1.13 lacks on CPU, e.g. Half) its float result rounded
// (index outputs are left as they are).
template <typename F>
auto reference(at::ScalarType dtype, F&& f) -> decltype(f(dtype)) {
  try {
    return f(dtype);
  } catch (const c10::Error&) {
    return cast_floating(f(at::kFloat), dtype);
  }
}

Tolerance loose(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return {1e-4, 1e-5};
    case at::kDouble:
      return {1e-9, 1e-10};
    case at::kHalf:
      return {1e-2, 1e-2};
    case at::kBFloat16:
      return {5e-2, 5e-2};
    default:
      return {0, 0};
  }
}

TEST(Normalization, LayerNormShapesDtypesAffine) {
  at::manual_seed(10);
  for (at::ScalarType dtype : float_dtypes()) {
    for (const std::vector<int64_t>& norm : {std::vector<int64_t>{8}, std::vector<int64_t>{6, 8}}) {
      for (bool affine : {false, true}) {
        const at::Tensor x = (at::randn({4, 6, 8}) * 3 + 1).to(dtype);
        const at::Tensor w = affine ? at::randn(norm).to(dtype) : at::Tensor();
        const at::Tensor b = affine ? at::randn(norm).to(dtype) : at::Tensor();
        at::Tensor y, mean, rstd;
        std::tie(y, mean, rstd) = reference(dtype, [&](at::ScalarType t) {
          return at::native_layer_norm(x.to(t), norm, affine ? w.to(t) : w, affine ? b.to(t) : b,
                                       1e-5);
        });
        KernelCall call("aten::native_layer_norm.out");
        call.tensor(x).int_list(norm);
        if (affine)
          call.tensor(w).tensor(b);
        else
          call.none().none();
        call.scalar(1e-5)
            .out_like(y.to(dtype))
            .out_like(mean.to(dtype))
            .out_like(rstd.to(dtype))
            .repeat_outs(3);
        ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
        expect_matches(call.out(0), y.to(dtype), loose(dtype));
        expect_matches(call.out(1), mean.to(dtype), loose(dtype));
        expect_matches(call.out(2), rstd.to(dtype), loose(dtype));
      }
    }
  }
}

// A row holding an inf (one, or +inf and -inf) or a NaN: ATen's statistics are NaN (its Welford
// update computes inf - inf), the output NaN. The row sums of the portable kernel gave a mean of
// +-inf for one inf. (ATen's mean stays +-inf where the inf is the last value its Welford lane
// sees, which depends on its vector width; those positions are not pinned here.)
TEST(Normalization, LayerNormNonFiniteRowsMatchAten) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    for (int64_t n : {4, 33}) {
      at::Tensor x = at::randn({6, n}).to(dtype);
      x[0][1] = inf;
      x[1][1] = -inf;
      x[2][0] = inf;
      x[2][2] = -inf;
      x[3][1] = nan;
      x[4][0] = inf;
      x[4][1] = inf;
      at::Tensor y, mean, rstd;
      std::tie(y, mean, rstd) = at::native_layer_norm(x, {n}, {}, {}, 1e-5);
      ASSERT_TRUE(mean.slice(0, 0, 5).isnan().all().item<bool>()) << "ATen's statistics changed";
      KernelCall call("aten::native_layer_norm.out");
      call.tensor(x)
          .int_list({n})
          .none()
          .none()
          .scalar(1e-5)
          .out_like(y)
          .out_like(mean)
          .out_like(rstd)
          .repeat_outs(3);
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      expect_matches(call.out(0), y, loose(dtype));
      expect_matches(call.out(1), mean, loose(dtype));
      expect_matches(call.out(2), rstd, loose(dtype));
    }
  }
}

TEST(Normalization, LayerNormChannelsLastDynamicAndErrors) {
  const at::Tensor x = at::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor y, mean, rstd;
  std::tie(y, mean, rstd) = at::native_layer_norm(x, {5}, {}, {}, 1e-5);
  KernelCall call("aten::native_layer_norm.out");
  call.tensor(x)
      .int_list({5})
      .none()
      .none()
      .scalar(1e-5)
      .out(at::kFloat, {4, 4, 4, 8}, true)
      .out(at::kFloat, {4, 4, 4, 8}, true)
      .out(at::kFloat, {4, 4, 4, 8}, true)
      .repeat_outs(3);
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(0), y, loose(at::kFloat));
  expect_matches(call.out(1), mean, loose(at::kFloat));
  expect_matches(call.out(2), rstd, loose(at::kFloat));

  KernelCall bad("aten::native_layer_norm.out");
  bad.tensor(x)
      .int_list({4})
      .none()
      .none()
      .scalar(1e-5)
      .out_like(y)
      .out_like(mean)
      .out_like(rstd)
      .repeat_outs(3);
  EXPECT_EQ(bad.run(), Error::InvalidArgument);
  KernelCall bad_weight("aten::native_layer_norm.out");
  bad_weight.tensor(x)
      .int_list({5})
      .tensor(at::randn({4}))
      .none()
      .scalar(1e-5)
      .out_like(y)
      .out_like(mean)
      .out_like(rstd)
      .repeat_outs(3);
  EXPECT_EQ(bad_weight.run(), Error::InvalidArgument);
}

// Rows of finite values near float32's limit, whose float32 sum or sum of squares overflows: ATen's
// float kernels give the bias (rstd 0) or NaN there, depending on where its Welford update meets
// the overflow (PyTorch 2.15 gives both, on these two inputs; libtorch 1.13 NaN), where exact
// arithmetic gives finite values. Ember computes such a row in double, so the reference is ATen's
// own float64 kernel rounded to float32 (the fuzzer's float64 reference judges the same way).
TEST(Normalization, HugeFiniteRowsExactInDouble) {
  const at::Tensor x =
      at::tensor({0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -2.3231121e+38f, 0.0f, -2.3542953e+38f, 0.0f, 0.0f})
          .reshape({1, 5, 2});
  const at::Tensor spread =
      at::tensor({3e38f, 3e38f, 1e20f, -1e20f, 1.0f, 2.0f}).reshape({1, 3, 2});
  at::manual_seed(5);
  const auto wide = [](const at::Tensor& t) { return t.defined() ? t.to(at::kDouble) : t; };
  const auto narrow = [](const at::Tensor& t) { return t.to(at::kFloat); };
  for (const at::Tensor& in : {x, spread}) {
    const int64_t c = in.size(1), n = in.numel();
    for (bool affine : {false, true}) {
      const at::Tensor w = affine ? at::randn({c}) : at::Tensor();
      const at::Tensor b = affine ? at::randn({c}) : at::Tensor();
      const auto [y, mean, rstd] =
          at::native_group_norm(wide(in), wide(w), wide(b), 1, c, 2, 1, 1e-5);
      ASSERT_TRUE(at::isfinite(y).all().item<bool>());
      KernelCall call("aten::native_group_norm.out");
      call.tensor(in);
      if (affine)
        call.tensor(w).tensor(b);
      else
        call.none().none();
      call.scalar(int64_t{1})
          .scalar(c)
          .scalar(int64_t{2})
          .scalar(int64_t{1})
          .scalar(1e-5)
          .out_like(narrow(y))
          .out_like(narrow(mean))
          .out_like(narrow(rstd))
          .repeat_outs(3);
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      expect_matches(call.out(0), narrow(y), loose(at::kFloat));
      expect_matches(call.out(1), narrow(mean), loose(at::kFloat));
      expect_matches(call.out(2), narrow(rstd), loose(at::kFloat));

      const at::Tensor rows = in.reshape({1, n});
      const at::Tensor lw = affine ? at::randn({n}) : at::Tensor();
      const at::Tensor lb = affine ? at::randn({n}) : at::Tensor();
      const auto [ly, lmean, lrstd] =
          at::native_layer_norm(wide(rows), {n}, wide(lw), wide(lb), 1e-5);
      KernelCall ln("aten::native_layer_norm.out");
      ln.tensor(rows).int_list({n});
      if (affine)
        ln.tensor(lw).tensor(lb);
      else
        ln.none().none();
      ln.scalar(1e-5)
          .out_like(narrow(ly))
          .out_like(narrow(lmean))
          .out_like(narrow(lrstd))
          .repeat_outs(3);
      ASSERT_EQ(ln.run(), Error::Ok) << last_error_message();
      expect_matches(ln.out(0), narrow(ly), loose(at::kFloat));
      expect_matches(ln.out(1), narrow(lmean), loose(at::kFloat));
      expect_matches(ln.out(2), narrow(lrstd), loose(at::kFloat));
    }
  }
}

TEST(Normalization, GroupNorm) {
  at::manual_seed(11);
  for (at::ScalarType dtype : float_dtypes()) {
    for (bool affine : {false, true}) {
      const at::Tensor x = (at::randn({2, 6, 5, 4}) * 2).to(dtype);
      const at::Tensor w = affine ? at::randn({6}).to(dtype) : at::Tensor();
      const at::Tensor b = affine ? at::randn({6}).to(dtype) : at::Tensor();
      at::Tensor y, mean, rstd;
      std::tie(y, mean, rstd) = reference(dtype, [&](at::ScalarType t) {
        return at::native_group_norm(x.to(t), affine ? w.to(t) : w, affine ? b.to(t) : b, 2, 6, 20,
                                     3, 1e-5);
      });
      KernelCall call("aten::native_group_norm.out");
      call.tensor(x);
      if (affine)
        call.tensor(w).tensor(b);
      else
        call.none().none();
      call.scalar(int64_t{2})
          .scalar(int64_t{6})
          .scalar(int64_t{20})
          .scalar(int64_t{3})
          .scalar(1e-5)
          .out_like(y.to(dtype))
          .out_like(mean.to(dtype))
          .out_like(rstd.to(dtype))
          .repeat_outs(3);
      ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
      expect_matches(call.out(0), y.to(dtype), loose(dtype));
      expect_matches(call.out(1), mean.to(dtype), loose(dtype));
      expect_matches(call.out(2), rstd.to(dtype), loose(dtype));
    }
  }
  KernelCall bad("aten::native_group_norm.out");
  const at::Tensor x = at::randn({2, 6, 5});
  bad.tensor(x)
      .none()
      .none()
      .scalar(int64_t{2})
      .scalar(int64_t{6})
      .scalar(int64_t{5})
      .scalar(int64_t{4})
      .scalar(1e-5)
      .out_like(x)
      .out(at::kFloat, {2, 4}, false)
      .out(at::kFloat, {2, 4}, false)
      .repeat_outs(3);
  EXPECT_EQ(bad.run(), Error::InvalidArgument);
}

TEST(Normalization, BatchNormNoTraining) {
  at::manual_seed(12);
  for (at::ScalarType dtype : float_dtypes()) {
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{3, 4, 5, 6}, std::vector<int64_t>{2, 4, 7},
          std::vector<int64_t>{5, 4}}) {
      const at::Tensor x = at::randn(shape).to(dtype), w = at::randn({4}).to(dtype);
      const at::Tensor b = at::randn({4}).to(dtype), m = at::randn({4}).to(dtype);
      const at::Tensor v = (at::rand({4}) + 0.5).to(dtype);
      const at::Tensor y = reference(dtype, [&](at::ScalarType t) {
        return std::get<0>(
            at::native_batch_norm(x.to(t), w.to(t), b.to(t), m.to(t), v.to(t), false, 0.1, 1e-5));
      });
      KernelCall call("aten::_native_batch_norm_legit_no_training.out");
      call.tensor(x)
          .tensor(w)
          .tensor(b)
          .tensor(m)
          .tensor(v)
          .scalar(0.1)
          .scalar(1e-5)
          .out_like(y)
          .out(dtype, {4}, true)
          .out(dtype, {4}, true)
          .repeat_outs(3);
      ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
      expect_matches(call.out(0), y, loose(dtype));
      EXPECT_EQ(call.out(1).numel(), 0);
    }
  }
  const at::Tensor x = at::randn({2, 3, 4}).contiguous();
  KernelCall none_affine("aten::_native_batch_norm_legit_no_training.out");
  const at::Tensor m = at::randn({3}), v = at::rand({3}) + 1;
  none_affine.tensor(x)
      .none()
      .none()
      .tensor(m)
      .tensor(v)
      .scalar(0.1)
      .scalar(1e-3)
      .out_like(x)
      .out(at::kFloat, {0}, false)
      .out(at::kFloat, {0}, false)
      .repeat_outs(3);
  ASSERT_EQ(none_affine.run(), Error::Ok) << last_error_message();
  expect_matches(none_affine.out(0),
                 std::get<0>(at::native_batch_norm(x, {}, {}, m, v, false, 0.1, 1e-3)),
                 loose(at::kFloat));
  KernelCall bad("aten::_native_batch_norm_legit_no_training.out");
  bad.tensor(x)
      .none()
      .none()
      .tensor(at::randn({4}))
      .tensor(v)
      .scalar(0.1)
      .scalar(1e-3)
      .out_like(x)
      .out(at::kFloat, {0}, false)
      .out(at::kFloat, {0}, false)
      .repeat_outs(3);
  EXPECT_EQ(bad.run(), Error::InvalidArgument);
}

struct PoolCase {
  std::vector<int64_t> input, kernel, stride, padding, dilation;
  bool ceil_mode;
};

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases = {
      {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {{1, 2, 9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {{1, 2, 9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {{3, 10, 11}, {3, 2}, {3, 2}, {1, 0}, {1, 1}, true},
      {{1, 1, 10, 10}, {3, 3}, {1, 2}, {1, 1}, {2, 2}, true},
      {{1, 2, 5, 5}, {2, 2}, {}, {0, 0}, {1, 1}, true},
  };
  return cases;
}

TEST(Pooling, MaxPool2dWithIndices) {
  at::manual_seed(13);
  for (at::ScalarType dtype :
       {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf, at::kLong, at::kChar}) {
    for (const PoolCase& c : pool_cases()) {
      const at::Tensor x = random_tensor(dtype, c.input);
      at::Tensor y, idx;
      std::tie(y, idx) = reference(dtype, [&](at::ScalarType t) {
        return at::max_pool2d_with_indices(x.to(t), c.kernel, c.stride, c.padding, c.dilation,
                                           c.ceil_mode);
      });
      KernelCall call("aten::max_pool2d_with_indices.out");
      call.tensor(x)
          .int_list(c.kernel)
          .int_list(c.stride)
          .int_list(c.padding)
          .int_list(c.dilation)
          .scalar(c.ceil_mode)
          .out_like(y.to(dtype))
          .out_like(idx)
          .repeat_outs(2);
      ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
      expect_matches(call.out(0), y.to(dtype));
      if (at::isFloatingType(dtype)) expect_matches(call.out(1), idx);  // integers tie
    }
  }
}

TEST(Pooling, MaxPoolNanChannelsLastAndErrors) {
  at::Tensor x = at::randn({1, 2, 4, 4});
  x.index_put_({0, 0, 1, 1}, NAN);
  x = x.contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor y, idx;
  std::tie(y, idx) = at::max_pool2d_with_indices(x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
  KernelCall call("aten::max_pool2d_with_indices.out");
  call.tensor(x)
      .int_list({2, 2})
      .int_list({2, 2})
      .int_list({0})
      .int_list({1})
      .scalar(false)
      .out(at::kFloat, {4, 4, 4, 4}, true)
      .out(at::kLong, {4, 4, 4, 4}, true)
      .repeat_outs(2);
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(0), y);
  expect_matches(call.out(1), idx);

  KernelCall pad("aten::max_pool2d_with_indices.out");
  pad.tensor(x)
      .int_list({2, 2})
      .int_list({2, 2})
      .int_list({2})
      .int_list({1})
      .scalar(false)
      .out(at::kFloat, {1, 2, 4, 4}, true)
      .out(at::kLong, {1, 2, 4, 4}, true)
      .repeat_outs(2);
  EXPECT_EQ(pad.run(), Error::InvalidArgument);
  KernelCall rank("aten::max_pool2d_with_indices.out");
  const at::Tensor x2 = at::randn({4, 4});
  rank.tensor(x2)
      .int_list({2, 2})
      .int_list({2, 2})
      .int_list({0})
      .int_list({1})
      .scalar(false)
      .out(at::kFloat, {2, 2}, true)
      .out(at::kLong, {2, 2}, true)
      .repeat_outs(2);
  EXPECT_EQ(rank.run(), Error::InvalidArgument);
}

TEST(Pooling, AvgPool2d) {
  at::manual_seed(14);
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16, at::kLong, at::kHalf}) {
    for (const PoolCase& c : pool_cases()) {
      if (c.dilation[0] != 1) continue;
      for (bool include_pad : {true, false}) {
        for (c10::optional<int64_t> divisor :
             {c10::optional<int64_t>(), c10::optional<int64_t>(3)}) {
          const at::Tensor x = random_tensor(dtype, c.input);
          const at::Tensor y = reference(dtype, [&](at::ScalarType t) {
            return at::avg_pool2d(x.to(t), c.kernel, c.stride, c.padding, c.ceil_mode, include_pad,
                                  divisor);
          });
          KernelCall call("aten::avg_pool2d.out");
          call.tensor(x)
              .int_list(c.kernel)
              .int_list(c.stride)
              .int_list(c.padding)
              .scalar(c.ceil_mode)
              .scalar(include_pad);
          if (divisor)
            call.scalar(*divisor);
          else
            call.none();
          call.out_like(y).repeat_out();
          ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
          expect_matches(call.out(), y, loose(dtype));
        }
      }
    }
  }
}

TEST(Pooling, AdaptiveAvgPool2d) {
  at::manual_seed(15);
  for (at::ScalarType dtype : float_dtypes()) {
    for (const std::vector<int64_t>& size :
         {std::vector<int64_t>{1, 1}, std::vector<int64_t>{3, 2}, std::vector<int64_t>{7, 5},
          std::vector<int64_t>{10, 9}}) {
      const at::Tensor x = at::randn({2, 3, 7, 9}).to(dtype);
      const at::Tensor y = reference(
          dtype, [&](at::ScalarType t) { return at::_adaptive_avg_pool2d(x.to(t), size); });
      for (const char* name : {"aten::_adaptive_avg_pool2d.out", "aten::adaptive_avg_pool2d.out"}) {
        KernelCall call(name);
        call.tensor(x).int_list(size).out_like(y).repeat_out();
        ASSERT_EQ(call.run(), Error::Ok) << at::toString(dtype) << ": " << last_error_message();
        expect_matches(call.out(), y, loose(dtype));
      }
    }
  }
}

TEST(Resampling, UpsampleNearest2d) {
  at::manual_seed(16);
  const std::vector<std::vector<int64_t>> sizes = {{8, 10}, {12, 15}, {7, 9}, {3, 2}, {11, 4}};
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16, at::kByte, at::kHalf}) {
    const at::Tensor x = random_tensor(dtype, {2, 3, 4, 5});
    for (const auto& s : sizes) {
      const at::Tensor y =
          reference(dtype, [&](at::ScalarType t) { return at::upsample_nearest2d(x.to(t), s); });
      KernelCall call("aten::upsample_nearest2d.out");
      call.tensor(x).int_list(s).none().none().out_like(y).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      expect_matches(call.out(), y);
    }
  }
  // Scales and the .vec overload with scale factors (output = floor(in * scale)).
  const at::Tensor x = at::randn({1, 2, 5, 7});
  for (const std::vector<double>& f : {std::vector<double>{2.0, 3.0}, std::vector<double>{1.5, 0.7},
                                       std::vector<double>{2.3, 1.7}}) {
    const at::Tensor y = at::upsample_nearest2d(x, c10::nullopt, f);
    KernelCall call("aten::upsample_nearest2d.vec_out");
    call.tensor(x).none().double_list(f).out_like(y).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(), y);
    KernelCall scaled("aten::upsample_nearest2d.out");
    scaled.tensor(x)
        .int_list({y.size(2), y.size(3)})
        .scalar(f[0])
        .scalar(f[1])
        .out_like(y)
        .repeat_out();
    ASSERT_EQ(scaled.run(), Error::Ok) << last_error_message();
    expect_matches(scaled.out(), at::upsample_nearest2d(x, {y.size(2), y.size(3)}, f[0], f[1]));
  }
  KernelCall both("aten::upsample_nearest2d.vec_out");
  both.tensor(x)
      .int_list({4, 4})
      .double_list({2.0, 2.0})
      .out(at::kFloat, {1, 2, 4, 4}, false)
      .repeat_out();
  EXPECT_EQ(both.run(), Error::InvalidArgument);
}

TEST(Resampling, UpsampleBilinear2d) {
  at::manual_seed(17);
  const std::vector<std::vector<int64_t>> sizes = {{8, 10}, {7, 9}, {3, 2}, {1, 1}, {11, 4}};
  for (at::ScalarType dtype : float_dtypes()) {
    const at::Tensor x = at::randn({2, 3, 4, 5}).to(dtype);
    for (const auto& s : sizes) {
      for (bool align : {false, true}) {
        const at::Tensor y = reference(
            dtype, [&](at::ScalarType t) { return at::upsample_bilinear2d(x.to(t), s, align); });
        KernelCall call("aten::upsample_bilinear2d.out");
        call.tensor(x).int_list(s).scalar(align).none().none().out_like(y).repeat_out();
        ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
        expect_matches(call.out(), y, loose(dtype));
      }
    }
  }
  const at::Tensor x = at::randn({1, 2, 5, 7}).contiguous(at::MemoryFormat::ChannelsLast);
  for (const std::vector<double>& f :
       {std::vector<double>{2.0, 3.0}, std::vector<double>{1.5, 0.7}}) {
    for (bool align : {false, true}) {
      const at::Tensor y = at::upsample_bilinear2d(x, c10::nullopt, align, f);
      KernelCall call("aten::upsample_bilinear2d.vec_out");
      call.tensor(x).none().scalar(align).double_list(f).out_like(y.contiguous()).repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      expect_matches(call.out(), y, loose(at::kFloat));
    }
  }
}

TEST(Resampling, PixelShuffle) {
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {2, 18, 3, 4});
    const at::Tensor y = at::pixel_shuffle(x, 3);
    KernelCall call("aten::pixel_shuffle.out");
    call.tensor(x).scalar(int64_t{3}).out_like(y).repeat_out();
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(), y);
  }
  const at::Tensor x = at::randn({8, 2, 3}).contiguous();
  KernelCall three("aten::pixel_shuffle.out");
  three.tensor(x).scalar(int64_t{2}).out_like(at::pixel_shuffle(x, 2)).repeat_out();
  ASSERT_EQ(three.run(), Error::Ok) << last_error_message();
  expect_matches(three.out(), at::pixel_shuffle(x, 2));
  KernelCall bad("aten::pixel_shuffle.out");
  bad.tensor(at::randn({1, 6, 2, 2}))
      .scalar(int64_t{2})
      .out(at::kFloat, {1, 1, 4, 4}, true)
      .repeat_out();
  EXPECT_EQ(bad.run(), Error::InvalidArgument);
}

}  // namespace
}  // namespace ember::testing
