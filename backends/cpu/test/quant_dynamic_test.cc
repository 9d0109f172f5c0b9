// The cpu backend on dynamically quantized linear inputs (docs/quantization.md): torchao's
// per-token quantization (8da4w, 8da8w) and PT2E's dynamic per-tensor quantization, each
// claimed whole with the linears reading it, against ATen computing the reference's ops.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/test/quant_test_util.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

// The linear of a dynamically quantized activation (torchao's 8da4w, 8da8w): addmm of
// (a - zero point) * scale, a the int8 integers as float32 and one zero point and scale a row,
// by a grouped-integer weight: in integers for 4-bit weights of zero points 0 (DotPackedMatrix),
// else the float kernel on the dequantized input. Against ATen on the reference's floats.
TEST(CpuQuant, DynamicallyQuantizedActivationLinear) {
  at::manual_seed(12);
  const int64_t n = 40, k = 64, group = 32;
  for (int64_t bits : {4, 8}) {
    for (bool zeros : {false, true}) {
      for (int64_t m : {1, 5}) {
        SCOPED_TRACE(std::to_string(bits) + " bits" + (zeros ? ", weight zero points" : "") +
                     ", rows " + std::to_string(m));
        const int64_t hi = bits == 4 ? 7 : 127;
        const at::Tensor wq = at::randint(-hi - 1, hi + 1, {n, k}).to(at::kChar);
        const at::Tensor scales = at::rand({n, k / group}) * 0.02 + 0.001;
        const at::Tensor wz = zeros ? at::randint(-hi - 1, hi + 1, {n, k / group}).to(at::kInt)
                                    : at::zeros({n, k / group}, at::kInt);
        const at::Tensor b = at::randn({n});
        const at::Tensor w = (wq.to(at::kInt) - wz.repeat_interleave(group, 1)).to(at::kFloat) *
                             scales.repeat_interleave(group, 1);
        // The activation's integers (as floats), zero points and scales, as torchao makes them.
        const at::Tensor a = at::randint(-128, 128, {1, m, k}).to(at::kFloat);
        const at::Tensor za = at::randint(-128, 128, {1, m, 1}).to(at::kFloat);
        const at::Tensor sa = at::rand({1, m, 1}) * 0.05 + 0.01;
        const at::Tensor x = (a - za) * sa;
        const at::Tensor want = at::addmm(b, x.view({m, k}), w.t());
        Prog p;
        const std::string ai = p.input("a", a), zi = p.input("za", za), si = p.input("sa", sa);
        const std::string ws = p.weight("ws", scales), bi = p.weight("b", b);
        const std::string wzi = zeros ? p.weight("wz", wz) : "none";
        const std::string d =
            p.node("d", x, "aten::sub.Tensor(self=" + ai + ", other=" + zi + ", alpha=1)");
        const std::string xd = p.node("x", x, "aten::mul.Tensor(self=" + d + ", other=" + si + ")");
        const std::string xv =
            p.node("xv", x.view({m, k}),
                   "aten::view.default(self=" + xd + ", size=[" + std::to_string(m) + ", 64])");
        const std::string wd = p.node(
            "wd", w,
            "quantized_decomposed::dequantize_per_channel_group.default(input=%wq, scales=" + ws +
                ", zero_points=" + wzi + ", quant_min=" + std::to_string(-hi - 1) + ", quant_max=" +
                std::to_string(hi) + ", dtype=dtype(i8), group_size=32, output_dtype=dtype(f32))");
        const std::string wt =
            p.node("wt", w.t(), "aten::permute.default(self=" + wd + ", dims=[1, 0])");
        p.outputs = {p.node("y", want,
                            "aten::addmm.default(self=" + bi + ", mat1=" + xv + ", mat2=" + wt +
                                ", beta=1, alpha=1)")};
        auto with_weight = [&](std::string text) {
          text = "weight \"wq\": " + i8_type(wq) + " = hex\"" + hex(wq) + "\"\n" + text;
          text.insert(text.find("\n) {\n"), ",\n    %wq: " + i8_type(wq) + " parameter \"wq\"");
          return parse_text(text);
        };
        // The whole program, a and za the float32 copies of int8 tensors: the backend claims
        // the subtraction there (the casts stay outside the partition, whose inputs they are).
        std::string whole = p.text();
        for (const char* name : {"a", "za"}) {
          const std::string decl = std::string("    %") + name + ": f32[";
          const size_t at = whole.find(decl);
          ASSERT_NE(at, std::string::npos);
          whole.replace(at, decl.size(), std::string("    %") + name + "_i8: i8[");
        }
        whole.insert(whole.find("\n) {\n") + 5,
                     "  %a: " + type_of(a) +
                         " = aten::_to_copy.default(self=%a_i8, dtype=dtype(f32))\n"
                         "  %za: " +
                         type_of(za) +
                         " = aten::_to_copy.default(self=%za_i8, dtype=dtype(f32))\n");
        auto full = with_weight(whole);
        ASSERT_NE(full, nullptr);
        for (const ir::Node* node : full->graph().nodes()) {
          if (node->op() != "aten::sub") continue;
          partition::Support support = compiler_backend()->support().check(*node);
          EXPECT_TRUE(support.supported) << support.reason;
        }
        auto program = with_weight(p.text());
        ASSERT_NE(program, nullptr);
        for (const ir::Node* node : program->graph().nodes()) {
          if (node->op() != "aten::sub") continue;  // a float input: not an int8 activation
          EXPECT_FALSE(compiler_backend()->support().check(*node).supported);
        }
        const Compiled compiled = compile(*program, {}, /*check_support=*/false);
        ASSERT_EQ(compiled.graph.ops.size(), 1u);
        EXPECT_EQ(compiled.graph.ops[0].kind, OpKind::GroupQuantMatMul);
        EXPECT_EQ(compiled.graph.ops[0].inputs.size(), 7u);
        DelegateSummary summary;
        auto out = run(compiled, {a, za, sa}, {want}, {}, &summary);
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(summary.grouped_matmuls, 1);
        // In integers where the weight's zero points are 0, from AVX2 up.
        const bool integers = !zeros && own_kernels_supported();
        EXPECT_EQ(summary.dot_matmuls, integers ? 1 : 0);
        // Integer sums are exact; the float reference rounds each product: float32 rounding.
        EXPECT_TRUE(at::allclose(out[0], want, 1e-5, 1e-5))
            << (out[0] - want).abs().max().item<float>();
      }
    }
  }
}

