// Ember's int8 1x1 kernel (QuantPointwise, kernels/quant_gemm.h) with full-range weights: its
// pairs form (vpmaddwd) on every variant this CPU has, against plain integer loops, the cases
// that saturate pmaddubsw's 16-bit pairs among them; which form each CPU gets; and 1x1
// convolutions of full-range weights in a uint8 chain against ATen's reference.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/test/quant_test_util.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

// The bytes the kernel must write, from plain loops: each output's sum of (x - zero point) q in
// 64 bits (x = u - 128), then Requantize's arithmetic one value at a time (fma by mult, add,
// clamp, round to nearest even, + shift, saturated to a byte).
std::vector<uint8_t> reference(const std::vector<uint8_t>& u, const std::vector<int8_t>& q,
                               int64_t m, int64_t k, int64_t n, int32_t in_zero_point,
                               const Requantize& rq) {
  std::vector<uint8_t> out(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t x = int64_t{u[static_cast<size_t>(r * k + i)]} - 128 - in_zero_point;
        sum += x * q[static_cast<size_t>(j * k + i)];
      }
      const auto at = static_cast<size_t>(j);
      float y = std::fma(static_cast<float>(sum), rq.mult[at], rq.add[at]);
      y = y < rq.lo ? rq.lo : y > rq.hi ? rq.hi : y;
      const auto v = static_cast<int32_t>(std::nearbyint(y)) + rq.shift;
      out[static_cast<size_t>(r * n + j)] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
  return out;
}

struct Case {
  std::string name;
  int64_t m, k, n;
  int32_t in_zero_point;
  // Weights and inputs: random within [lo, hi] where fixed is false, else the extremes.
  int w_lo, w_hi, u_lo, u_hi;
};

