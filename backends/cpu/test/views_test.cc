// Views in the cpu backend: reshapes and permutes that are read through strides instead of being
// copied, checked against ATen and by the steps they leave.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "backends/cpu/onednn/layout.h"
#include "backends/cpu/test/test_util.h"

namespace ember::cpu {
namespace {

// reshaped_strides() against ATen's own view rule: the strides at::Tensor::view gives, or none
// where view refuses (and reshape would copy).
TEST(CpuViews, ReshapedStridesFollowATensView) {
  struct Case {
    std::vector<int64_t> dims, perm, new_dims;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4, 5}, {0, 1, 2, 3}, {6, 20}},          // dense: anything
      {{2, 3, 4, 5}, {0, 1, 2, 3}, {1, 120, 1}},      // ones anywhere
      {{2, 3, 4, 5}, {0, 2, 1, 3}, {2, 4, 15}},       // merges the dims that stay contiguous
      {{2, 3, 4, 5}, {0, 2, 1, 3}, {8, 15}},          // 2 and 4 are not contiguous to each other
      {{2, 3, 4, 5}, {0, 2, 1, 3}, {2, 4, 3, 5}},     // the same shape
      {{1, 3, 4, 5}, {0, 1, 3, 2}, {3, 5, 4}},        // a leading 1 dropped (K^T of attention)
      {{1, 3, 4, 5}, {0, 1, 3, 2}, {15, 4}},          // heads and columns merged: contiguous
      {{1, 3, 4, 5}, {0, 1, 3, 2}, {3, 20}},          // K^T's last two merged: not contiguous
      {{2, 3, 4, 5}, {3, 2, 1, 0}, {5, 4, 6}},        // 3 and 2 merged, reversed: not contiguous
      {{2, 3, 4, 5}, {0, 1, 2, 3}, {2, 3, 2, 2, 5}},  // a dim split
  };
  for (const Case& c : cases) {
    const at::Tensor x =
        at::arange(c10::multiply_integers(c.dims), at::kFloat).view(c.dims).permute(c.perm);
    SCOPED_TRACE(::testing::PrintToString(x.sizes().vec()) + " strides " +
                 ::testing::PrintToString(x.strides().vec()) + " as " +
                 ::testing::PrintToString(c.new_dims));
    const dnnl::memory::dims got =
        delegate::reshaped_strides(x.sizes().vec(), x.strides().vec(), c.new_dims);
    bool aten_views = true;
    std::vector<int64_t> want;
    try {
      want = x.view(c.new_dims).strides().vec();
    } catch (const std::exception&) {
      aten_views = false;
    }
    if (!aten_views) {
      EXPECT_TRUE(got.empty());
      continue;
    }
    ASSERT_EQ(got.size(), c.new_dims.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (c.new_dims[i] != 1) {  // a 1's stride is free
        EXPECT_EQ(got[i], want[i]) << "dim " << i;
      }
    }
  }
}