// torchao's per-token int8 quantization of a linear's input (8da), as the kernel computes it
// (DotRows::quantize), bit for bit against ATen running the ops torchao's decomposition writes.
TEST(CpuQuant, PerTokenQuantizationIsTorchaosBitForBit) {
  at::manual_seed(13);
  const int64_t k = 64;
  const float eps = 1.1754943508222875e-38f;  // torchao's default: float32's smallest normal
  std::vector<at::Tensor> rows = {at::randn({4, k}), at::randn({4, k}) * 1e4, at::rand({2, k}) + 1,
                                  -at::rand({2, k}), at::zeros({1, k}), at::randn({2, k}) * 1e-30,
                                  // Halves of a step: ties that round to even.
                                  at::round(at::randn({2, k}) * 8) / 2};
  for (const at::Tensor& x : rows) {
    const at::Tensor zeros = at::zeros({x.size(0)});
    const at::Tensor mn = at::minimum(at::amin(x, {-1}), zeros);
    const at::Tensor mx = at::maximum(at::amax(x, {-1}), zeros);
    const at::Tensor scale = at::clamp((mx - mn) / 255.0, eps);
    const at::Tensor zp = at::clamp(-128 - at::round(mn / scale), -128, 127).to(at::kChar);
    const at::Tensor inverse = at::reciprocal(scale.unsqueeze(-1)) * 1.0;
    const at::Tensor q =
        at::clamp(at::round(x * inverse) + zp.unsqueeze(-1), -128, 127).to(at::kChar);
    AlignedFloats memory(DotRows::bytes(x.size(0), k, 32, false) / sizeof(float), NAN);
    DotRows got(memory.data(), x.size(0), k, 32, false);
    got.quantize(x.contiguous().data_ptr<float>(), eps);
    for (int64_t r = 0; r < x.size(0); ++r) {
      SCOPED_TRACE("row " + std::to_string(r));
      const float want_scale = scale[r].item<float>();
      EXPECT_EQ(std::memcmp(&got.scale[r], &want_scale, sizeof(float)), 0)
          << got.scale[r] << " " << want_scale;
      EXPECT_EQ(got.zero[r], zp[r].item<int8_t>());
      for (int64_t i = 0; i < k; ++i) {
        ASSERT_EQ(got.xq[r * k + i], q[r][i].item<int8_t>()) << "element " << i;
      }
    }
  }
}

