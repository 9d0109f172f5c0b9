// Edge-value sweep cases for the ops a backend is most tempted to get wrong with NaN and
// infinities: they join the kernel suite's rows of the same label in the backend
// conformance suite, so that each of these bugs fails the suite if it comes back.
//   relu, relu6 (hardtanh 0..6): NaN stays NaN; +-inf clamp.
//   max pooling: a window holding NaN gives NaN, a window of NaN alone too (a 1x1 window, as
//     F.max_pool1d(x, 1) exports); +-inf are ordinary maxima.
//   softmax: a row with NaN, or +inf, or only -inf is all NaN; -inf among finite values gives 0;
//     along the last dim and along the first.
#include <cmath>
#include <limits>

#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

using Outs = std::vector<at::Tensor>;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// [nan, -1, .5, inf, -inf, 2, 6.5, -0] in floating dtypes; the sweep's input otherwise.
at::Tensor edge_row(at::ScalarType dtype) {
  if (!at::isFloatingType(dtype)) return sweep_input(dtype, {2, 4});
  return at::tensor({kNan, -1.f, .5f, kInf, -kInf, 2.f, 6.5f, -0.f}).view({2, 4}).to(dtype);
}

EMBER_SWEEP_CASE("aten::relu.out", [](at::ScalarType dtype, std::string* why) {
  const at::Tensor x = edge_row(dtype);
  // float16: libtorch 1.13's CPU kernel lacks it (PyTorch 2 has it); compared widened.
  return sweep_run_as(
      "aten::relu.out", dtype, [&](at::ScalarType t) { return Outs{at::relu(x.to(t))}; },
      [&](KernelCall& c) { c.tensor(x); }, why);
});

EMBER_SWEEP_CASE("aten::hardtanh.out", [](at::ScalarType dtype, std::string* why) {
  const at::Tensor x = edge_row(dtype);
  return sweep_run_as(
      "aten::hardtanh.out", dtype,
      [&](at::ScalarType t) { return Outs{at::hardtanh(x.to(t), 0, 6)}; },
      [&](KernelCall& c) { c.tensor(x).scalar(0).scalar(6); }, why);
});

// F.max_pool2d(x, 2) on [[nan, 1, 2, 3], [.5, -1, 4, nan], [1, 2, 3, 4], [-5, -6, -7, -8]]
// (ATen: [nan, nan, 2, 4]), and a 1x1 window over a row of NaN and infinities.
EMBER_SWEEP_CASE("aten::max_pool2d_with_indices.out", [](at::ScalarType dtype, std::string* why) {
  at::Tensor x = sweep_input(dtype, {1, 1, 4, 4}, /*specials=*/false);
  if (at::isFloatingType(dtype)) {
    x = at::tensor(
            {kNan, 1.f, 2.f, 3.f, .5f, -1.f, 4.f, kNan, 1.f, 2.f, 3.f, 4.f, -5.f, -6.f, -7.f, -8.f})
            .view({1, 1, 4, 4})
            .to(dtype);
  }
  return sweep_run_as(
      "aten::max_pool2d_with_indices.out", dtype,
      [&](at::ScalarType t) {
        const auto [y, i] = at::max_pool2d_with_indices(x.to(t), {2, 2}, {2, 2});
        return Outs{y, i};
      },
      [&](KernelCall& c) {
        c.tensor(x).int_list({2, 2}).int_list({2, 2}).int_list({0, 0}).int_list({1, 1}).scalar(
            false);
      },
      why, std::nullopt, std::nullopt, /*widen_integral=*/true);
});
EMBER_SWEEP_CASE("aten::max_pool2d_with_indices.out", [](at::ScalarType dtype, std::string* why) {
  at::Tensor x = sweep_input(dtype, {1, 2, 1, 3}, /*specials=*/false);
  if (at::isFloatingType(dtype)) {
    x = at::tensor({kNan, -kInf, 3.f, kInf, -1.f, kNan}).view({1, 2, 1, 3}).to(dtype);
  }
  return sweep_run_as(
      "aten::max_pool2d_with_indices.out", dtype,
      [&](at::ScalarType t) {
        const auto [y, i] = at::max_pool2d_with_indices(x.to(t), {1, 1}, {1, 1});
        return Outs{y, i};
      },
      [&](KernelCall& c) {
        c.tensor(x).int_list({1, 1}).int_list({1, 1}).int_list({0, 0}).int_list({1, 1}).scalar(
            false);
      },
      why, std::nullopt, std::nullopt, /*widen_integral=*/true);
});

// Rows: NaN, +inf, only -inf, -inf among finite values, finite values; softmax along the rows
// (dim -1) and along the columns of the transpose (dim 0).
at::Tensor softmax_rows(at::ScalarType dtype, bool transposed) {
  at::Tensor x = sweep_input(dtype, {5, 4}, /*specials=*/false);
  if (at::isFloatingType(dtype)) {
    x = at::tensor({kNan,  1.f,   2.f,   3.f, kInf, 1.f,   2.f, .5f, -kInf, -kInf,
                    -kInf, -kInf, -kInf, 1.f, 2.f,  -kInf, 1.f, 2.f, 3.f,   4.f})
            .view({5, 4})
            .to(dtype);
  }
  return transposed ? x.t().contiguous() : x;
}

// float16: libtorch 1.13's CPU softmax lacks it (PyTorch 2 has it); compared widened.
EMBER_SWEEP_CASE("aten::_softmax.out", [](at::ScalarType dtype, std::string* why) {
  const at::Tensor x = softmax_rows(dtype, false);
  return sweep_run_as(
      "aten::_softmax.out", dtype,
      [&](at::ScalarType t) { return Outs{at::_softmax(x.to(t), -1, false)}; },
      [&](KernelCall& c) { c.tensor(x).scalar(int64_t{-1}).scalar(false); }, why);
});
EMBER_SWEEP_CASE("aten::_softmax.out", [](at::ScalarType dtype, std::string* why) {
  const at::Tensor x = softmax_rows(dtype, true);
  return sweep_run_as(
      "aten::_softmax.out", dtype,
      [&](at::ScalarType t) { return Outs{at::_softmax(x.to(t), 0, false)}; },
      [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).scalar(false); }, why);
});

}  // namespace
}  // namespace ember::testing