// copy_to_blocked() writes what oneDNN's reorder writes, byte for byte (the blocks' padding as
// zeros), from plain sources of any strides into the blocked layouts oneDNN's primitives take
// their weights in; it declines, writing nothing, what it does not take.
TEST(CpuViews, CopyToBlockedWritesWhatAReorderWrites) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  struct Case {
    memory::dims dims;
    tag from, to;
  };
  const std::vector<Case> cases = {
      {{64, 64, 3, 3}, tag::acdb, tag::ABcd8b8a},   // an OHWI filter, a 3x3 convolution's
      {{16, 3, 4, 4}, tag::acdb, tag::Acdb8a},      // 3 input channels
      {{20, 3, 2, 2}, tag::abcd, tag::ABcd8b8a},    // both channel counts padded
      {{8, 1, 1, 3, 3}, tag::abcde, tag::Abcde8a},  // depthwise, grouped
      {{12, 1, 1, 7, 7}, tag::bcdea, tag::Abcde8a},
      {{32, 40, 1, 1}, tag::abcd, tag::OIhw4i16o4i},  // a dim in two blocks
      {{48, 24, 3, 3}, tag::acdb, tag::ABcd16b16a},
      {{5, 7, 3}, tag::acb, tag::aBc8b},
      {{6, 5, 4, 3}, tag::cdba, tag::abcd},  // plain to plain
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.dims));
    const memory::desc from_md(c.dims, memory::data_type::f32, c.from);
    const memory::desc to_md(c.dims, memory::data_type::f32, c.to);
    memory from(from_md, engine), want(to_md, engine), got(to_md, engine);
    auto* x = static_cast<float*>(from.get_data_handle());
    for (size_t i = 0; i < from_md.get_size() / sizeof(float); ++i) {
      x[i] = static_cast<float>(i) * 0.25f - 7.f;
    }
    std::memset(got.get_data_handle(), 0xff, to_md.get_size());  // NaNs where padding belongs
    dnnl::reorder(from, want).execute(stream, from, want);
    stream.wait();
    ASSERT_TRUE(delegate::copy_to_blocked(from, got));
    EXPECT_EQ(std::memcmp(got.get_data_handle(), want.get_data_handle(), to_md.get_size()), 0);
  }
  // A strided part of a larger tensor (an offset and strides of its own).
  const memory::desc whole({4, 6, 5}, memory::data_type::f32, tag::abc);
  memory big(whole, engine);
  auto* x = static_cast<float*>(big.get_data_handle());
  for (int i = 0; i < 120; ++i) x[i] = static_cast<float>(i);
  const memory part(whole.submemory_desc({3, 4, 5}, {1, 2, 0}), engine, x);
  const memory::desc to_md({3, 4, 5}, memory::data_type::f32, tag::aBc8b);
  memory want(to_md, engine), got(to_md, engine);
  dnnl::reorder(part, want).execute(stream, const_cast<memory&>(part), want);
  stream.wait();
  ASSERT_TRUE(delegate::copy_to_blocked(part, got));
  EXPECT_EQ(std::memcmp(got.get_data_handle(), want.get_data_handle(), to_md.get_size()), 0);
  // Declined: another datatype, a blocked source, other dims.
  const memory::desc f32_md({16, 8, 2}, memory::data_type::f32, tag::abc);
  memory s8(memory::desc({16, 8, 2}, memory::data_type::s8, tag::abc), engine);
  memory blocked(memory::desc({16, 8, 2}, memory::data_type::f32, tag::aBc8b), engine);
  memory plain(f32_md, engine),
      other(memory::desc({8, 16, 2}, memory::data_type::f32, tag::abc), engine);
  EXPECT_FALSE(delegate::copy_to_blocked(s8, plain));
  EXPECT_FALSE(delegate::copy_to_blocked(plain, s8));
  EXPECT_FALSE(delegate::copy_to_blocked(blocked, plain));
  EXPECT_FALSE(delegate::copy_to_blocked(plain, other));
}