// Rows holding inf or NaN: their scale is not finite and every dequantized value inf or NaN, so
// ATen's products give NaN where the integer sum times the scale would give inf. Such rows are
// computed as the reference does; the finite rows beside them are unchanged.
TEST(CpuQuant, NonFiniteRowsAreTheReferences) {
  if (!own_kernels_supported()) GTEST_SKIP() << "no AVX2";
  at::manual_seed(16);
  const int64_t n = 40, k = 64, group = 32, m = 6;
  at::Tensor x = at::randn({m, k});
  x.index_put_({1, 3}, INFINITY);   // one inf: most values (zero point - zero point) * inf
  x.index_put_({2}, INFINITY);      // all inf: every value +inf, the weights' signs mixed
  x.index_put_({3, 5}, -INFINITY);  // -inf: the zero point's division is NaN
  x.index_put_({4, 0}, NAN);
  const at::Tensor scales = at::rand({n, k / group}) * 0.02 + 0.001;
  const at::Tensor bias = at::randn({n});
  AlignedFloats memory(DotRows::bytes(m, k, group, true) / sizeof(float), NAN);
  DotRows rows(memory.data(), m, k, group, true);
  rows.quantize(x.contiguous().data_ptr<float>(), 1.1754943508222875e-38f);
  std::vector<float> xd(static_cast<size_t>(m * k));
  rows.dequantize(xd.data());
  for (const int bits : {4, 8}) {
    const at::Tensor wq =
        at::randint(bits == 4 ? -8 : -128, bits == 4 ? 8 : 128, {n, k}).to(at::kChar);
    const DotPackedMatrix b =
        DotPackedMatrix::pack(wq.data_ptr<int8_t>(), scales.contiguous().data_ptr<float>(),
                              bias.data_ptr<float>(), k, n, group, bits);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < k; ++i) ASSERT_EQ(b.weight(j, i), wq[j][i].item<int8_t>());
    }
    std::vector<float> out(static_cast<size_t>(m * n));
    dot_gemm_threads(2, m, b, rows, out.data(), n);
    const at::Tensor w = wq.to(at::kFloat) * scales.repeat_interleave(group, 1);
    const at::Tensor want = at::addmm(bias, at::from_blob(xd.data(), {m, k}), w.t());
    const at::Tensor got = at::from_blob(out.data(), {m, n});
    for (int64_t r = 1; r < 5; ++r) {
      ASSERT_FALSE(at::isfinite(want[r]).any().item<bool>()) << r;
      EXPECT_TRUE(at::equal(at::isnan(got[r]), at::isnan(want[r]))) << bits << " bits, row " << r;
      EXPECT_TRUE(at::allclose(got[r], want[r], 0, 0, /*equal_nan=*/true)) << got[r] << want[r];
    }
    for (int64_t r : {0, 5}) EXPECT_TRUE(at::allclose(got[r], want[r], 1e-5, 1e-4)) << r;
  }
}

