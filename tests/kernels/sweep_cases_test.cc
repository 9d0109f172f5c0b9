// Dtype-sweep cases (dtype_sweep.h) for the kernels whose own conformance tests cover shapes and
// edge cases but not every dtype: the Scalar-first binary overloads, the multi-dim any/all, linear
// algebra, convolution, normalization, pooling, resampling, and the shape, indexing and factory
// ops. With the cases of the family test files, every kernel of ops.inc has a row in
// docs/kernels.md (DtypeSweep.EveryKernelHasACase checks it).
#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

using Outs = std::vector<at::Tensor>;
using at::ScalarType;

bool floating(ScalarType t) { return at::isFloatingType(t); }

// Tolerances of results that accumulate (products, norms, averages): ATen sums in another order.
Tolerance accumulate_tolerance(ScalarType t) {
  switch (t) {
    case at::kFloat:
      return {1e-4, 1e-4};
    case at::kDouble:
      return {1e-10, 1e-10};
    case at::kHalf:
      return {1e-2, 1e-2};
    case at::kBFloat16:
      return {5e-2, 8e-2};
    default:
      return {0, 0};
  }
}

// Distinct values of `dtype` (so that max/sort/topk indices are unambiguous), with a NaN, +inf and
// -inf planted in floating inputs; bool has only two values.
at::Tensor distinct_input(ScalarType dtype, at::IntArrayRef sizes) {
  if (dtype == at::kBool) return sweep_input(dtype, sizes);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  at::Tensor t = at::randperm(n, at::kLong);
  if (dtype != at::kByte) t = t - n / 2;
  if (floating(dtype)) t = t.to(at::kFloat) * 0.25;  // exact in every floating dtype for n < 256
  t = t.reshape(sizes).to(dtype);
  if (floating(dtype) && n >= 8) {
    at::Tensor flat = t.view({-1});
    flat[1] = NAN;
    flat[4] = INFINITY;
    flat[6] = -INFINITY;
  }
  return t;
}

// sweep_input scaled to about unit size for floating dtypes (exact: a power of two), for results
// that sum many products, so that 16-bit rounding stays within the tolerances.
at::Tensor unit_input(ScalarType dtype, at::IntArrayRef sizes, bool specials = true) {
  const at::Tensor t = sweep_input(dtype, sizes, specials);
  return floating(dtype) ? t / 4 : t;
}

// One case whose expected outs ATen computes from the inputs converted to a dtype (sweep_run_as).
void add_case(const std::string& label, std::function<SweepOutcome(ScalarType, std::string*)> fn) {
  add_sweep_case(label, std::move(fn));
}

// A Scalar that is 2.5 for floating dtypes and 3 otherwise (bool: true).
void push_scalar(KernelCall& c, ScalarType dtype, double f = 2.5, int64_t i = 3) {
  if (dtype == at::kBool) {
    c.scalar(true);
  } else if (floating(dtype)) {
    c.scalar(f);
  } else {
    c.scalar(i);
  }
}
at::Scalar aten_scalar(ScalarType dtype, double f = 2.5, int64_t i = 3) {
  if (dtype == at::kBool) return at::Scalar(true);
  if (floating(dtype)) return at::Scalar(f);
  return at::Scalar(i);
}

// --- binary ops with the Scalar first, and the rounding-mode division by a Scalar

const bool kBinaryCases = [] {
  using ScalarTensorFn = std::function<at::Tensor(const at::Scalar&, const at::Tensor&)>;
  const std::vector<std::pair<std::string, ScalarTensorFn>> scalar_first = {
      {"aten::bitwise_and.Scalar_Tensor_out",
       [](auto& s, auto& t) { return at::bitwise_and(s, t); }},
      {"aten::bitwise_or.Scalar_Tensor_out", [](auto& s, auto& t) { return at::bitwise_or(s, t); }},
      {"aten::bitwise_xor.Scalar_Tensor_out",
       [](auto& s, auto& t) { return at::bitwise_xor(s, t); }},
      {"aten::remainder.Scalar_Tensor_out", [](auto& s, auto& t) { return at::remainder(s, t); }},
      {"aten::pow.Scalar_out", [](auto& s, auto& t) { return at::pow(s, t); }},
  };
  for (const auto& [label, fn] : scalar_first) {
    add_case(label, [label = label, fn = fn](ScalarType dtype, std::string* why) {
      // remainder divides by the tensor; pow of an integer base needs non-negative exponents.
      at::Tensor x = sweep_nonzero(dtype, {3, 4});
      if (label == "aten::pow.Scalar_out" && dtype != at::kBool && !floating(dtype)) {
        x = at::randint(0, 5, {3, 4}).to(dtype);
      }
      if (label == "aten::pow.Scalar_out" && floating(dtype)) x = sweep_input(dtype, {3, 4});
      return sweep_run(
          label, [&] { return Outs{fn(aten_scalar(dtype), x)}; },
          [&](KernelCall& c) {
            push_scalar(c, dtype);
            c.tensor(x);
          },
          {dtype}, x.sizes(), why);
    });
  }
  for (const char* mode : {"trunc", "floor"}) {
    add_case("aten::div.Scalar_mode_out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {3, 4});
      return sweep_run(
          "aten::div.Scalar_mode_out",
          [&] { return Outs{at::div(x, aten_scalar(dtype, 2.5, -3), mode)}; },
          [&](KernelCall& c) {
            c.tensor(x);
            push_scalar(c, dtype, 2.5, -3);
            c.string(mode);
          },
          {dtype}, x.sizes(), why);
    });
  }
  return true;
}();