// Every variant, in the pairs form, writes the reference's bytes exactly: random full-range
// weights, long K, partial panels and tiles, and the extremes (weights -128, -127 and 127 by
// inputs 0 and 255, whose pmaddubsw pairs saturate: 2 * 255 * 127 > 2^15). Where the weights
// fit [-64, 63] the quads form writes the same bytes.
TEST(CpuQuantPointwise, PairsAgainstIntegerLoops) {
  const std::vector<const simd::Kernels*> variants = simd_variants();
  if (variants.empty()) GTEST_SKIP() << "no AVX2";
  at::manual_seed(31);
  const std::vector<Case> cases = {
      {"random full range", 61, 96, 40, -3, -128, 127, 0, 255},
      {"long K", 29, 2048, 24, 5, -128, 127, 0, 255},
      {"weights 127, inputs 255", 27, 256, 16, -128, 127, 127, 255, 255},
      {"weights -128, inputs 255", 27, 256, 16, -128, -128, -128, 255, 255},
      {"weights -127, inputs 0", 27, 256, 16, 127, -127, -127, 0, 0},
      {"weights +-127, inputs 0 or 255", 50, 1024, 48, 0, -127, 127, 0, 255},
      {"7-bit weights", 61, 144, 40, 9, -64, 63, 0, 255},
      // Fewer rows than a thread's unit: two threads split the panels instead.
      {"5 rows, 5 panels", 5, 200, 70, -1, -128, 127, 0, 255},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<uint8_t> u(static_cast<size_t>(c.m * c.k));
    std::vector<int8_t> q(static_cast<size_t>(c.n * c.k));
    const at::Tensor ur = at::randint(c.u_lo, c.u_hi + 1, {c.m * c.k}).to(at::kByte);
    const at::Tensor qr = at::randint(c.w_lo, c.w_hi + 1, {c.n * c.k}).to(at::kChar);
    for (size_t i = 0; i < u.size(); ++i) u[i] = ur.data_ptr<uint8_t>()[i];
    for (size_t i = 0; i < q.size(); ++i) q[i] = qr.data_ptr<int8_t>()[i];
    if (c.name == "weights +-127, inputs 0 or 255") {
      // Runs of equal signs, so that many pairs of products reach the extremes together.
      for (size_t i = 0; i < q.size(); ++i) q[i] = (i / 8) % 2 ? 127 : -127;
      for (size_t i = 0; i < u.size(); ++i) u[i] = (i / 16) % 3 ? 255 : 0;
    }
    const at::Tensor ws = at::rand({c.n}) * 0.0005 + 0.0001, bias = at::randn({c.n});
    const bool seven = c.w_lo >= -64 && c.w_hi <= 63;
    for (const QuantPointwise::Form form :
         {QuantPointwise::Form::Pairs, QuantPointwise::Form::Quads}) {
      if (form == QuantPointwise::Form::Quads && !seven) continue;
      const QuantPointwise b = QuantPointwise::pack(
          q.data(), ws.data_ptr<float>(), bias.data_ptr<float>(), c.k, c.n, 0.05f,
          static_cast<float>(c.in_zero_point), Clamp{-20.f, 30.f}, 1.f / 0.04f, -7.f, {}, form);
      ASSERT_FALSE(b.rq.empty());
      EXPECT_EQ(b.paired, form == QuantPointwise::Form::Pairs);
      const std::vector<uint8_t> want = reference(u, q, c.m, c.k, c.n, c.in_zero_point, b.rq);
      for (const simd::Kernels* v : variants) {
        std::vector<uint8_t> got(static_cast<size_t>(c.m * c.n + 1), uint8_t{0xAB});  // + guard
        v->quant_pointwise(0, c.m, b, u.data(), got.data(), 0, b.w.panels);
        EXPECT_EQ(got.back(), 0xAB) << v->name << " wrote past the output";
        got.pop_back();
        EXPECT_EQ(got, want) << v->name << (b.paired ? " pairs" : " quads");
      }
      // The threaded entry point splits rows (or panels); the same bytes.
      std::vector<uint8_t> threaded(static_cast<size_t>(c.m * c.n));
      quant_pointwise_threads(2, c.m, b, u.data(), threaded.data());
      EXPECT_EQ(threaded, want);
    }
    // The quads form without VNNI on the extremes: pmaddubsw saturates, so this test would see
    // a kernel that took the wrong form.
    if (c.name == "weights 127, inputs 255" && !variants[0]->vnni) {
      const QuantPointwise quads =
          QuantPointwise::pack(q.data(), ws.data_ptr<float>(), bias.data_ptr<float>(), c.k, c.n,
                               0.05f, static_cast<float>(c.in_zero_point), Clamp{-1e3f, 1e3f},
                               1.f / 40.f, 0.f, {}, QuantPointwise::Form::Quads);
      const QuantPointwise pairs =
          QuantPointwise::pack(q.data(), ws.data_ptr<float>(), bias.data_ptr<float>(), c.k, c.n,
                               0.05f, static_cast<float>(c.in_zero_point), Clamp{-1e3f, 1e3f},
                               1.f / 40.f, 0.f, {}, QuantPointwise::Form::Pairs);
      std::vector<uint8_t> a(static_cast<size_t>(c.m * c.n)), p(a.size());
      variants[0]->quant_pointwise(0, c.m, quads, u.data(), a.data(), 0, quads.w.panels);
      variants[0]->quant_pointwise(0, c.m, pairs, u.data(), p.data(), 0, pairs.w.panels);
      EXPECT_EQ(p, reference(u, q, c.m, c.k, c.n, c.in_zero_point, pairs.rq));
      EXPECT_NE(a, p) << "pmaddubsw did not saturate: the extremes test nothing";
    }
  }
}