// A view of a delegate argument (a KV cache read as heads: [1, 16, 32] as [1, 16, 4, 8]) is a
// view of the caller's buffer, bound at each execute: no copy step, where there was one a call.
// The permute after it is the one step.
TEST(CpuViews, ViewOfAnArgumentIsNotCopied) {
  at::manual_seed(13);
  const at::Tensor cache = at::randn({1, 16, 32});
  const at::Tensor heads = cache.view({1, 16, 4, 8}).permute({0, 2, 1, 3});
  Prog p;
  auto ci = p.input("cache", cache);
  auto v = p.node("v", cache.view({1, 16, 4, 8}),
                  "aten::view.default(self=" + ci + ", size=[1, 16, 4, 8])");
  p.outputs = {
      p.node("h", heads.contiguous(), "aten::permute.default(self=" + v + ", dims=[0, 2, 1, 3])")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  ASSERT_EQ(c.graph.ops.size(), 2u);
  for (const at::Tensor& x : {cache, at::randn({1, 16, 32})}) {  // two callers' buffers
    const at::Tensor want = x.view({1, 16, 4, 8}).permute({0, 2, 1, 3}).contiguous();
    DelegateSummary summary;
    auto out = run(c, {x}, {want}, {}, &summary);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(at::equal(out[0], want));
    EXPECT_EQ(summary.onednn_steps, 1);
  }
}

// Attention over a KV cache as torch.export writes it: the cache [1, 16, 32] viewed as heads
// [1, 16, 4, 8], permuted to [1, 4, 16, 8] and again to K^T [1, 4, 8, 16], viewed as [4, 8, 16]
// for a bmm with the queries; and V the same without the transpose. The permutes and views are
// read through strides by the matmuls: no copy step, and ATen's result.
TEST(CpuViews, PermutedCacheIntoMatmulIsNotCopied) {
  at::manual_seed(14);
  const at::Tensor k_cache = at::randn({1, 16, 32}), v_cache = at::randn({1, 16, 32});
  const at::Tensor q = at::randn({4, 1, 8});
  const at::Tensor kt = k_cache.view({1, 16, 4, 8}).permute({0, 2, 1, 3}).permute({0, 1, 3, 2});
  const at::Tensor scores = at::bmm(q, kt.reshape({4, 8, 16}));
  const at::Tensor vh = v_cache.view({1, 16, 4, 8}).permute({0, 2, 1, 3});
  const at::Tensor want = at::bmm(scores, vh.reshape({4, 16, 8}));
  Prog p;
  auto ki = p.input("k", k_cache);
  auto vi = p.input("v", v_cache);
  auto qi = p.input("q", q);
  auto k4 = p.node("k4", k_cache.view({1, 16, 4, 8}),
                   "aten::view.default(self=" + ki + ", size=[1, 16, 4, 8])");
  auto kh = p.node("kh", kt.permute({0, 1, 3, 2}).contiguous(),
                   "aten::permute.default(self=" + k4 + ", dims=[0, 2, 1, 3])");
  auto ktn =
      p.node("kt", kt.contiguous(), "aten::permute.default(self=" + kh + ", dims=[0, 1, 3, 2])");
  auto k3 =
      p.node("k3", kt.reshape({4, 8, 16}), "aten::view.default(self=" + ktn + ", size=[4, 8, 16])");
  auto s = p.node("s", scores, "aten::bmm.default(self=" + qi + ", mat2=" + k3 + ")");
  auto v4 = p.node("v4", v_cache.view({1, 16, 4, 8}),
                   "aten::view.default(self=" + vi + ", size=[1, 16, 4, 8])");
  auto vhn =
      p.node("vh", vh.contiguous(), "aten::permute.default(self=" + v4 + ", dims=[0, 2, 1, 3])");
  auto v3 =
      p.node("v3", vh.reshape({4, 16, 8}), "aten::view.default(self=" + vhn + ", size=[4, 16, 8])");
  p.outputs = {p.node("o", want, "aten::bmm.default(self=" + s + ", mat2=" + v3 + ")")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  Compiled c = compile(*program);
  DelegateSummary summary;
  auto out = run(c, {k_cache, v_cache, q}, {want}, {}, &summary);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::allclose(out[0], want, 1e-5, 1e-5)) << (out[0] - want).abs().max();
  // The two matmuls read the permuted caches through their strides: no copy. Products this
  // small run on Ember's GEMM; without Ember's kernels they are oneDNN's matmul, which takes the
  // strides too.
  EXPECT_EQ(summary.small_matmul_steps, 2);
  EXPECT_EQ(summary.onednn_steps, 0);
  auto onednn = run(c, {k_cache, v_cache, q}, {want}, {switched("ember_kernels", false)}, &summary);
  ASSERT_EQ(onednn.size(), 1u);
  EXPECT_TRUE(at::allclose(onednn[0], want, 1e-5, 1e-5)) << (onednn[0] - want).abs().max();
  EXPECT_EQ(summary.small_matmul_steps, 0);
  EXPECT_EQ(summary.onednn_steps, 2);
}

}  // namespace
}  // namespace ember::cpu