// --- any/all over several dims (ATen 1.13 has no dims overload: reduced one dim at a time, which
// keeps ATen's result dtype rule, uint8 for uint8 and bool otherwise)

const bool kReduceCases = [] {
  for (const bool any : {true, false}) {
    const std::string label = any ? "aten::any.dims_out" : "aten::all.dims_out";
    for (const bool keepdim : {false, true}) {
      add_case(label, [=](ScalarType dtype, std::string* why) {
        at::Tensor x = sweep_input(dtype, {3, 4, 5});
        // Some rows all zero and some all non-zero, so that any and all differ by row.
        x = at::where(at::arange(3).reshape({3, 1, 1}) == 0, at::zeros_like(x), x);
        return sweep_run_as(
            label, dtype,
            [&](ScalarType) {
              const auto f = [&](const at::Tensor& t, int64_t d) {
                return any ? at::any(t, d, keepdim) : at::all(t, d, keepdim);
              };
              return Outs{f(f(x, 2), 0)};
            },
            [&](KernelCall& c) {
              c.tensor(x).int_list({0, -1}).scalar(keepdim);
            },
            why);
      });
    }
  }
  return true;
}();

// --- linear algebra and convolution (ATen 1.13 has no float16 matmul or convolution on CPU)

const bool kLinalgCases = [] {
  add_case("aten::mm.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor a = unit_input(dtype, {3, 5}), b = unit_input(dtype, {5, 4});
    return sweep_run_as(
        "aten::mm.out", dtype, [&](ScalarType t) { return Outs{at::mm(a.to(t), b.to(t))}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b); }, why, accumulate_tolerance(dtype),
        accumulate_tolerance(dtype));
  });
  add_case("aten::bmm.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor a = unit_input(dtype, {2, 3, 5}), b = unit_input(dtype, {2, 5, 4});
    return sweep_run_as(
        "aten::bmm.out", dtype, [&](ScalarType t) { return Outs{at::bmm(a.to(t), b.to(t))}; },
        [&](KernelCall& c) { c.tensor(a).tensor(b); }, why, accumulate_tolerance(dtype),
        accumulate_tolerance(dtype));
  });
  add_case("aten::addmm.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor self = unit_input(dtype, {4}), a = unit_input(dtype, {3, 5}),
                     b = unit_input(dtype, {5, 4});
    const at::Scalar beta = aten_scalar(dtype, 0.5, 3), alpha = aten_scalar(dtype, 2.0, 2);
    return sweep_run_as(
        "aten::addmm.out", dtype,
        [&](ScalarType t) { return Outs{at::addmm(self.to(t), a.to(t), b.to(t), beta, alpha)}; },
        [&](KernelCall& c) {
          c.tensor(self).tensor(a).tensor(b);
          push_scalar(c, dtype, 0.5, 3);
          push_scalar(c, dtype, 2.0, 2);
        },
        why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  add_case("aten::linear.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = unit_input(dtype, {2, 3, 5}), w = unit_input(dtype, {4, 5}),
                     bias = unit_input(dtype, {4});
    return sweep_run_as(
        "aten::linear.out", dtype,
        [&](ScalarType t) { return Outs{at::linear(x.to(t), w.to(t), bias.to(t))}; },
        [&](KernelCall& c) { c.tensor(x).tensor(w).tensor(bias); }, why,
        accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  add_case("aten::baddbmm.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor self = unit_input(dtype, {1, 3, 4}), a = unit_input(dtype, {2, 3, 5}),
                     b = unit_input(dtype, {2, 5, 4});
    const at::Scalar beta = aten_scalar(dtype, 1.5, 2), alpha = aten_scalar(dtype, -1.0, -1);
    return sweep_run_as(
        "aten::baddbmm.out", dtype,
        [&](ScalarType t) { return Outs{at::baddbmm(self.to(t), a.to(t), b.to(t), beta, alpha)}; },
        [&](KernelCall& c) {
          c.tensor(self).tensor(a).tensor(b);
          push_scalar(c, dtype, 1.5, 2);
          push_scalar(c, dtype, -1.0, -1);
        },
        why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  // Convolution: a strided, padded, grouped 2-D one and a transposed 1-D one. The weights have no
  // NaN or inf: ATen's convolution may skip the padding that Ember multiplies (0 * inf).
  struct Conv {
    std::vector<int64_t> input, weight, stride, padding, dilation;
    bool transposed;
    std::vector<int64_t> output_padding;
    int64_t groups;
  };
  for (const Conv& conv :
       {Conv{{1, 4, 6, 6}, {6, 2, 3, 3}, {2, 1}, {1, 1}, {1, 1}, false, {0, 0}, 2},
        Conv{{1, 4, 7}, {6, 4, 3}, {1}, {2}, {2}, false, {0}, 1},
        Conv{{1, 4, 5}, {4, 3, 3}, {2}, {1}, {1}, true, {1}, 2}}) {
    add_case("aten::convolution.out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = unit_input(dtype, conv.input);
      const at::Tensor w = unit_input(dtype, conv.weight, false);
      const int64_t c_out = conv.transposed ? conv.weight[1] * conv.groups : conv.weight[0];
      const at::Tensor b = unit_input(dtype, {c_out}, false);
      return sweep_run_as(
          "aten::convolution.out", dtype,
          [&](ScalarType t) {
            return Outs{at::convolution(x.to(t), w.to(t), b.to(t), conv.stride, conv.padding,
                                        conv.dilation, conv.transposed, conv.output_padding,
                                        conv.groups)
                            .contiguous()};
          },
          [&](KernelCall& c) {
            c.tensor(x)
                .tensor(w)
                .tensor(b)
                .int_list(conv.stride)
                .int_list(conv.padding)
                .int_list(conv.dilation)
                .scalar(conv.transposed)
                .int_list(conv.output_padding)
                .scalar(conv.groups);
          },
          why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
    });
  }
  return true;
}();

// --- normalization, pooling and resampling

const bool kNormPoolCases = [] {
  add_case("aten::native_layer_norm.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 6});
    const at::Tensor w = sweep_input(dtype, {4, 6}, false), b = sweep_input(dtype, {4, 6}, false);
    return sweep_run_as(
        "aten::native_layer_norm.out", dtype,
        [&](ScalarType t) {
          const auto [y, mean, rstd] =
              at::native_layer_norm(x.to(t), {4, 6}, w.to(t), b.to(t), 1e-5);
          return Outs{y, mean, rstd};
        },
        [&](KernelCall& c) {
          c.tensor(x).int_list({4, 6}).tensor(w).tensor(b).scalar(1e-5);
        },
        why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  add_case("aten::native_group_norm.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {2, 6, 5});
    const at::Tensor w = sweep_input(dtype, {6}, false), b = sweep_input(dtype, {6}, false);
    return sweep_run_as(
        "aten::native_group_norm.out", dtype,
        [&](ScalarType t) {
          const auto [y, mean, rstd] =
              at::native_group_norm(x.to(t), w.to(t), b.to(t), 2, 6, 5, 3, 1e-5);
          return Outs{y, mean, rstd};
        },
        [&](KernelCall& c) {
          c.tensor(x)
              .tensor(w)
              .tensor(b)
              .scalar(int64_t{2})
              .scalar(int64_t{6})
              .scalar(int64_t{5})
              .scalar(int64_t{3})
              .scalar(1e-5);
        },
        why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  add_case("aten::_native_batch_norm_legit_no_training.out", [](ScalarType dtype,
                                                                std::string* why) {
    const at::Tensor x = sweep_input(dtype, {2, 4, 5});
    const at::Tensor w = sweep_input(dtype, {4}, false), b = sweep_input(dtype, {4}, false);
    const at::Tensor mean = sweep_input(dtype, {4}, false);
    const at::Tensor var = floating(dtype) ? (at::rand({4}) + 0.5).to(dtype) : at::ones({4}, dtype);
    return sweep_run_as(
        "aten::_native_batch_norm_legit_no_training.out", dtype,
        [&](ScalarType t) {
          const at::Tensor y = std::get<0>(at::native_batch_norm(
              x.to(t), w.to(t), b.to(t), mean.to(t), var.to(t), false, 0.1, 1e-5));
          // Without training the saved statistics are empty.
          return Outs{y, at::empty({0}, y.options()), at::empty({0}, y.options())};
        },
        [&](KernelCall& c) {
          c.tensor(x).tensor(w).tensor(b).tensor(mean).tensor(var).scalar(0.1).scalar(1e-5);
        },
        why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  add_case("aten::max_pool2d_with_indices.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = distinct_input(dtype, {1, 2, 7, 6});
    return sweep_run_as(
        "aten::max_pool2d_with_indices.out", dtype,
        [&](ScalarType t) {
          const auto [y, i] =
              at::max_pool2d_with_indices(x.to(t), {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
          return Outs{y, i};
        },
        [&](KernelCall& c) {
          c.tensor(x).int_list({3, 3}).int_list({2, 2}).int_list({1, 1}).int_list({1, 1}).scalar(
              true);
        },
        why, std::nullopt, std::nullopt, /*widen_integral=*/true);
  });
  for (const bool include_pad : {false, true}) {
    add_case("aten::avg_pool2d.out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {1, 2, 7, 6});
      const c10::optional<int64_t> divisor =
          include_pad ? c10::optional<int64_t>(4) : c10::optional<int64_t>();
      return sweep_run_as(
          "aten::avg_pool2d.out", dtype,
          [&](ScalarType t) {
            return Outs{
                at::avg_pool2d(x.to(t), {3, 3}, {2, 2}, {1, 1}, true, include_pad, divisor)};
          },
          [&](KernelCall& c) {
            c.tensor(x).int_list({3, 3}).int_list({2, 2}).int_list({1, 1}).scalar(true).scalar(
                include_pad);
            if (divisor) {
              c.scalar(*divisor);
            } else {
              c.none();
            }
          },
          why, accumulate_tolerance(dtype), accumulate_tolerance(dtype), /*widen_integral=*/true);
    });
  }
  for (const char* label : {"aten::_adaptive_avg_pool2d.out", "aten::adaptive_avg_pool2d.out"}) {
    add_case(label, [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {2, 3, 7, 9});
      return sweep_run_as(
          label, dtype,
          [&](ScalarType t) {
            return Outs{at::_adaptive_avg_pool2d(x.to(t), {3, 2})};
          },
          [&](KernelCall& c) {
            c.tensor(x).int_list({3, 2});
          },
          why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
    });
  }
  add_case("aten::upsample_nearest2d.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {2, 3, 4, 5});
    return sweep_run_as(
        "aten::upsample_nearest2d.out", dtype,
        [&](ScalarType t) {
          return Outs{at::upsample_nearest2d(x.to(t), {7, 9})};
        },
        [&](KernelCall& c) {
          c.tensor(x).int_list({7, 9}).none().none();
        },
        why, std::nullopt, std::nullopt, /*widen_integral=*/true);
  });
  add_case("aten::upsample_nearest2d.vec_out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {2, 3, 4, 5});
    const std::vector<double> f = {1.5, 0.7};
    return sweep_run_as(
        "aten::upsample_nearest2d.vec_out", dtype,
        [&](ScalarType t) { return Outs{at::upsample_nearest2d(x.to(t), c10::nullopt, f)}; },
        [&](KernelCall& c) { c.tensor(x).none().double_list(f); }, why, std::nullopt, std::nullopt,
        /*widen_integral=*/true);
  });
  // bfloat16 without NaN and inf: libtorch 1.13's bfloat16 kernel (align_corners=False) spreads
  // them to output points whose weight for them is 0, unlike its float32 kernel, which Ember
  // follows.
  for (const bool align : {false, true}) {
    add_case("aten::upsample_bilinear2d.out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = unit_input(dtype, {2, 3, 4, 5}, /*specials=*/dtype != at::kBFloat16);
      return sweep_run_as(
          "aten::upsample_bilinear2d.out", dtype,
          [&](ScalarType t) {
            return Outs{at::upsample_bilinear2d(x.to(t), {7, 9}, align)};
          },
          [&](KernelCall& c) {
            c.tensor(x).int_list({7, 9}).scalar(align).none().none();
          },
          why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
    });
  }
  add_case("aten::upsample_bilinear2d.vec_out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = unit_input(dtype, {2, 3, 4, 5}, /*specials=*/dtype != at::kBFloat16);
    const std::vector<double> f = {1.5, 0.7};
    return sweep_run_as(
        "aten::upsample_bilinear2d.vec_out", dtype,
        [&](ScalarType t) {
          return Outs{at::upsample_bilinear2d(x.to(t), c10::nullopt, false, f)};
        },
        [&](KernelCall& c) { c.tensor(x).none().scalar(false).double_list(f); }, why,
        accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  add_case("aten::pixel_shuffle.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {1, 8, 2, 3});
    return sweep_run_as(
        "aten::pixel_shuffle.out", dtype,
        [&](ScalarType t) { return Outs{at::pixel_shuffle(x.to(t), 2)}; },
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{2}); }, why);
  });
  return true;
}();

// --- shape and data movement

// A one-input case whose ATen reference is `f(x)` (made contiguous: Ember's outs are dense).
void add_shape_case(const std::string& label, std::vector<int64_t> sizes,
                    std::function<at::Tensor(const at::Tensor&)> f,
                    std::function<void(KernelCall&)> args) {
  add_case(label, [=](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, sizes);
    return sweep_run_as(
        label, dtype, [&](ScalarType t) { return Outs{f(x.to(t)).contiguous()}; },
        [&](KernelCall& c) {
          c.tensor(x);
          args(c);
        },
        why);
  });
}

// A case whose out is one TensorList (split_with_sizes_copy, split_copy, unbind_copy).
void add_list_case(const std::string& label,
                   std::function<std::vector<at::Tensor>(const at::Tensor&)> f,
                   std::function<void(KernelCall&)> args, bool repeated) {
  add_case(label, [=](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 7});
    std::vector<at::Tensor> parts;
    for (const at::Tensor& p : f(x)) parts.push_back(p.contiguous());
    KernelCall call(label);
    call.tensor(x);
    args(call);
    call.out_list(parts);
    if (repeated) call.repeat_out();
    if (call.run() != Error::Ok) {
      *why = std::string("Ember refused: ") + last_error_message();
      return SweepOutcome::EmberRefuses;
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!values_match(call.out(i), parts[i], default_tolerance(dtype), why)) {
        return SweepOutcome::Mismatch;
      }
    }
    return SweepOutcome::Match;
  });
}

const bool kShapeCases = [] {
  add_shape_case(
      "aten::view_copy.out", {2, 3, 4},
      [](auto& x) {
        return x.view({4, -1});
      },
      [](KernelCall& c) {
        c.int_list({4, -1});
      });
  add_shape_case(
      "aten::permute_copy.out", {2, 3, 4},
      [](auto& x) {
        return x.permute({2, 0, 1});
      },
      [](KernelCall& c) {
        c.int_list({2, 0, 1});
      });
  add_shape_case(
      "aten::transpose_copy.int_out", {2, 3, 4}, [](auto& x) { return x.transpose(0, -1); },
      [](KernelCall& c) { c.scalar(int64_t{0}).scalar(int64_t{-1}); });
  add_shape_case(
      "aten::expand_copy.out", {3, 1, 4},
      [](auto& x) {
        return x.expand({2, 3, 5, -1});
      },
      [](KernelCall& c) {
        c.int_list({2, 3, 5, -1}).scalar(false);
      });
  add_shape_case(
      "aten::slice_copy.Tensor_out", {3, 4, 5}, [](auto& x) { return x.slice(-1, 1, 100, 2); },
      [](KernelCall& c) {
        c.scalar(int64_t{-1}).scalar(int64_t{1}).scalar(int64_t{100}).scalar(int64_t{2});
      });
  add_shape_case(
      "aten::select_copy.int_out", {3, 4, 5}, [](auto& x) { return x.select(1, -1); },
      [](KernelCall& c) { c.scalar(int64_t{1}).scalar(int64_t{-1}); });
  add_shape_case(
      "aten::unsqueeze_copy.out", {3, 4}, [](auto& x) { return x.unsqueeze(-1); },
      [](KernelCall& c) { c.scalar(int64_t{-1}); });
  add_shape_case(
      "aten::squeeze_copy.out", {3, 1, 4, 1}, [](auto& x) { return x.squeeze(); },
      [](KernelCall&) {});
  add_shape_case(
      "aten::squeeze_copy.dim_out", {3, 1, 4}, [](auto& x) { return x.squeeze(1); },
      [](KernelCall& c) { c.scalar(int64_t{1}); });
  add_shape_case(
      "aten::squeeze_copy.dims_out", {1, 3, 1, 4}, [](auto& x) { return x.squeeze(2).squeeze(0); },
      [](KernelCall& c) {
        c.int_list({0, 2, 3});
      });  // dim 3 (size 4) stays
  add_list_case(
      "aten::split_with_sizes_copy.out",
      [](auto& x) {
        return at::split_with_sizes(x, {2, 0, 5}, -1);
      },
      [](KernelCall& c) {
        c.int_list({2, 0, 5}).scalar(int64_t{-1});
      },
      false);
  add_list_case(
      "aten::split_copy.Tensor_out", [](auto& x) { return at::split(x, 3, 1); },
      [](KernelCall& c) { c.scalar(int64_t{3}).scalar(int64_t{1}); }, false);
  add_list_case(
      "aten::unbind_copy.int_out", [](auto& x) { return at::unbind(x, 0); },
      [](KernelCall& c) { c.scalar(int64_t{0}); }, true);
  add_case("aten::cat.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {2, 3}), b = sweep_input(dtype, {2, 5});
    return sweep_run_as(
        "aten::cat.out", dtype,
        [&](ScalarType t) {
          return Outs{at::cat({a.to(t), b.to(t)}, -1)};
        },
        [&](KernelCall& c) {
          c.tensor_list({a, b}).scalar(int64_t{-1});
        },
        why);
  });
  add_case("aten::stack.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor a = sweep_input(dtype, {2, 3}), b = sweep_input(dtype, {2, 3});
    return sweep_run_as(
        "aten::stack.out", dtype,
        [&](ScalarType t) {
          return Outs{at::stack({a.to(t), b.to(t)}, 1)};
        },
        [&](KernelCall& c) {
          c.tensor_list({a, b}).scalar(int64_t{1});
        },
        why);
  });
  add_case("aten::constant_pad_nd.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {2, 3, 4});
    const std::vector<int64_t> pad = {1, 2, -1, 1};
    return sweep_run_as(
        "aten::constant_pad_nd.out", dtype,
        [&](ScalarType t) {
          return Outs{at::constant_pad_nd(x.to(t), pad, aten_scalar(dtype, 1.5, 1))};
        },
        [&](KernelCall& c) {
          c.tensor(x).int_list(pad);
          push_scalar(c, dtype, 1.5, 1);
        },
        why);
  });
  add_shape_case(
      "aten::repeat.out", {2, 3},
      [](auto& x) {
        return x.repeat({2, 1, 3});
      },
      [](KernelCall& c) {
        c.int_list({2, 1, 3});
      });
  add_shape_case(
      "aten::flip.out", {2, 3, 4},
      [](auto& x) {
        return x.flip({0, -1});
      },
      [](KernelCall& c) {
        c.int_list({0, -1});
      });
  add_shape_case(
      "aten::as_strided_copy.out", {2, 3, 4},
      [](auto& x) {
        return x.as_strided({3, 3}, {7, 2}, 5);
      },
      [](KernelCall& c) {
        c.int_list({3, 3}).int_list({7, 2}).scalar(int64_t{5});
      });
  add_shape_case(
      "aten::roll.out", {2, 3, 4},
      [](auto& x) {
        return x.roll({1, -5}, {0, 2});
      },
      [](KernelCall& c) {
        c.int_list({1, -5}).int_list({0, 2});
      });
  add_shape_case(
      "aten::tril.out", {2, 3, 4}, [](auto& x) { return x.tril(1); },
      [](KernelCall& c) { c.scalar(int64_t{1}); });
  add_shape_case(
      "aten::triu.out", {2, 3, 4}, [](auto& x) { return x.triu(-1); },
      [](KernelCall& c) { c.scalar(int64_t{-1}); });
  // The copies ExecuTorch's exporter writes: src broadcast into self's shape.
  add_case("aten::copy.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 6}), src = sweep_input(dtype, {1, 6});
    return sweep_run_as(
        "aten::copy.out", dtype, [&](ScalarType t) { return Outs{at::copy(x.to(t), src.to(t))}; },
        [&](KernelCall& c) { c.tensor(x).tensor(src).scalar(false); }, why);
  });
  add_case("aten::copy_", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 6}), src = sweep_input(dtype, {6});
    const at::Tensor expected = x.clone().copy_(src);
    const at::Tensor self = x.clone();
    KernelCall c("aten::copy_");
    c.tensor(self).tensor(src).scalar(false).out_like(expected);  // self, then the result
    if (c.run() != Error::Ok) {
      *why = std::string("Ember refused: ") + last_error_message();
      return SweepOutcome::EmberRefuses;
    }
    // self is written in place; the result is self's value.
    if (!values_match(view_of(self), expected, {0, 0}, why)) return SweepOutcome::Mismatch;
    if (!values_match(c.out(), expected, {0, 0}, why)) return SweepOutcome::Mismatch;
    return SweepOutcome::Match;
  });
  add_case("aten::slice_scatter.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 6}), src = sweep_input(dtype, {4, 3});
    return sweep_run_as(
        "aten::slice_scatter.out", dtype,
        [&](ScalarType t) { return Outs{at::slice_scatter(x.to(t), src.to(t), 1, -5, 100, 2)}; },
        [&](KernelCall& c) {
          c.tensor(x).tensor(src).scalar(int64_t{1}).scalar(int64_t{-5}).scalar(int64_t{100});
          c.scalar(int64_t{2});
        },
        why);
  });
  return true;
}();

