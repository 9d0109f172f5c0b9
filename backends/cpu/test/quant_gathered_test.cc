// Ember's int8 convolution of gathered rows (QuantGatheredConv, kernels/quant_conv_gemm.h): its
// im2col against direct indexing, its bytes against a direct integer convolution in plain loops
// (every shape a network has: 3x3 at strides 1 and 2, 1x1 at stride 2, a 7x7 stem of 3 channels,
// dilation, uneven padding, batches; on every variant this CPU has and on two threads), and full
// range 3x3 and strided layers in a uint8 chain against ATen's reference.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_conv_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/test/quant_test_util.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

using Shape = QuantGatheredConv::Shape;

struct ConvCase {
  std::string name;
  Shape s;
  int64_t n, pad_bottom, pad_right;
};

// The output size PyTorch gives for padding pad_h / pad_w before and the given one after.
Shape with_out(Shape s, int64_t pad_bottom, int64_t pad_right) {
  s.out_h = (s.h + s.pad_h + pad_bottom - (s.kh - 1) * s.dilation_h - 1) / s.stride_h + 1;
  s.out_w = (s.w + s.pad_w + pad_right - (s.kw - 1) * s.dilation_w - 1) / s.stride_w + 1;
  return s;
}

std::vector<ConvCase> cases() {
  auto make = [](std::string name, int64_t batch, int64_t h, int64_t w, int64_t c, int64_t n,
                 int64_t k, int64_t stride, int64_t pad, int64_t dilation, int64_t pad_after) {
    Shape s;
    s.batch = batch;
    s.h = h;
    s.w = w;
    s.c = c;
    s.kh = s.kw = k;
    s.stride_h = s.stride_w = stride;
    s.pad_h = s.pad_w = pad;
    s.dilation_h = s.dilation_w = dilation;
    return ConvCase{std::move(name), with_out(s, pad_after, pad_after), n, pad_after, pad_after};
  };
  return {
      make("3x3 stride 1", 1, 9, 11, 16, 24, 3, 1, 1, 1, 1),
      make("3x3 stride 2, 37 outputs", 1, 14, 13, 32, 37, 3, 2, 1, 1, 1),
      make("1x1 stride 2", 2, 8, 8, 24, 40, 1, 2, 0, 1, 0),
      make("7x7 stride 2 stem, 3 channels", 1, 20, 18, 3, 16, 7, 2, 3, 1, 3),
      make("3x3 dilation 2", 1, 10, 10, 8, 16, 3, 1, 2, 2, 2),
      make("5x5 no padding, 5 channels", 2, 9, 7, 5, 17, 5, 1, 0, 1, 0),
      make("3x3 padding only before", 1, 6, 6, 12, 16, 3, 1, 1, 1, 0),
      make("long K: 3x3 of 256 channels", 1, 5, 5, 256, 32, 3, 1, 1, 1, 1),
  };
}

// The bytes the kernel must write: each output's sum of (x - zero point) q over the taps inside
// the image in 64 bits (a padded tap adds nothing), then Requantize's arithmetic one value at a
// time, as quant_pointwise_test.cc's reference.
std::vector<uint8_t> reference(const Shape& s, int64_t n, const std::vector<uint8_t>& u,
                               const std::vector<int8_t>& q, int32_t in_zero_point,
                               const Requantize& rq) {
  std::vector<uint8_t> out(static_cast<size_t>(s.batch * s.out_h * s.out_w * n));
  size_t at = 0;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t oy = 0; oy < s.out_h; ++oy) {
      for (int64_t ox = 0; ox < s.out_w; ++ox) {
        for (int64_t j = 0; j < n; ++j) {
          int64_t sum = 0;
          for (int64_t ky = 0; ky < s.kh; ++ky) {
            for (int64_t kx = 0; kx < s.kw; ++kx) {
              const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
              const int64_t ix = ox * s.stride_w - s.pad_w + kx * s.dilation_w;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              for (int64_t ch = 0; ch < s.c; ++ch) {
                const int64_t x =
                    int64_t{u[static_cast<size_t>(((b * s.h + iy) * s.w + ix) * s.c + ch)]} - 128 -
                    in_zero_point;
                sum += x * q[static_cast<size_t>(((j * s.c + ch) * s.kh + ky) * s.kw + kx)];
              }
            }
          }
          const auto c = static_cast<size_t>(j);
          float y = std::fma(static_cast<float>(sum), rq.mult[c], rq.add[c]);
          y = y < rq.lo ? rq.lo : y > rq.hi ? rq.hi : y;
          const auto v = static_cast<int32_t>(std::nearbyint(y)) + rq.shift;
          out[at++] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
        }
      }
    }
  }
  return out;
}