// torchao's per-token quantization of a linear's input as its decomposition writes it (the ops
// of python/tests' 8da4w export), claimed whole with the linear: one op, against ATen running
// the same ops; and not claimed where the chain is not torchao's (another constant, a value read
// outside it).
std::string per_token_chain_program(const at::Tensor& x, const at::Tensor& wq,
                                    const at::Tensor& scales, const at::Tensor& b,
                                    const at::Tensor& y, float divisor, bool leak_scale) {
  const int64_t m = x.size(0), k = x.size(1);
  const std::string rows = "[" + std::to_string(m) + "]", col = "[" + std::to_string(m) + ", 1]";
  const std::string mk = "[" + std::to_string(m) + ", " + std::to_string(k) + "]";
  std::string t = "weight \"wq\": " + i8_type(wq) + " = hex\"" + hex(wq) + "\"\n";
  t += "weight \"s\": " + type_of(scales) + " = hex\"" + hex(scales) + "\"\n";
  t += "weight \"b\": " + type_of(b) + " = hex\"" + hex(b) + "\"\n";
  // The numbers torchao's ops take, as the importer wraps them: 0-d constants.
  const at::Tensor c255 = at::tensor(divisor), cm128 = at::tensor(int64_t{-128}),
                   c1 = at::tensor(1.f);
  for (const auto& [name, c] : {std::pair{"c255", c255}, {"cm128", cm128}, {"c1", c1}}) {
    t += std::string("weight \"") + name + "\": " + type_of(c) + " = hex\"" + hex(c) + "\"\n";
  }
  t += "graph(\n    %x: f32" + mk + ",\n    %wq: " + i8_type(wq) + " parameter \"wq\",\n" +
       "    %s: " + type_of(scales) + " parameter \"s\",\n    %b: " + type_of(b) +
       " parameter \"b\",\n    %c255: f32[] constant \"c255\",\n" +
       "    %cm128: i64[] constant \"cm128\",\n    %c1: f32[] constant \"c1\"\n) {\n";
  auto node = [&](const std::string& name, const std::string& type, const std::string& rhs) {
    t += "  %" + name + ": " + type + " = " + rhs + "\n";
  };
  node("amin", "f32" + rows, "aten::amin.default(self=%x, dim=[-1], keepdim=false)");
  node("amax", "f32" + rows, "aten::amax.default(self=%x, dim=[-1], keepdim=false)");
  node("z0", "f32" + rows, "aten::full_like.default(self=%amin, fill_value=0)");
  node("mn", "f32" + rows, "aten::minimum.default(self=%amin, other=%z0)");
  node("z1", "f32" + rows, "aten::full_like.default(self=%amax, fill_value=0)");
  node("mx", "f32" + rows, "aten::maximum.default(self=%amax, other=%z1)");
  node("range", "f32" + rows, "aten::sub.Tensor(self=%mx, other=%mn, alpha=1)");
  node("div", "f32" + rows, "aten::div.Tensor(self=%range, other=%c255)");
  node("scale", "f32" + rows, "aten::clamp.default(self=%div, min=1.1754943508222875e-38)");
  node("d1", "f32" + rows, "aten::div.Tensor(self=%mn, other=%scale)");
  node("r1", "f32" + rows, "aten::round.default(self=%d1)");
  node("zs", "f32" + rows, "aten::sub.Tensor(self=%cm128, other=%r1, alpha=1)");
  node("zc", "f32" + rows, "aten::clamp.default(self=%zs, min=-128, max=127)");
  node("zp", "i8" + rows, "aten::_to_copy.default(self=%zc, dtype=dtype(i8))");
  node("sv", "f32" + col, "aten::view.default(self=%scale, size=" + col + ")");
  node("zv", "i8" + col, "aten::view.default(self=%zp, size=" + col + ")");
  node("rec", "f32" + col, "aten::reciprocal.default(self=%sv)");
  node("inv", "f32" + col, "aten::mul.Tensor(self=%rec, other=%c1)");
  node("xs", "f32" + mk, "aten::mul.Tensor(self=%x, other=%inv)");
  node("r2", "f32" + mk, "aten::round.default(self=%xs)");
  node("add", "f32" + mk, "aten::add.Tensor(self=%r2, other=%zv, alpha=1)");
  node("qc", "f32" + mk, "aten::clamp.default(self=%add, min=-128, max=127)");
  node("q", "i8" + mk, "aten::_to_copy.default(self=%qc, dtype=dtype(i8))");
  node("qf", "f32" + mk, "aten::_to_copy.default(self=%q, dtype=dtype(f32))");
  node("zf", "f32" + col, "aten::_to_copy.default(self=%zv, dtype=dtype(f32))");
  node("dq", "f32" + mk, "aten::sub.Tensor(self=%qf, other=%zf, alpha=1)");
  node("xd", "f32" + mk, "aten::mul.Tensor(self=%dq, other=%sv)");
  node("wd", type_of(wq.to(at::kFloat)),
       "quantized_decomposed::dequantize_per_channel_group.default(input=%wq, scales=%s, "
       "zero_points=none, quant_min=-8, quant_max=7, dtype=dtype(i8), group_size=32, "
       "output_dtype=dtype(f32))");
  node("wt", type_of(wq.t().to(at::kFloat)), "aten::permute.default(self=%wd, dims=[1, 0])");
  node("y", type_of(y), "aten::addmm.default(self=%b, mat1=%xd, mat2=%wt, beta=1, alpha=1)");
  t += std::string("  return (%y") + (leak_scale ? ", %scale" : "") + ")\n}\n";
  return t;
}