// --- indexing

const bool kIndexCases = [] {
  const auto index_list = [](const std::vector<at::Tensor>& indices) {
    c10::List<c10::optional<at::Tensor>> list;
    for (const at::Tensor& t : indices) {
      list.push_back(t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt);
    }
    return list;
  };
  add_case("aten::index_select.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 5}), idx = at::tensor({3, 0, 0, 2}, at::kLong);
    return sweep_run_as(
        "aten::index_select.out", dtype,
        [&](ScalarType t) { return Outs{at::index_select(x.to(t), -1, idx)}; },
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{-1}).tensor(idx); }, why);
  });
  add_case("aten::embedding.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor w = sweep_input(dtype, {4, 5});
    const at::Tensor idx = at::tensor({3, 0, 0, 2}, at::kLong).reshape({2, 2});
    return sweep_run_as(
        "aten::embedding.out", dtype,
        [&](ScalarType t) { return Outs{at::embedding(w.to(t), idx)}; },
        [&](KernelCall& c) {
          c.tensor(w).tensor(idx).scalar(int64_t{-1}).scalar(false).scalar(false);
        },
        why);
  });
  add_case("aten::gather.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 5}), idx = at::randint(0, 4, {3, 5}, at::kLong);
    return sweep_run_as(
        "aten::gather.out", dtype, [&](ScalarType t) { return Outs{at::gather(x.to(t), 0, idx)}; },
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).tensor(idx).scalar(false); }, why);
  });
  // Scatter without a reduction: unique indices per row (a duplicate's winner is unspecified).
  add_case("aten::scatter.src_out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 5}), src = sweep_input(dtype, {3, 6});
    const at::Tensor idx = at::randperm(5, at::kLong).repeat({3, 1});
    return sweep_run_as(
        "aten::scatter.src_out", dtype,
        [&](ScalarType t) { return Outs{at::scatter(x.to(t), 1, idx, src.to(t))}; },
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{1}).tensor(idx).tensor(src); }, why);
  });
  add_case("aten::scatter.value_out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 5});
    const at::Tensor idx = at::randperm(5, at::kLong).repeat({3, 1});
    return sweep_run_as(
        "aten::scatter.value_out", dtype,
        [&](ScalarType t) { return Outs{at::scatter(x.to(t), 1, idx, aten_scalar(dtype))}; },
        [&](KernelCall& c) {
          c.tensor(x).scalar(int64_t{1}).tensor(idx);
          push_scalar(c, dtype);
        },
        why);
  });
  // The reductions: duplicate indices, accumulated.
  add_case("aten::scatter_add.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {4, 5}), src = sweep_input(dtype, {6, 5});
    const at::Tensor idx = at::randint(0, 4, {6, 5}, at::kLong);
    return sweep_run_as(
        "aten::scatter_add.out", dtype,
        [&](ScalarType t) { return Outs{at::scatter_add(x.to(t), 0, idx, src.to(t))}; },
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).tensor(idx).tensor(src); }, why,
        accumulate_tolerance(dtype), accumulate_tolerance(dtype));
  });
  for (const char* reduce : {"add", "multiply"}) {
    add_case("aten::scatter.reduce_out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {4, 5}), src = sweep_input(dtype, {6, 5});
      const at::Tensor idx = at::randint(0, 4, {6, 5}, at::kLong);
      return sweep_run_as(
          "aten::scatter.reduce_out", dtype,
          [&](ScalarType t) { return Outs{at::scatter(x.to(t), 0, idx, src.to(t), reduce)}; },
          [&](KernelCall& c) {
            c.tensor(x).scalar(int64_t{0}).tensor(idx).tensor(src).string(reduce);
          },
          why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
    });
    add_case("aten::scatter.value_reduce_out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {4, 5});
      const at::Tensor idx = at::randint(0, 4, {6, 5}, at::kLong);
      return sweep_run_as(
          "aten::scatter.value_reduce_out", dtype,
          [&](ScalarType t) {
            return Outs{at::scatter(x.to(t), 0, idx, aten_scalar(dtype, 1.5, 2), reduce)};
          },
          [&](KernelCall& c) {
            c.tensor(x).scalar(int64_t{0}).tensor(idx);
            push_scalar(c, dtype, 1.5, 2);
            c.string(reduce);
          },
          why, accumulate_tolerance(dtype), accumulate_tolerance(dtype));
    });
  }
  add_case("aten::masked_fill.Scalar_out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4}), mask = at::rand({4}) > 0.5;
    return sweep_run_as(
        "aten::masked_fill.Scalar_out", dtype,
        [&](ScalarType t) {
          return Outs{at::masked_fill(x.to(t), mask, aten_scalar(dtype, -2.5, 1))};
        },
        [&](KernelCall& c) {
          c.tensor(x).tensor(mask);
          push_scalar(c, dtype, -2.5, 1);
        },
        why);
  });
  // index.Tensor and index_put: an integer index after a None, and a boolean mask.
  for (const bool mask : {false, true}) {
    add_case("aten::index.Tensor_out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {4, 5});
      const std::vector<at::Tensor> indices =
          mask ? std::vector<at::Tensor>{at::tensor({1, 0, 1, 1}, at::kLong).to(at::kBool)}
               : std::vector<at::Tensor>{at::Tensor(), at::tensor({4, 0, -1}, at::kLong)};
      return sweep_run_as(
          "aten::index.Tensor_out", dtype,
          [&](ScalarType t) { return Outs{at::index(x.to(t), index_list(indices))}; },
          [&](KernelCall& c) { c.tensor(x).tensor_list(indices, true); }, why);
    });
    add_case("aten::index_put.out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {4, 5});
      // accumulate with duplicate indices; without, unique ones.
      const bool accumulate = !mask;
      const std::vector<at::Tensor> indices =
          mask ? std::vector<at::Tensor>{at::tensor({1, 0, 1, 1}, at::kLong).to(at::kBool)}
               : std::vector<at::Tensor>{at::tensor({3, 0, 3}, at::kLong)};
      const at::Tensor values = sweep_input(dtype, {5}, false);
      return sweep_run_as(
          "aten::index_put.out", dtype,
          [&](ScalarType t) {
            return Outs{at::index_put(x.to(t), index_list(indices), values.to(t), accumulate)};
          },
          [&](KernelCall& c) {
            c.tensor(x).tensor_list(indices, true).tensor(values).scalar(accumulate);
          },
          why);
    });
  }
  return true;
}();