// The gathered rows hold each output pixel's taps in [ky][kx][c] order, the source's zero point
// (+ 128) where a tap falls in the padding, then zeros up to k (a multiple of 4).
TEST(CpuQuantGathered, GatherAgainstIndexing) {
  at::manual_seed(40);
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Shape& s = c.s;
    const int32_t zp = -5;
    const std::vector<int8_t> q(static_cast<size_t>(c.n * s.c * s.kh * s.kw), 1);
    const std::vector<float> scales(static_cast<size_t>(c.n), 0.01f);
    const QuantGatheredConv conv =
        QuantGatheredConv::pack(s, q.data(), QuantGatheredConv::Order::Oihw, scales.data(), nullptr,
                                c.n, 0.1f, static_cast<float>(zp), Clamp{}, 10.f, 0.f);
    ASSERT_FALSE(conv.empty());
    const int64_t used = s.kh * s.kw * s.c;
    EXPECT_EQ(conv.k(), (used + 3) / 4 * 4);
    const at::Tensor ur = at::randint(0, 256, {s.batch * s.h * s.w * s.c}).to(at::kByte);
    const uint8_t* u = ur.data_ptr<uint8_t>();
    const int64_t m = s.batch * s.out_h * s.out_w;
    std::vector<uint8_t> rows(static_cast<size_t>(m * conv.k()), 0xCD);
    conv.gather(u, 0, m, rows.data());
    int64_t padded = 0;
    for (int64_t r = 0; r < m; ++r) {
      const int64_t ox = r % s.out_w, oy = r / s.out_w % s.out_h, b = r / (s.out_w * s.out_h);
      for (int64_t i = 0; i < conv.k(); ++i) {
        uint8_t want = 0;
        if (i < used) {
          const int64_t ch = i % s.c, kx = i / s.c % s.kw, ky = i / (s.c * s.kw);
          const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
          const int64_t ix = ox * s.stride_w - s.pad_w + kx * s.dilation_w;
          const bool inside = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
          padded += inside ? 0 : 1;
          want = inside ? u[((b * s.h + iy) * s.w + ix) * s.c + ch] : uint8_t{128 + zp};
        }
        ASSERT_EQ(rows[static_cast<size_t>(r * conv.k() + i)], want) << "row " << r << " at " << i;
      }
    }
    if (s.pad_h > 0) {
      EXPECT_GT(padded, 0) << "no tap fell in the padding: the case tests less";
    }
    // A block from a row inside an image (and across images, with a batch) gathers the same
    // rows.
    const int64_t from = m / 3 + 1;
    std::vector<uint8_t> part(static_cast<size_t>((m - from) * conv.k()));
    conv.gather(u, from, m, part.data());
    EXPECT_TRUE(std::equal(part.begin(), part.end(), rows.begin() + from * conv.k()))
        << "rows " << from << " on";
  }
}

// Random full-range weights (and the extremes -128 and 127 among them) by random inputs: every
// variant, on the gathered rows, and run() on one and two threads write the reference's bytes,
// the weight given in PyTorch's order or channels-last.
TEST(CpuQuantGathered, AgainstDirectIntegerConvolution) {
  const std::vector<const simd::Kernels*> variants = simd_variants();
  if (variants.empty()) GTEST_SKIP() << "no AVX2";
  at::manual_seed(41);
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Shape& s = c.s;
    const int32_t zp = 3;
    const at::Tensor qr = at::randint(-128, 128, {c.n * s.c * s.kh * s.kw}).to(at::kChar);
    std::vector<int8_t> q(qr.data_ptr<int8_t>(), qr.data_ptr<int8_t>() + qr.numel());
    q[0] = -128;
    q[1] = 127;
    const at::Tensor ur = at::randint(0, 256, {s.batch * s.h * s.w * s.c}).to(at::kByte);
    const std::vector<uint8_t> u(ur.data_ptr<uint8_t>(), ur.data_ptr<uint8_t>() + ur.numel());
    const at::Tensor ws = at::rand({c.n}) * 0.0005 + 0.0001, bias = at::randn({c.n});
    // The same weight channels-last, as ExecuTorch's XNNPACK filters hold it.
    std::vector<int8_t> ohwi(q.size());
    for (int64_t j = 0; j < c.n; ++j) {
      for (int64_t ch = 0; ch < s.c; ++ch) {
        for (int64_t t = 0; t < s.kh * s.kw; ++t) {
          ohwi[static_cast<size_t>((j * s.kh * s.kw + t) * s.c + ch)] =
              q[static_cast<size_t>((j * s.c + ch) * s.kh * s.kw + t)];
        }
      }
    }
    using Order = QuantGatheredConv::Order;
    using Form = QuantPointwise::Form;
    for (const auto& [order, form] :
         {std::pair{Order::Oihw, Form::Pairs}, std::pair{Order::Ohwi, Form::Pairs},
          std::pair{Order::Oihw, Form::ForThisCpu}}) {
      SCOPED_TRACE(order == Order::Ohwi ? "channels-last weight" : "PyTorch's weight");
      const QuantGatheredConv conv = QuantGatheredConv::pack(
          s, order == Order::Ohwi ? ohwi.data() : q.data(), order, ws.data_ptr<float>(),
          bias.data_ptr<float>(), c.n, 0.05f, static_cast<float>(zp), Clamp{-20.f, 30.f},
          1.f / 0.04f, -7.f, {}, form);
      ASSERT_FALSE(conv.empty());
      EXPECT_TRUE(conv.paired() || form == QuantPointwise::Form::ForThisCpu);
      const int64_t m = s.batch * s.out_h * s.out_w;
      std::vector<uint8_t> rows(static_cast<size_t>(m * conv.k()));
      conv.gather(u.data(), 0, m, rows.data());
      const std::vector<uint8_t> want = reference(s, c.n, u, q, zp, conv.matrix().rq);
      for (const simd::Kernels* v : variants) {
        if (!conv.paired() && !v->vnni && form == QuantPointwise::Form::ForThisCpu) {
          // Quads without VNNI saturate on full-range weights: this form is not chosen there.
          continue;
        }
        std::vector<uint8_t> got(want.size() + 1, uint8_t{0xAB});
        v->quant_pointwise(0, m, conv.matrix(), rows.data(), got.data(), 0, conv.matrix().w.panels);
        EXPECT_EQ(got.back(), 0xAB) << v->name << " wrote past the output";
        got.pop_back();
        EXPECT_EQ(got, want) << v->name;
      }
      for (const int threads : {1, 2}) {
        std::vector<uint8_t> scratch(conv.scratch_bytes(threads) + 64);
        void* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64);
        std::vector<uint8_t> got(want.size());
        conv.run(threads, u.data(), got.data(), aligned);
        EXPECT_EQ(got, want) << threads << " threads";
      }
    }
  }
}

