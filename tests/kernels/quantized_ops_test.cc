// Dtype-sweep cases (dtype_sweep.h) for the quantization kernels (quantized_decomposed::*).
//
// libtorch 1.13, this suite's reference, has no quantized_decomposed ops. Their reference is
// PyTorch's Python implementation (torch/ao/quantization/fx/_decomposed.py, and ExecuTorch's exir
// for the embeddings), which is a short chain of ATen ops; each case below transcribes that chain
// with libtorch's ATen ops, so the expected values still come from ATen, not from Ember. The
// byte-exact comparison against the Python references themselves (ties, NaN, every dtype
// combination) is python/tests/test_runtime_quantized_kernels.py; these cases give each kernel its
// row in docs/kernels.md and check which input dtypes it accepts. A reference refuses (throws)
// the dtypes the Python reference refuses, or, where it computes anyway, those ExecuTorch's
// kernel and Ember refuse (said at the case).
#include "tests/kernels/dtype_sweep.h"

namespace ember::testing {
namespace {

using Outs = std::vector<at::Tensor>;
using at::ScalarType;

constexpr int64_t kInt8 = 1;  // ScalarType code of int8

bool float_input(ScalarType t) { return t == at::kFloat || t == at::kHalf || t == at::kBFloat16; }
bool quantized_dtype(ScalarType t) {
  return t == at::kByte || t == at::kChar || t == at::kShort || t == at::kInt;
}

// quantize_per_tensor: float32 (float16 and bfloat16 read as float32), times float(1 / scale).
at::Tensor quantize_ref(const at::Tensor& x, double scale, int64_t zp) {
  TORCH_CHECK(float_input(x.scalar_type()), "Expecting input to have dtype torch.float32");
  return at::clamp(at::round(x.to(at::kFloat) * (1.0 / scale)) + zp, -128, 127).to(at::kChar);
}

EMBER_SWEEP_CASE("quantized_decomposed::quantize_per_tensor.out", [](ScalarType dtype,
                                                                     std::string* why) {
  const at::Tensor x = sweep_input(dtype, {3, 4});
  return sweep_run_as(
      "quantized_decomposed::quantize_per_tensor.out", dtype,
      [&](ScalarType t) { return Outs{quantize_ref(x.to(t), 0.07, 3)}; },
      [&](KernelCall& c) {
        c.tensor(x).scalar(0.07).scalar(int64_t{3}).scalar(int64_t{-128}).scalar(int64_t{127});
        c.scalar(kInt8);
      },
      why);
});

EMBER_SWEEP_CASE("quantized_decomposed::quantize_per_tensor.Tensor_out", [](ScalarType dtype,
                                                                            std::string* why) {
  const at::Tensor x = sweep_input(dtype, {3, 4});
  const at::Tensor s = at::tensor({0.07}, at::kDouble), z = at::tensor({int64_t{3}}, at::kLong);
  return sweep_run_as(
      "quantized_decomposed::quantize_per_tensor.Tensor_out", dtype,
      [&](ScalarType t) {
        return Outs{quantize_ref(x.to(t), s.item<double>(), z.item<int64_t>())};
      },
      [&](KernelCall& c) {
        c.tensor(x).tensor(s).tensor(z).scalar(int64_t{-128}).scalar(int64_t{127}).scalar(kInt8);
      },
      why);
});

// dequantize_per_tensor with the dtype argument the input's: (x.to(float32) - zp) * scale.
at::Tensor dequantize_ref(const at::Tensor& q, double scale, int64_t zp) {
  TORCH_CHECK(quantized_dtype(q.scalar_type()), "Unsupported dtype in dequantize_per_tensor");
  return (q.to(at::kFloat) - zp) * scale;
}

int64_t code_of(ScalarType t) { return static_cast<int64_t>(t); }

EMBER_SWEEP_CASE("quantized_decomposed::dequantize_per_tensor.out", [](ScalarType dtype,
                                                                       std::string* why) {
  const at::Tensor q = sweep_input(dtype, {3, 4});
  return sweep_run(
      "quantized_decomposed::dequantize_per_tensor.out",
      [&] { return Outs{dequantize_ref(q, 0.07, 3)}; },
      [&](KernelCall& c) {
        c.tensor(q).scalar(0.07).scalar(int64_t{3}).scalar(int64_t{-128}).scalar(int64_t{127});
        c.scalar(code_of(dtype)).none();
      },
      {at::kFloat}, q.sizes(), why);
});

EMBER_SWEEP_CASE("quantized_decomposed::dequantize_per_tensor.Tensor_out", [](ScalarType dtype,
                                                                              std::string* why) {
  const at::Tensor q = sweep_input(dtype, {3, 4});
  const at::Tensor s = at::tensor({0.07}, at::kDouble), z = at::tensor({int64_t{3}}, at::kLong);
  return sweep_run(
      "quantized_decomposed::dequantize_per_tensor.Tensor_out",
      [&] { return Outs{dequantize_ref(q, 0.07, 3)}; },
      [&](KernelCall& c) {
        c.tensor(q).tensor(s).tensor(z).scalar(int64_t{-128}).scalar(int64_t{127});
        c.scalar(code_of(dtype)).none();
      },
      {at::kFloat}, q.sizes(), why);
});

// Per channel along dim 1 of a [3, 4] input: float64 scales, int64 zero points (the reference's
// arithmetic is then float64, by promotion).
EMBER_SWEEP_CASE("quantized_decomposed::quantize_per_channel.out", [](ScalarType dtype,
                                                                      std::string* why) {
  const at::Tensor x = sweep_input(dtype, {3, 4});
  const at::Tensor s = at::tensor({0.1, 0.07, 0.5, 0.003}, at::kDouble);
  const at::Tensor z = at::tensor({0, 3, -5, 10}, at::kLong);
  return sweep_run_as(
      "quantized_decomposed::quantize_per_channel.out", dtype,
      [&](ScalarType t) {
        TORCH_CHECK(float_input(t), "Expecting input to have dtype torch.float32");
        const at::Tensor xf = x.to(t).to(at::kFloat);
        return Outs{at::clamp(at::round(xf * (1.0 / s.view({1, 4}))) + z.view({1, 4}), -128, 127)
                        .to(at::kChar)};
      },
      [&](KernelCall& c) {
        c.tensor(x).tensor(s).tensor(z).scalar(int64_t{1}).scalar(int64_t{-128});
        c.scalar(int64_t{127}).scalar(kInt8);
      },
      why);
});

EMBER_SWEEP_CASE("quantized_decomposed::dequantize_per_channel.out", [](ScalarType dtype,
                                                                        std::string* why) {
  const at::Tensor q = sweep_input(dtype, {3, 4});
  const at::Tensor s = at::tensor({0.1, 0.07, 0.5, 0.003}, at::kDouble);
  const at::Tensor z = at::tensor({0, 3, -5, 10}, at::kLong);
  return sweep_run(
      "quantized_decomposed::dequantize_per_channel.out",
      [&] {
        TORCH_CHECK(quantized_dtype(dtype), "Unsupported dtype");
        return Outs{((q - z.view({1, 4})) * s.view({1, 4})).to(at::kFloat)};
      },
      [&](KernelCall& c) {
        const int64_t lo = dtype == at::kByte ? 0 : -100;  // within every quantized dtype
        c.tensor(q).tensor(s).tensor(z).scalar(int64_t{1}).scalar(lo).scalar(int64_t{127});
        c.scalar(code_of(dtype)).none();
      },
      {at::kFloat}, q.sizes(), why);
});

// Per channel group on a [3, 4] input, groups of 2: float32 scales and int32 zero points, one per
// group (the reference's reshape(-1, 1)), so the subtraction is int32 and the product float32. The
// Python reference would also take floating and int64 inputs; Ember takes the quantized integer
// dtypes only, as for the other dequantize ops.
EMBER_SWEEP_CASE("quantized_decomposed::dequantize_per_channel_group.out", [](ScalarType dtype,
                                                                              std::string* why) {
  const at::Tensor q = sweep_input(dtype, {3, 4});
  const at::Tensor s = at::tensor({0.1f, 0.07f, 0.5f, 0.003f, 1.0f / 3, 2.5f}, at::kFloat);
  const at::Tensor z = at::tensor({0, 3, -5, 10, 100, -128}, at::kInt);
  return sweep_run(
      "quantized_decomposed::dequantize_per_channel_group.out",
      [&] {
        TORCH_CHECK(quantized_dtype(dtype), "dequantize_per_channel_group takes quantized inputs");
        const at::Tensor grouped = q.reshape({-1, 2});
        return Outs{(grouped - z.view({-1, 1})).mul(s.view({-1, 1})).reshape_as(q).to(at::kFloat)};
      },
      [&](KernelCall& c) {
        c.tensor(q).tensor(s).tensor(z).scalar(int64_t{-128}).scalar(int64_t{127});
        c.scalar(kInt8).scalar(int64_t{2}).scalar(code_of(at::kFloat));
      },
      {at::kFloat}, q.sizes(), why);
});

// determine_qparams (per_tensor_affine) on aminmax of the input, int8's range, eps 1e-5.
EMBER_SWEEP_CASE("quantized_decomposed::choose_qparams.Tensor_out", [](ScalarType dtype,
                                                                       std::string* why) {
  const at::Tensor x = sweep_input(dtype, {3, 4}, false);
  return sweep_run_as(
      "quantized_decomposed::choose_qparams.Tensor_out", dtype,
      [&](ScalarType t) {
        TORCH_CHECK(float_input(t), "Expecting input to have dtype torch.float32/16/b16");
        const at::Tensor xt = x.to(t);
        const at::Tensor lo = at::min(xt.min(), at::zeros_like(xt.min()));
        const at::Tensor hi = at::max(xt.max(), at::zeros_like(xt.max()));
        // eps is a 1-dim float32 tensor there, which wins promotion over the 0-dim range.
        const at::Tensor scale = at::max((hi - lo) / 255.0, at::tensor({1e-5f}, at::kFloat));
        const at::Tensor zp = at::clamp(-128 - at::round(lo / scale).to(at::kInt), -128, 127);
        return Outs{scale.to(at::kDouble), zp.to(at::kLong)};
      },
      [&](KernelCall& c) {
        c.tensor(x).scalar(int64_t{-128}).scalar(int64_t{127}).scalar(1e-5).scalar(kInt8);
      },
      why);
});

// _choose_qparams_per_token_asymmetric_impl on rows of 6. Every op there computes in the input's
// dtype t; libtorch 1.13 lacks some float16 CPU ops, so each op runs in float32 and rounds to t,
// which is what ATen's 16-bit ops do (float opmath, one rounding per op).
EMBER_SWEEP_CASE(
    "quantized_decomposed::choose_qparams_per_token_asymmetric.out",
    [](ScalarType dtype, std::string* why) {
      const at::Tensor x = sweep_input(dtype, {2, 6}, false);
      return sweep_run_as(
          "quantized_decomposed::choose_qparams_per_token_asymmetric.out", dtype,
          [&](ScalarType t) {
            TORCH_CHECK(float_input(t), "input must be float32/16/b16");
            const auto in_t = [&](const at::Tensor& v) { return v.to(t).to(at::kFloat); };
            const at::Tensor xt = in_t(x.to(at::kFloat));
            const at::Tensor lo = at::amin(xt, {-1}, true), hi = at::amax(xt, {-1}, true);
            const at::Tensor lo_neg = at::min(lo, at::zeros_like(lo));
            const at::Tensor hi_pos = at::max(hi, at::zeros_like(hi));
            const double eps = std::numeric_limits<float>::epsilon();
            const at::Tensor scale = in_t(in_t(in_t(hi_pos - lo_neg) / 255.0).clamp_min(eps));
            const at::Tensor dmin = in_t(lo_neg / scale), dmax = in_t(hi_pos / scale);
            const at::Tensor sum = in_t(in_t(-128 + dmin) + in_t(127 + dmax));
            const at::Tensor zp = at::where(sum > 0, in_t(-128 - dmin), in_t(127 - dmax));
            return Outs{scale.to(at::kDouble), zp.clamp(-128, 127).round().to(at::kLong)};
          },
          [&](KernelCall& c) { c.tensor(x).scalar(kInt8); }, why);
    });

const at::Tensor& token_scales() {
  static const at::Tensor s = at::tensor({0.05, 0.3, 0.007}, at::kDouble).view({3, 1});
  return s;
}
const at::Tensor& token_zero_points() {
  static const at::Tensor z = at::tensor({-3, 0, 20}, at::kLong).view({3, 1});
  return z;
}

// quantize_per_token: x * (1 / scales) + zero points, then round. The Python reference would also
// multiply integer inputs; ExecuTorch's kernel and Ember take floating inputs only.
EMBER_SWEEP_CASE("quantized_decomposed::quantize_per_token.out", [](ScalarType dtype,
                                                                    std::string* why) {
  const at::Tensor x = sweep_input(dtype, {3, 4});
  return sweep_run_as(
      "quantized_decomposed::quantize_per_token.out", dtype,
      [&](ScalarType t) {
        TORCH_CHECK(at::isFloatingType(t), "quantize_per_token takes floating inputs");
        const at::Tensor inv = 1.0 / token_scales();
        return Outs{
            x.to(t).mul(inv).add(token_zero_points()).round().clamp(-128, 127).to(at::kChar)};
      },
      [&](KernelCall& c) {
        c.tensor(x).tensor(token_scales()).tensor(token_zero_points()).scalar(int64_t{-128});
        c.scalar(int64_t{127}).scalar(kInt8);
      },
      why);
});

// dequantize_per_token: (x - zero points) * scales, as float32. The Python reference would also
// take floating inputs; ExecuTorch's kernel and Ember take quantized integer inputs only.
EMBER_SWEEP_CASE("quantized_decomposed::dequantize_per_token.out", [](ScalarType dtype,
                                                                      std::string* why) {
  const at::Tensor q = sweep_input(dtype, {3, 4});
  return sweep_run(
      "quantized_decomposed::dequantize_per_token.out",
      [&] {
        TORCH_CHECK(quantized_dtype(dtype), "dequantize_per_token takes quantized inputs");
        return Outs{((q - token_zero_points()) * token_scales()).to(at::kFloat)};
      },
      [&](KernelCall& c) {
        c.tensor(q).tensor(token_scales()).tensor(token_zero_points()).scalar(int64_t{-128});
        c.scalar(int64_t{127}).scalar(kInt8).scalar(code_of(at::kFloat));
      },
      {at::kFloat}, q.sizes(), why);
});

// The quantized embeddings, swept over the scales' dtype (float32, float16 and bfloat16 are
// accepted): a [5, 8] packed uint8 weight, two scale groups a row, no zero points, the unpacking
// of exir's reference (4-bit: high nibble first; 2-bit: low bits first; offsets -8 and -2).
at::Tensor unpacked(const at::Tensor& w, int bits) {
  if (bits == 8) return w;
  if (bits == 4) {
    const at::Tensor hi = w.div(16, "trunc"), lo = w.remainder(16);
    return at::stack({hi, lo}, -1).view({w.size(0), -1}).to(at::kChar) - 8;
  }
  const at::Tensor parts =
      at::stack({w.bitwise_and(3), w.bitwise_and(12).div(4, "trunc"),
                 w.bitwise_and(48).div(16, "trunc"), w.bitwise_and(192).div(64, "trunc")},
                -1);
  return parts.view({w.size(0), -1}).to(at::kChar) - 2;
}

void add_embedding_case(const char* kernel, int bits, bool with_dtype) {
  add_sweep_case(kernel, [=](ScalarType dtype, std::string* why) {
    const at::Tensor w = at::randint(0, 256, {5, 8}, at::kLong).to(at::kByte);
    const at::Tensor s = (at::rand({5, 2}) * 0.1 + 0.01).to(dtype);
    const at::Tensor idx = at::tensor({4, 0, 2, 2}, at::kLong);
    const int64_t range = bits == 4 ? 8 : bits == 2 ? 2 : 128;
    return sweep_run_as(
        kernel, dtype,
        [&](ScalarType t) {
          TORCH_CHECK(float_input(t), "Expecting weight_scales of float16, float32 or bfloat16");
          const at::Tensor q = unpacked(w, bits);
          const int64_t group = q.size(1) / 2;
          const at::Tensor st = s.to(t).reshape({-1, 1});
          const at::Tensor dq = q.reshape({-1, group}).mul(st).reshape_as(q);
          return Outs{at::index_select(dq, 0, idx)};
        },
        [&](KernelCall& c) {
          c.tensor(w).tensor(s).none().scalar(-range).scalar(range - 1).tensor(idx);
          if (with_dtype) c.none();
        },
        why);
  });
}

[[maybe_unused]] const bool kEmbeddingCases = [] {
  add_embedding_case("quantized_decomposed::embedding_byte.out", 8, false);
  add_embedding_case("quantized_decomposed::embedding_byte.dtype_out", 8, true);
  add_embedding_case("quantized_decomposed::embedding_4bit.out", 4, false);
  add_embedding_case("quantized_decomposed::embedding_4bit.dtype_out", 4, true);
  add_embedding_case("quantized_decomposed::embedding_2bit.out", 2, false);
  add_embedding_case("quantized_decomposed::embedding_2bit.dtype_out", 2, true);
  return true;
}();

}  // namespace
}  // namespace ember::testing