// --- sorting, nonzero

const bool kSortCases = [] {
  add_case("aten::topk.values", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = distinct_input(dtype, {3, 4, 5});
    return sweep_run_as(
        "aten::topk.values", dtype,
        [&](ScalarType t) {
          const auto [v, i] = at::topk(x.to(t), 3, -1, true, true);
          return Outs{v, i};
        },
        [&](KernelCall& c) {
          c.tensor(x).scalar(int64_t{3}).scalar(int64_t{-1}).scalar(true).scalar(true);
        },
        why);
  });
  add_case("aten::sort.values", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = distinct_input(dtype, {3, 4, 5});
    return sweep_run_as(
        "aten::sort.values", dtype,
        [&](ScalarType t) {
          const auto [v, i] = at::sort(x.to(t), 1, false);
          return Outs{v, i};
        },
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{1}).scalar(false); }, why);
  });
  // Stable: ties keep their order, so any input will do.
  add_case("aten::sort.values_stable", [](ScalarType dtype, std::string* why) {
    at::Tensor x = dtype == at::kBool ? sweep_input(dtype, {3, 4, 5})
                                      : at::randint(-3, 3, {3, 4, 5}).to(dtype);
    if (floating(dtype)) {
      at::Tensor flat = x.view({-1});
      flat[1] = NAN;
      flat[4] = INFINITY;
      flat[9] = NAN;
    }
    return sweep_run_as(
        "aten::sort.values_stable", dtype,
        [&](ScalarType t) {
          const auto [v, i] = at::sort(x.to(t), true, -1, true);
          return Outs{v, i};
        },
        [&](KernelCall& c) { c.tensor(x).scalar(true).scalar(int64_t{-1}).scalar(true); }, why);
  });
  add_case("aten::nonzero.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4, 2});
    return sweep_run_as(
        "aten::nonzero.out", dtype, [&](ScalarType t) { return Outs{at::nonzero(x.to(t))}; },
        [&](KernelCall& c) { c.tensor(x); }, why);
  });
  return true;
}();

