// The dtype sweep: every registered case runs one kernel on inputs of each of the ten dtypes and
// compares with ATen. ATen refusing a dtype means Ember must refuse it too. The sweep test
// (dtype_sweep_test.cc) fails on any disagreement and, with EMBER_KERNELS_DOC=<path> set, writes
// the op x dtype table of docs/kernels.md from what it observed (scripts/gen_kernels_doc.sh).
//
//   EMBER_SWEEP_CASE("aten::exp.out", [](at::ScalarType dtype, std::string* why) {
//     const at::Tensor x = sweep_input(dtype, {3, 4});
//     return sweep_run("aten::exp.out", [&] { return std::vector{at::exp(x)}; },
//                      [&](KernelCall& c) { c.tensor(x); }, {dtype}, x.sizes(), why);
//   });
//
// Any test file of the conformance executable may add cases; the table lists every case by label.
#pragma once

#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/kernels/aten_reference.h"

namespace ember::testing {

inline const at::ScalarType kSweepTypes[] = {at::kBool,  at::kByte,  at::kChar, at::kShort,
                                             at::kInt,   at::kLong,  at::kHalf, at::kBFloat16,
                                             at::kFloat, at::kDouble};

enum class SweepOutcome {
  Match,         // both ran and agree
  MatchWidened,  // ATen's CPU kernel lacks this dtype; Ember agrees with ATen's result on the
                 // same inputs widened (float32 for 16-bit floats, else float64), converted back
  BothRefuse,    // ATen refuses the dtype and so does Ember
  Mismatch,      // both ran, results differ
  EmberRefuses,  // ATen runs, Ember refuses
  EmberAccepts,  // ATen refuses, Ember runs
};

// True for the outcomes the sweep accepts.
inline bool sweep_passes(SweepOutcome o) {
  return o == SweepOutcome::Match || o == SweepOutcome::MatchWidened ||
         o == SweepOutcome::BothRefuse;
}

using SweepFn = std::function<SweepOutcome(at::ScalarType dtype, std::string* why)>;

struct SweepCase {
  std::string label;  // the table row, normally the kernel's operator name
  SweepFn run;
};

inline std::vector<SweepCase>& sweep_cases() {
  static std::vector<SweepCase> cases;
  return cases;
}

inline bool add_sweep_case(std::string label, SweepFn fn) {
  sweep_cases().push_back({std::move(label), std::move(fn)});
  return true;
}

#define EMBER_SWEEP_CONCAT_INNER_(a, b) a##b
#define EMBER_SWEEP_CONCAT_(a, b) EMBER_SWEEP_CONCAT_INNER_(a, b)
#define EMBER_SWEEP_CASE(label, ...)                                               \
  [[maybe_unused]] static const bool EMBER_SWEEP_CONCAT_(ember_sweep_, __LINE__) = \
      ::ember::testing::add_sweep_case(label, __VA_ARGS__)

// Random values of `dtype`: bool 0/1, uint8 in [0, 255), other integers in [-100, 100), floats
// normal * 4 with a NaN, +inf and -inf planted when there are at least 8 elements.
inline at::Tensor sweep_input(at::ScalarType dtype, at::IntArrayRef sizes, bool specials = true) {
  at::Tensor t;
  if (dtype == at::kBool) {
    t = at::randint(0, 2, sizes).to(at::kBool);
  } else if (at::isFloatingType(dtype)) {
    t = (at::randn(sizes) * 4).to(dtype);
    if (specials && t.numel() >= 8) {
      at::Tensor flat = t.view({-1});
      flat[1] = NAN;
      flat[4] = INFINITY;
      flat[6] = -INFINITY;
    }
  } else if (dtype == at::kByte) {
    t = at::randint(0, 255, sizes).to(dtype);
  } else {
    t = at::randint(-100, 100, sizes).to(dtype);
  }
  return t;
}

// Like sweep_input without zeros (divisors) and without specials.
inline at::Tensor sweep_nonzero(at::ScalarType dtype, at::IntArrayRef sizes) {
  at::Tensor t = sweep_input(dtype, sizes, false);
  if (dtype == at::kBool) return at::ones(sizes, at::kBool);
  return at::where(t == 0, at::ones_like(t), t);
}

// True when `actual` has the dtype, shape and values of `expected` (NaN equal to NaN), within the
// dtype's tolerance; otherwise false with the reason in `why`.
inline bool values_match(const Tensor& actual, const at::Tensor& expected, Tolerance tol,
                         std::string* why) {
  std::ostringstream msg;
  if (to_aten(actual.dtype()) != expected.scalar_type()) {
    msg << "dtype " << to_aten(actual.dtype()) << " vs " << expected.scalar_type();
  } else if (std::vector<int64_t>(actual.sizes().begin(), actual.sizes().end()) !=
             expected.sizes().vec()) {
    msg << "shape differs";
  } else {
    const at::Tensor a = aten_view(actual);
    at::Tensor differ;  // true where the values differ
    if (at::isFloatingType(expected.scalar_type())) {
      const at::Tensor ad = a.to(at::kDouble), ed = expected.to(at::kDouble);
      if (at::allclose(ad, ed, tol.rtol, tol.atol, /*equal_nan=*/true)) return true;
      differ = at::isclose(ad, ed, tol.rtol, tol.atol, /*equal_nan=*/true).logical_not();
      msg << "values differ; max abs diff "
          << (ad - ed).abs().nan_to_num(0, 0, 0).max().item<double>();
    } else {
      if (at::equal(a, expected)) return true;
      differ = a.ne(expected);
      msg << "values differ";
    }
    // Where: the count, and the first element that differs with both values.
    const at::Tensor where = differ.nonzero();
    msg << "; " << where.size(0) << " of " << expected.numel() << " elements";
    if (where.size(0) > 0) {
      const std::vector<int64_t> index(where[0].data_ptr<int64_t>(),
                                       where[0].data_ptr<int64_t>() + where.size(1));
      std::vector<at::indexing::TensorIndex> at_index(index.begin(), index.end());
      msg << ", first at " << at::IntArrayRef(index) << ": got "
          << a.index(at_index).to(at::kDouble).item<double>() << ", expected "
          << expected.index(at_index).to(at::kDouble).item<double>();
    }
  }
  if (why != nullptr) *why = msg.str();
  return false;
}

// One comparison: `aten` computes the expected outputs (throwing when ATen refuses), `inputs`
// pushes the kernel's arguments before the outs. Outs are made like ATen's results, or, when ATen
// refuses, of `fallback_dtypes` and `fallback_shape`. One out is repeated as a tensor, several as
// a TensorList (the out-variant convention).
inline SweepOutcome sweep_run(const std::string& kernel,
                              const std::function<std::vector<at::Tensor>()>& aten,
                              const std::function<void(KernelCall&)>& inputs,
                              const std::vector<at::ScalarType>& fallback_dtypes,
                              at::IntArrayRef fallback_shape, std::string* why,
                              std::optional<Tolerance> tolerance = std::nullopt) {
  std::vector<at::Tensor> expected;
  bool aten_ok = true;
  std::string aten_error;
  try {
    expected = aten();
  } catch (const std::exception& e) {
    aten_ok = false;
    aten_error = e.what();
    aten_error = aten_error.substr(0, aten_error.find('\n'));
  }
  KernelCall call(kernel);
  inputs(call);
  if (aten_ok) {
    for (const at::Tensor& e : expected) call.out_like(e);
  } else {
    for (at::ScalarType d : fallback_dtypes) call.out(d, fallback_shape, false);
  }
  const size_t num_outs = aten_ok ? expected.size() : fallback_dtypes.size();
  if (num_outs == 1) {
    call.repeat_out();
  } else {
    call.repeat_outs(num_outs);
  }
  const Error err = call.run();
  if (!aten_ok) {
    if (err != Error::Ok) return SweepOutcome::BothRefuse;
    *why = "ATen refuses (" + aten_error + "), Ember ran";
    return SweepOutcome::EmberAccepts;
  }
  if (err != Error::Ok) {
    *why = std::string("Ember refused: ") + last_error_message();
    return SweepOutcome::EmberRefuses;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tolerance tol = tolerance.value_or(default_tolerance(expected[i].scalar_type()));
    if (!values_match(call.out(i), expected[i], tol, why)) return SweepOutcome::Mismatch;
  }
  return SweepOutcome::Match;
}

// `outs` with their floating tensors converted to `dtype` (index outputs are left as they are).
inline std::vector<at::Tensor> floating_as(std::vector<at::Tensor> outs, at::ScalarType dtype) {
  for (at::Tensor& t : outs) {
    if (t.is_floating_point()) t = t.to(dtype);
  }
  return outs;
}

// Like sweep_run, for cases whose reference can be computed at another dtype: `aten(t)` computes
// the expected outs with the case's inputs converted to `t` (t is the sweep's dtype, or a wider
// one).
// - When ATen refuses float16 or bfloat16 (a CPU kernel that libtorch 1.13 lacks), the reference
//   is ATen's float32 result converted to the dtype, compared at `widened_tolerance`; Ember may run
//   (MatchWidened) or refuse too (BothRefuse).
// - With `widen_integral`, the same for integer and bool dtypes through float64 (for ops whose
//   result is exact there: element selection, small integer sums).
// - When ATen refuses another dtype, Ember must refuse it; its outs are shaped like ATen's float32
//   result, so that only the dtype can make it refuse.
// An out whose ATen result is not contiguous gets that result's layout (dim order).
inline SweepOutcome sweep_run_as(const std::string& kernel, at::ScalarType dtype,
                                 const std::function<std::vector<at::Tensor>(at::ScalarType)>& aten,
                                 const std::function<void(KernelCall&)>& inputs, std::string* why,
                                 std::optional<Tolerance> tolerance = std::nullopt,
                                 std::optional<Tolerance> widened_tolerance = std::nullopt,
                                 bool widen_integral = false) {
  const auto first_line = [](const std::exception& e) {
    const std::string s = e.what();
    return s.substr(0, s.find('\n'));
  };
  std::vector<at::Tensor> expected;
  bool aten_ok = true, widened = false;
  std::string aten_error;
  try {
    expected = aten(dtype);
  } catch (const std::exception& e) {
    aten_ok = false;
    aten_error = first_line(e);
  }
  if (!aten_ok) {
    // Outs for Ember: the widened reference (also the expected result when widening applies).
    try {
      const bool half = dtype == at::kHalf || dtype == at::kBFloat16;
      const bool wide = widen_integral && !at::isFloatingType(dtype);
      expected = floating_as(aten(wide ? at::kDouble : at::kFloat), dtype);
      widened = half || wide;
    } catch (const std::exception& e) {
      *why = "ATen refuses float32 too: " + first_line(e);
      return SweepOutcome::Mismatch;
    }
  }
  KernelCall call(kernel);
  inputs(call);
  for (const at::Tensor& e : expected) {
    if (e.is_contiguous()) {
      call.out_like(e);
    } else {
      call.out_like_layout(e);
    }
  }
  if (expected.size() == 1) {
    call.repeat_out();
  } else {
    call.repeat_outs(expected.size());
  }
  const Error err = call.run();
  if (!aten_ok && (!widened || err != Error::Ok)) {
    if (err != Error::Ok) return SweepOutcome::BothRefuse;
    *why = "ATen refuses (" + aten_error + "), Ember ran";
    return SweepOutcome::EmberAccepts;
  }
  if (err != Error::Ok) {
    *why = std::string("Ember refused: ") + last_error_message();
    return SweepOutcome::EmberRefuses;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::optional<Tolerance> given = widened ? widened_tolerance : tolerance;
    const Tolerance tol = given.value_or(default_tolerance(expected[i].scalar_type()));
    if (!values_match(call.out(i), expected[i], tol, why)) return SweepOutcome::Mismatch;
  }
  return widened ? SweepOutcome::MatchWidened : SweepOutcome::Match;
}

}  // namespace ember::testing