TEST(CpuQuant, PerTokenQuantizedLinearClaimedWhole) {
  at::manual_seed(15);
  const int64_t m = 3, n = 40, k = 64, group = 32;
  const at::Tensor x = at::randn({m, k});
  const at::Tensor wq = at::randint(-8, 8, {n, k}).to(at::kChar);
  const at::Tensor scales = at::rand({n, k / group}) * 0.02 + 0.001;
  const at::Tensor b = at::randn({n});
  // ATen running torchao's ops.
  const at::Tensor mn = at::minimum(at::amin(x, {-1}), at::zeros({m}));
  const at::Tensor mx = at::maximum(at::amax(x, {-1}), at::zeros({m}));
  const at::Tensor scale = at::clamp((mx - mn) / 255.0, 1.1754943508222875e-38).view({m, 1});
  const at::Tensor zp =
      at::clamp(-128 - at::round(mn.view({m, 1}) / scale), -128, 127).to(at::kChar);
  const at::Tensor q =
      at::clamp(at::round(x * (at::reciprocal(scale) * 1.0)) + zp, -128, 127).to(at::kChar);
  const at::Tensor xd = (q.to(at::kFloat) - zp.to(at::kFloat)) * scale;
  const at::Tensor w = wq.to(at::kFloat) * scales.repeat_interleave(group, 1);
  const at::Tensor want = at::addmm(b, xd, w.t());
  {
    auto program = parse_text(per_token_chain_program(x, wq, scales, b, want, 255.f, false));
    ASSERT_NE(program, nullptr);
    const Compiled compiled = compile(*program);
    ASSERT_EQ(compiled.graph.ops.size(), 1u);
    EXPECT_EQ(compiled.graph.ops[0].kind, OpKind::GroupQuantMatMul);
    // The op quantizes its input.
    EXPECT_NE(compiled.graph.ops[0].group_quant_matmul().input_quant, InputQuant::None);
    DelegateSummary summary;
    auto out = run(compiled, {x}, {want}, {}, &summary);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(summary.dot_matmuls, own_kernels_supported() ? 1 : 0);
    EXPECT_TRUE(at::allclose(out[0], want, 1e-5, 1e-5))
        << (out[0] - want).abs().max().item<float>();
  }
  // Not torchao's: the scale read outside the chain: its ops are not claimed.
  auto leaked = parse_text(per_token_chain_program(x, wq, scales, b, want, 255.f, true));
  ASSERT_NE(leaked, nullptr);
  for (const ir::Node* node : leaked->graph().nodes()) {
    if (node->op() != "aten::amin") continue;
    EXPECT_FALSE(compiler_backend()->support().check(*node).supported);
  }
  // Another divisor than 255 in its constant: the structure is claimed, and the compile fails
  // naming the node rather than computing torchao's quantization for it (C33).
  auto other = parse_text(per_token_chain_program(x, wq, scales, b, want, 254.f, false));
  ASSERT_NE(other, nullptr);
  auto r = compiler_backend()->preprocess(*other, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("torchao's per-token quantization"), std::string::npos)
      << r.status().message();
}