// --- factories (the dtype is the out's) and ExecuTorch's dim-order ops

const bool kFactoryCases = [] {
  add_case("aten::full.out", [](ScalarType dtype, std::string* why) {
    return sweep_run_as(
        "aten::full.out", dtype,
        [&](ScalarType t) {
          return Outs{at::full({2, 3}, aten_scalar(dtype), at::TensorOptions(t))};
        },
        [&](KernelCall& c) {
          c.int_list({2, 3});
          push_scalar(c, dtype);
        },
        why);
  });
  add_case("aten::full_like.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x = sweep_input(dtype, {3, 4});
    return sweep_run_as(
        "aten::full_like.out", dtype,
        [&](ScalarType t) { return Outs{at::full_like(x.to(t), aten_scalar(dtype))}; },
        [&](KernelCall& c) {
          c.tensor(x);
          push_scalar(c, dtype);
          c.none();
        },
        why);
  });
  add_case("aten::scalar_tensor.out", [](ScalarType dtype, std::string* why) {
    return sweep_run_as(
        "aten::scalar_tensor.out", dtype,
        [&](ScalarType t) {
          return Outs{at::scalar_tensor(aten_scalar(dtype), at::TensorOptions(t))};
        },
        [&](KernelCall& c) { push_scalar(c, dtype); }, why);
  });
  add_case("aten::arange.out", [](ScalarType dtype, std::string* why) {
    return sweep_run_as(
        "aten::arange.out", dtype,
        [&](ScalarType t) { return Outs{at::arange(7, at::TensorOptions(t))}; },
        [&](KernelCall& c) { c.scalar(int64_t{7}); }, why);
  });
  add_case("aten::arange.start_out", [](ScalarType dtype, std::string* why) {
    return sweep_run_as(
        "aten::arange.start_out", dtype,
        [&](ScalarType t) { return Outs{at::arange(10, -3, -4, at::TensorOptions(t))}; },
        [&](KernelCall& c) { c.scalar(int64_t{10}).scalar(int64_t{-3}).scalar(int64_t{-4}); }, why);
  });
  add_case("aten::arange.start_out", [](ScalarType dtype, std::string* why) {
    return sweep_run_as(
        "aten::arange.start_out", dtype,
        [&](ScalarType t) { return Outs{at::arange(-1.0, 2.0, 0.25, at::TensorOptions(t))}; },
        [&](KernelCall& c) { c.scalar(-1.0).scalar(2.0).scalar(0.25); }, why);
  });
  // Integer outs truncate the bounds and the step (int64 outs also for the size).
  add_case("aten::arange.start_out", [](ScalarType dtype, std::string* why) {
    return sweep_run_as(
        "aten::arange.start_out", dtype,
        [&](ScalarType t) { return Outs{at::arange(-1.0, 2.0, 1.5, at::TensorOptions(t))}; },
        [&](KernelCall& c) { c.scalar(-1.0).scalar(2.0).scalar(1.5); }, why);
  });
  add_case("aten::arange.start_out", [](ScalarType dtype, std::string* why) {
    return sweep_run_as(
        "aten::arange.start_out", dtype,
        [&](ScalarType t) { return Outs{at::arange(0.5, 5.0, 1, at::TensorOptions(t))}; },
        [&](KernelCall& c) { c.scalar(0.5).scalar(5.0).scalar(int64_t{1}); }, why);
  });
  // To channels-last (dim order 0, 2, 3, 1), keeping the dtype and converting to float32.
  for (const bool convert : {false, true}) {
    add_case("dim_order_ops::_to_dim_order_copy.out", [=](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {2, 3, 4, 5}, /*specials=*/false);
      return sweep_run_as(
          "dim_order_ops::_to_dim_order_copy.out", dtype,
          [&](ScalarType t) {
            return Outs{x.to(convert ? at::kFloat : t).contiguous(at::MemoryFormat::ChannelsLast)};
          },
          [&](KernelCall& c) {
            c.tensor(x).scalar(false).int_list({0, 2, 3, 1});
          },
          why);
    });
  }
  add_case("dim_order_ops::_clone_dim_order.out", [](ScalarType dtype, std::string* why) {
    const at::Tensor x =
        sweep_input(dtype, {2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
    return sweep_run_as(
        "dim_order_ops::_clone_dim_order.out", dtype,
        [&](ScalarType t) { return Outs{x.to(t).contiguous()}; },
        [&](KernelCall& c) { c.tensor(x).scalar(false).none(); }, why);
  });
  return true;
}();

}  // namespace
}  // namespace ember::testing