// ResNet's layers with full-range weights (ExecuTorch's XNNPACKQuantizer's) in a uint8 chain: a
// 7x7 stride-2 stem of three channels, a 3x3 layer, a 3x3 stride-2 one, a 3x3 one plus a residual
// (the stride-2 layer's result), and a last 3x3 one whose result the program returns as floats.
// Without VNNI all five run in integers on Ember's kernels (before: the float convolution of the
// dequantized weights); against ATen's reference decomposition.
TEST(CpuQuantGathered, FullRangeLayersInAChain) {
  at::manual_seed(42);
  const at::Tensor x = at::randn({1, 3, 23, 21});
  const double s[] = {0.04, 0.03, 0.05, 0.06, 0.07, 0.05, 0.08};
  const int64_t z[] = {2, -128, 4, -9, 0, 3, -20};
  QuantConvChain chain(x, s[0], z[0]);
  at::Tensor ref = dequantize(quantize(x, s[0], z[0]), s[0], z[0]);
  const int64_t widths[] = {16, 16, 32, 32, 24}, kernels[] = {7, 3, 3, 3, 3};
  const int64_t strides[] = {2, 1, 2, 1, 1};
  std::string skip;
  at::Tensor skip_ref;
  for (int layer = 0; layer < 5; ++layer) {
    const int64_t out_c = widths[layer], in_c = ref.size(1), k = kernels[layer];
    at::Tensor wq = at::randint(-128, 128, {out_c, in_c, k, k}).to(at::kChar);
    wq.index_put_({0, 0, 0, 0}, 127);  // both ends of the range at least once
    wq.index_put_({0, 0, 0, 1}, -128);
    const at::Tensor ws = at::rand({out_c}) * 0.002 + 0.0005, bias = at::randn({out_c}) * 0.3;
    const at::Tensor w = wq.to(at::kFloat) * ws.view({out_c, 1, 1, 1});
    const at::Tensor y = at::convolution(ref, w, bias, {strides[layer], strides[layer]},
                                         {k / 2, k / 2}, {1, 1}, false, {0, 0}, 1);
    const std::string l = std::to_string(layer);
    if (layer == 3) {
      const at::Tensor sum = dequantize(quantize(y, s[4], z[4]), s[4], z[4]) + skip_ref;
      ref = dequantize(quantize(sum, s[5], z[5]), s[5], z[5]);
      chain.add_residual(l, wq, ws, bias, y, s[4], z[4], skip, false, s[5], z[5]);
      continue;
    }
    const int at_out = layer < 3 ? layer + 1 : 6;
    ref = dequantize(quantize(at::relu(y), s[at_out], z[at_out]), s[at_out], z[at_out]);
    chain.add(l, wq, ws, bias, y, strides[layer], 1, false, s[at_out], z[at_out]);
    skip = chain.cur;
    skip_ref = ref;
  }
  auto program = chain.program();
  ASSERT_NE(program, nullptr);
  DelegateSummary summary;
  auto out = run(compile(*program), {x}, {ref}, {}, &summary);
  ASSERT_EQ(out.size(), 1u);
  if (!int8_supported() && own_kernels_supported()) {
    // Without VNNI only Ember's kernels are exact on these weights: all five layers on them.
    EXPECT_EQ(summary.gathered_conv_steps, 5);
    EXPECT_EQ(summary.int8_convolutions, 5);
  }
  expect_within_steps(out[0], ref, s[6], 3, 20);
}

}  // namespace
}  // namespace ember::cpu