// PT2E's dynamic quantization (a quantizer's is_dynamic config) as torch.ao's references compute
// it in ATen: determine_qparams over the whole tensor, then quantize_per_tensor.tensor.
struct PerTensorReference {
  float scale;
  int32_t zero_point;
  at::Tensor q;  // int8
};
PerTensorReference per_tensor_reference(const at::Tensor& x, double eps) {
  const at::Tensor zero = at::zeros({}, x.options());
  const at::Tensor mn = at::minimum(x.min(), zero), mx = at::maximum(x.max(), zero);
  const at::Tensor scale = at::max((mx - mn) / 255.0, at::tensor({static_cast<float>(eps)}));
  const at::Tensor zp =
      at::clamp(-128 - at::round(mn / scale).to(at::kInt), -128, 127).to(at::kInt);
  PerTensorReference r{scale.item<float>(), zp.item<int32_t>(), {}};
  const double inv = 1.0 / static_cast<double>(r.scale);  // Python's 1.0 / scale.item()
  r.q = at::clamp(at::round(x * inv) + r.zero_point, -128, 127).to(at::kChar);
  return r;
}

TEST(CpuQuant, PerTensorDynamicQuantizationIsPyTorchsBitForBit) {
  at::manual_seed(17);
  const int64_t k = 64;
  const double eps = 0.000244140625;  // XNNPACKQuantizer's dynamic config: 2^-12
  const std::vector<at::Tensor> inputs = {
      at::randn({4, k}),
      at::randn({3, k}) * 1e4,
      at::rand({2, k}) + 1,
      -at::rand({2, k}),
      at::zeros({1, k}),
      at::randn({2, k}) * 1e-9,                                // below eps * 255: the scale is eps
      at::round(at::randn({2, k}) * 8) / 2,                    // ties, rounded to even
      at::full({2, k}, 3e38f) * at::sign(at::randn({2, k}))};  // the range overflows to inf
  for (const at::Tensor& x : inputs) {
    const PerTensorReference want = per_tensor_reference(x, eps);
    const int64_t m = x.size(0);
    AlignedFloats memory(DotRows::bytes(m, k, k, false) / sizeof(float), NAN);
    DotRows got(memory.data(), m, k, k, false);
    got.quantize_tensor(x.contiguous().data_ptr<float>(), static_cast<float>(eps));
    for (int64_t r = 0; r < m; ++r) {
      SCOPED_TRACE("row " + std::to_string(r) + " of " +
                   std::to_string(x.abs().max().item<float>()));
      EXPECT_EQ(std::memcmp(&got.scale[r], &want.scale, sizeof(float)), 0)
          << got.scale[r] << " " << want.scale;
      EXPECT_EQ(got.zero[r], want.zero_point);
      for (int64_t i = 0; i < k; ++i) {
        ASSERT_EQ(got.xq[r * k + i], want.q[r][i].item<int8_t>()) << "element " << i;
      }
    }
  }
}