// The form each CPU gets: quads with VNNI (vpdpbusd sums any weights in 32 bits) or weights
// within [-64, 63] (pmaddubsw cannot saturate, and takes four products an instruction), else
// pairs; an explicit form is kept.
TEST(CpuQuantPointwise, FormForEachCpu) {
  using Form = QuantPointwise::Form;
  const std::vector<int8_t> seven = {-64, 63, 0, 5}, full = {-64, 64, 0, 5}, low = {-65, 0, 1, 2};
  EXPECT_FALSE(QuantPointwise::pairs_for(Form::ForThisCpu, false, seven.data(), 4));
  EXPECT_TRUE(QuantPointwise::pairs_for(Form::ForThisCpu, false, full.data(), 4));
  EXPECT_TRUE(QuantPointwise::pairs_for(Form::ForThisCpu, false, low.data(), 4));
  EXPECT_FALSE(QuantPointwise::pairs_for(Form::ForThisCpu, true, full.data(), 4));
  EXPECT_FALSE(QuantPointwise::pairs_for(Form::ForThisCpu, true, seven.data(), 4));
  EXPECT_TRUE(QuantPointwise::pairs_for(Form::Pairs, true, seven.data(), 4));
  EXPECT_FALSE(QuantPointwise::pairs_for(Form::Quads, false, full.data(), 4));
  if (!own_kernels_supported()) return;
  const std::vector<float> ones(1, 1.f);
  const QuantPointwise b =
      QuantPointwise::pack(full.data(), ones.data(), nullptr, 4, 1, 1.f, 0.f, Clamp{}, 1.f, 0.f);
  EXPECT_EQ(b.paired, !simd::kernels()->vnni);
}

// MobileNet's 1x1 layers with full-range weights (ExecuTorch's XNNPACKQuantizer's), in a uint8
// chain: an expansion (relu6), a projection plus a residual, and a last 1x1 layer whose result
// the program returns as floats. In integers on Ember's kernel from AVX2 up (oneDNN's where it
// has VNNI for the last); against ATen's reference decomposition.
TEST(CpuQuantPointwise, FullRangeLayersInAChain) {
  at::manual_seed(32);
  const int64_t c = 24;
  const at::Tensor x = at::randn({1, c, 9, 9});
  const double s[] = {0.04, 0.03, 0.05, 0.06, 0.07};
  const int64_t z[] = {2, -128, 4, -9, 0};
  QuantConvChain chain(x, s[0], z[0]);
  at::Tensor ref = dequantize(quantize(x, s[0], z[0]), s[0], z[0]);
  const std::string in = chain.cur;
  const at::Tensor in_ref = ref;
  const int64_t widths[] = {4 * c, c, 16};
  for (int layer = 0; layer < 3; ++layer) {
    const int64_t out_c = widths[layer], in_c = ref.size(1);
    at::Tensor wq = at::randint(-127, 128, {out_c, in_c, 1, 1}).to(at::kChar);
    wq.index_put_({0, 0}, 127);  // both ends of the range at least once
    wq.index_put_({0, 1}, -127);
    const at::Tensor ws = at::rand({out_c}) * 0.002 + 0.0005, bias = at::randn({out_c}) * 0.3;
    const at::Tensor w = wq.to(at::kFloat) * ws.view({out_c, 1, 1, 1});
    const at::Tensor y = at::convolution(ref, w, bias, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1);
    const std::string l = std::to_string(layer);
    if (layer == 0) {
      ref = dequantize(quantize(at::hardtanh(y, 0, 6), s[1], z[1]), s[1], z[1]);
      chain.add(l, wq, ws, bias, y, 1, 1, true, s[1], z[1]);
    } else if (layer == 1) {
      const at::Tensor sum = dequantize(quantize(y, s[2], z[2]), s[2], z[2]) + in_ref;
      ref = dequantize(quantize(sum, s[3], z[3]), s[3], z[3]);
      chain.add_residual(l, wq, ws, bias, y, s[2], z[2], in, false, s[3], z[3]);
    } else {
      ref = dequantize(quantize(at::relu(y), s[4], z[4]), s[4], z[4]);
      chain.add(l, wq, ws, bias, y, 1, 1, false, s[4], z[4]);
    }
  }
  auto program = chain.program();
  ASSERT_NE(program, nullptr);
  DelegateSummary summary;
  auto out = run(compile(*program), {x}, {ref}, {}, &summary);
  ASSERT_EQ(out.size(), 1u);
  const bool own = int8_7bit_supported() && own_kernels_supported();
  if (!int8_supported()) {
    // Without VNNI only Ember's kernel is exact on these weights: all three layers on it.
    EXPECT_EQ(summary.pointwise_steps, own ? 3 : 0);
    EXPECT_EQ(summary.int8_convolutions, own ? 3 : 0);
  }
  expect_within_steps(out[0], ref, s[4], 3, 20);
}

}  // namespace
}  // namespace ember::cpu
