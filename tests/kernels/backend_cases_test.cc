// Dtype-sweep cases (dtype_sweep.h) in the configurations backends take: the other cases choose
// arguments that exercise the portable kernels (alpha 2, ceil mode, uneven adaptive windows,
// normalization over two dims), which the cpu backend leaves portable. These run in the kernel
// suite like any case, and through each backend in the backend conformance suite
// (tests/conformance), where a node the backend claims must match ATen too. NaN and ±inf are
// planted as in every case; one softmax row holds +inf and no NaN.
#include <cmath>

#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

using Outs = std::vector<at::Tensor>;

bool floating(at::ScalarType t) { return at::isFloatingType(t); }

// Results that sum many terms: ATen sums in another order (the tolerances of sweep_cases_test).
std::optional<Tolerance> sum_tolerance(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return Tolerance{1e-4, 1e-4};
    case at::kHalf:
      return Tolerance{1e-2, 1e-2};
    case at::kBFloat16:
      return Tolerance{5e-2, 8e-2};
    default:
      return std::nullopt;
  }
}

// sweep_input scaled to about unit size for floating dtypes (exact: a power of two).
at::Tensor unit_input(at::ScalarType dtype, at::IntArrayRef sizes, bool specials = true) {
  const at::Tensor t = sweep_input(dtype, sizes, specials);
  return floating(dtype) ? t / 4 : t;
}

const bool kBackendCases = [] {
  // alpha 1 (the cpu backend takes no other), one operand broadcast.
  add_sweep_case("aten::add.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {2, 3, 4, 5}), b = sweep_input(dtype, {3, 1, 1});
    const bool is_bool = dtype == at::kBool;
    return sweep_run(
        "aten::add.out", [&] { return Outs{at::add(a, b)}; },
        [&](KernelCall& c) {
          c.tensor(a).tensor(b);
          if (is_bool)
            c.scalar(true);
          else
            c.scalar(1);
        },
        {dtype}, a.sizes(), why);
  });
  add_sweep_case("aten::addmm.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor self = unit_input(dtype, {4}), a = unit_input(dtype, {3, 5}),
                     b = unit_input(dtype, {5, 4});
    return sweep_run_as(
        "aten::addmm.out", dtype,
        [&](at::ScalarType t) { return Outs{at::addmm(self.to(t), a.to(t), b.to(t))}; },
        [&](KernelCall& c) { c.tensor(self).tensor(a).tensor(b).scalar(1).scalar(1); }, why,
        sum_tolerance(dtype), sum_tolerance(dtype));
  });
  // Plain ELU (scale and input_scale 1, contract C30). float16: libtorch 1.13's CPU elu lacks it
  // (PyTorch 2 has it); compared widened.
  add_sweep_case("aten::elu.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 5});
    return sweep_run_as(
        "aten::elu.out", dtype, [&](at::ScalarType t) { return Outs{at::elu(x.to(t), 0.5)}; },
        [&](KernelCall& c) { c.tensor(x).scalar(0.5).scalar(1).scalar(1); }, why);
  });
  // Rows of finite values, one holding +inf (ATen: a NaN row, inf - inf), one -inf. float16:
  // libtorch 1.13's CPU softmax lacks it (PyTorch 2 has it); compared widened.
  add_sweep_case("aten::_softmax.out", [](at::ScalarType dtype, std::string* why) {
    at::Tensor x = sweep_input(dtype, {3, 4}, /*specials=*/false);
    if (floating(dtype)) {
      x[1][2] = INFINITY;
      x[2][0] = -INFINITY;
    }
    return sweep_run_as(
        "aten::_softmax.out", dtype,
        [&](at::ScalarType t) { return Outs{at::_softmax(x.to(t), -1, false)}; },
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{-1}).scalar(false); }, why);
  });
  // Mean over H and W of NCHW.
  add_sweep_case("aten::mean.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {2, 3, 4, 5});
    return sweep_run(
        "aten::mean.out",
        [&] {
          return Outs{at::mean(x, {-1, -2}, true)};
        },
        [&](KernelCall& c) {
          c.tensor(x).int_list({-1, -2}).scalar(true).none();
        },
        {dtype}, {2, 3, 1, 1}, why, sum_tolerance(dtype));
  });
  // Without ceil mode or a divisor, with and without the padding counted.
  for (const bool include_pad : {false, true}) {
    add_sweep_case("aten::avg_pool2d.out", [=](at::ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {1, 2, 7, 6});
      return sweep_run_as(
          "aten::avg_pool2d.out", dtype,
          [&](at::ScalarType t) {
            return Outs{at::avg_pool2d(x.to(t), {3, 3}, {2, 2}, {1, 1}, false, include_pad)};
          },
          [&](KernelCall& c) {
            c.tensor(x).int_list({3, 3}).int_list({2, 2}).int_list({1, 1}).scalar(false).scalar(
                include_pad);
            c.none();
          },
          why, sum_tolerance(dtype), sum_tolerance(dtype), /*widen_integral=*/true);
    });
  }
  // Windows of one size (the input a multiple of the output), and global pooling.
  for (const char* label : {"aten::_adaptive_avg_pool2d.out", "aten::adaptive_avg_pool2d.out"}) {
    for (const std::vector<int64_t>& size : {std::vector<int64_t>{3, 2}, {1, 1}}) {
      add_sweep_case(label, [=](at::ScalarType dtype, std::string* why) {
        const at::Tensor x = sweep_input(dtype, {2, 3, 6, 8});
        return sweep_run_as(
            label, dtype,
            [&](at::ScalarType t) { return Outs{at::_adaptive_avg_pool2d(x.to(t), size)}; },
            [&](KernelCall& c) { c.tensor(x).int_list(size); }, why, sum_tolerance(dtype),
            sum_tolerance(dtype));
      });
    }
  }
  // Over the last dim only. Rows of 8, so that NaN, +inf and -inf share the first row: for a row
  // holding an infinity and no NaN, ATen's mean (Welford's update) is NaN and the portable
  // kernel's is the infinity (a deviation to settle in the kernel, not here).
  add_sweep_case("aten::native_layer_norm.out", [](at::ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 8});
    const at::Tensor w = sweep_input(dtype, {8}, false), b = sweep_input(dtype, {8}, false);
    return sweep_run_as(
        "aten::native_layer_norm.out", dtype,
        [&](at::ScalarType t) {
          const auto [y, mean, rstd] = at::native_layer_norm(x.to(t), {8}, w.to(t), b.to(t), 1e-5);
          return Outs{y, mean, rstd};
        },
        [&](KernelCall& c) { c.tensor(x).int_list({8}).tensor(w).tensor(b).scalar(1e-5); }, why,
        sum_tolerance(dtype), sum_tolerance(dtype));
  });
  return true;
}();

}  // namespace
}  // namespace ember::testing