// The IR of PT2E's dynamically quantized linears: x [2, 5, K] quantized per tensor, read through
// a view by two linears (one with a bias), as a quantizer's is_dynamic config writes them.
struct DynamicLinears {
  std::string text;
  at::Tensor x, y1, y2;
};
DynamicLinears dynamic_linears(double eps, bool scale_is_output, bool read_by_relu) {
  const int64_t k = 64, n1 = 24, n2 = 16;
  DynamicLinears d;
  d.x = at::randn({2, 5, k});
  // Weight rows of one sign (0: positive, 1: negative): an all-infinite input's outputs there
  // are infinite, elsewhere NaN.
  const at::Tensor w1q = at::randint(-127, 128, {n1, k}).to(at::kChar);
  w1q[0] = at::randint(1, 128, {k}).to(at::kChar);
  w1q[1] = at::randint(-127, 0, {k}).to(at::kChar);
  const at::Tensor w2q = at::randint(-127, 128, {n2, k}).to(at::kChar);
  const at::Tensor s1 = at::rand({n1}) * 0.01 + 0.002, s2 = at::rand({n2}) * 0.01 + 0.002;
  const at::Tensor b1 = at::randn({n1});
  const PerTensorReference ref = per_tensor_reference(d.x, eps);
  const at::Tensor xd = ((ref.q.to(at::kFloat) - ref.zero_point) * ref.scale).view({10, k});
  const at::Tensor w1 = w1q.to(at::kFloat) * s1.view({n1, 1});
  const at::Tensor w2 = w2q.to(at::kFloat) * s2.view({n2, 1});
  d.y1 = at::addmm(b1, xd, w1.t());
  d.y2 = at::mm(xd, w2.t());
  Prog p;
  const std::string x = p.input("x", d.x);
  const std::string s1v = p.weight("s1", s1), s2v = p.weight("s2", s2), b1v = p.weight("b1", b1);
  char e[64];
  std::snprintf(e, sizeof e, "%.17g", eps);
  p.body.push_back(
      "(%scale: f64[1], %zp: i64[1]) = quantized_decomposed::choose_qparams.tensor("
      "input=" +
      x + ", quant_min=-128, quant_max=127, eps=" + e + ", dtype=dtype(i8))");
  p.body.push_back("%q: " + i8_type(d.x) +
                   " = quantized_decomposed::quantize_per_tensor.tensor(input=" + x +
                   ", scale=%scale, zero_point=%zp, quant_min=-128, quant_max=127, "
                   "dtype=dtype(i8))");
  const std::string dq =
      p.node("dq", d.x,
             "quantized_decomposed::dequantize_per_tensor.tensor(input=%q, scale=%scale, "
             "zero_point=%zp, quant_min=-128, quant_max=127, dtype=dtype(i8), out_dtype=none)");
  const std::string v = p.node("v", xd, "aten::view.default(self=" + dq + ", size=[10, 64])");
  auto weight = [&](const std::string& name, const std::string& scales, const at::Tensor& w) {
    const std::string wd =
        p.node(name + "d", w,
               "quantized_decomposed::dequantize_per_channel.default(input=%" + name +
                   "q, scales=" + scales +
                   ", zero_points=none, axis=0, quant_min=-127, quant_max=127, dtype=dtype(i8), "
                   "out_dtype=none)");
    return p.node(name + "t", w.t(), "aten::permute.default(self=" + wd + ", dims=[1, 0])");
  };
  const std::string w1t = weight("w1", s1v, w1), w2t = weight("w2", s2v, w2);
  p.outputs = {p.node("y1", d.y1,
                      "aten::addmm.default(self=" + b1v + ", mat1=" + v + ", mat2=" + w1t +
                          ", beta=1, alpha=1)"),
               p.node("y2", d.y2, "aten::mm.default(self=" + v + ", mat2=" + w2t + ")")};
  if (read_by_relu) p.outputs.push_back(p.node("r", d.x, "aten::relu.default(self=" + dq + ")"));
  if (scale_is_output) p.outputs.push_back("%scale");
  d.text = "weight \"w1q\": " + i8_type(w1q) + " = hex\"" + hex(w1q) + "\"\n" +
           "weight \"w2q\": " + i8_type(w2q) + " = hex\"" + hex(w2q) + "\"\n" + p.text();
  d.text.insert(d.text.find("\n) {\n"), ",\n    %w1q: " + i8_type(w1q) +
                                            " parameter \"w1q\",\n    %w2q: " + i8_type(w2q) +
                                            " parameter \"w2q\"");
  return d;
}

TEST(CpuQuant, DynamicPerTensorQuantizedLinearsClaimedWhole) {
  at::manual_seed(18);
  const double eps = 0.000244140625;
  const DynamicLinears d = dynamic_linears(eps, false, false);
  auto program = parse_text(d.text);
  ASSERT_NE(program, nullptr);
  const Compiled compiled = compile(*program);
  // Each linear quantizes the input itself: the chain's three nodes and the view emit nothing.
  ASSERT_EQ(compiled.graph.ops.size(), 2u);
  for (const OpDesc& op : compiled.graph.ops) {
    EXPECT_EQ(op.kind, OpKind::GroupQuantMatMul);
    EXPECT_EQ(op.group_quant_matmul().group, 64);
    EXPECT_EQ(op.group_quant_matmul().input_quant, InputQuant::PerTensor);
    EXPECT_EQ(op.group_quant_matmul().eps, static_cast<float>(eps));
  }
  // oneDNN's u8 x s8 matmul where the CPU has VNNI (int8 on), else Ember's dot_gemm.
  for (bool int8 : {true, false}) {
    SCOPED_TRACE(int8 ? "int8 on" : "int8 off");
    const std::vector<CompileSpec> spec = {switched("int8", int8)};
    DelegateSummary summary;
    auto out = run(compiled, {d.x}, {d.y1, d.y2}, spec, &summary);
    ASSERT_EQ(out.size(), 2u);
    const bool onednn = int8 && int8_supported();
    EXPECT_EQ(summary.int8_matmuls, onednn ? 2 : 0);
    EXPECT_EQ(summary.dot_matmuls, !onednn && own_kernels_supported() ? 2 : 0);
    // The same integers, times the same scales, summed in another order: float32 rounding.
    EXPECT_TRUE(at::allclose(out[0], d.y1, 1e-5, 1e-5)) << (out[0] - d.y1).abs().max();
    EXPECT_TRUE(at::allclose(out[1], d.y2, 1e-5, 1e-5)) << (out[1] - d.y2).abs().max();
    // Inputs holding inf or NaN, as PyTorch dequantizes them: an inf among finite values
    // quantizes those to the zero point, (zp - zp) * inf = NaN, and so NaN throughout; an
    // input all +inf (-inf) quantizes to 0 and zero point -128 (127), so every value is +inf
    // (-inf), and an output is infinite where its weight row has one sign.
    for (const float fill : {0.f, INFINITY, -INFINITY, NAN}) {
      SCOPED_TRACE("fill " + std::to_string(fill));
      at::Tensor bad = fill == 0.f ? d.x.clone() : at::full_like(d.x, fill);
      bad.index_put_({0, 1, 2}, fill == 0.f ? INFINITY : fill);
      auto got = run(compiled, {bad}, {d.y1, d.y2}, spec, nullptr);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(at::isnan(got[1]).all().item<bool>()) << got[1];
      if (std::isinf(fill)) {
        EXPECT_TRUE(at::all(got[0].select(1, 0) == fill).item<bool>()) << got[0];
        EXPECT_TRUE(at::all(got[0].select(1, 1) == -fill).item<bool>()) << got[0];
        EXPECT_TRUE(at::isnan(got[0].slice(1, 2)).all().item<bool>()) << got[0];
      } else {
        EXPECT_TRUE(at::isnan(got[0]).all().item<bool>()) << got[0];
      }
    }
  }
}

TEST(CpuQuant, DynamicPerTensorQuantizationClaimedOnlyWhole) {
  // The parameters read outside the chain, the dequantized values read by something else than
  // a linear, or eps 0 (a zero scale, which PyTorch's quantize cannot invert): the chain stays
  // portable (its result a float input of the linears).
  for (const auto& [eps, scale_out, relu] : {std::tuple{0.000244140625, true, false},
                                             {0.000244140625, false, true},
                                             {0.0, false, false}}) {
    SCOPED_TRACE(std::to_string(eps) + (scale_out ? " scale out" : "") + (relu ? " relu" : ""));
    auto program = parse_text(dynamic_linears(eps, scale_out, relu).text);
    ASSERT_NE(program, nullptr);
    int chain = 0;
    for (const ir::Node* node : program->graph().nodes()) {
      if (node->op().find("quantize_per_tensor") == std::string::npos &&
          node->op() != "quantized_decomposed::choose_qparams") {
        continue;
      }
      ++chain;
      const auto support = compiler_backend()->support().check(*node);
      EXPECT_FALSE(support.supported) << node->describe();
    }
    EXPECT_EQ(chain, 3);
  }
}

}  // namespace
}  // namespace ember::cpu
