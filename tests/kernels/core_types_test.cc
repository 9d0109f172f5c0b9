// Ember's core value types against c10's: every float16 bit pattern to float, float to float16 and
// bfloat16 rounding on random and edge values, and strides derived from dim orders against ATen's
// strides for contiguous and channels-last tensors.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <bit>
#include <random>

#include "tests/kernels/aten_reference.h"

namespace ember::testing {
namespace {

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST(CoreTypes, EveryHalfBitPatternConvertsLikeC10) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float ours = Half::from_bits(static_cast<uint16_t>(bits));
    const float theirs = c10::Half(static_cast<uint16_t>(bits), c10::Half::from_bits());
    ASSERT_TRUE(same_float(ours, theirs)) << "bits 0x" << std::hex << bits;
  }
}

TEST(CoreTypes, FloatToHalfAndBFloat16RoundLikeC10) {
  std::mt19937 rng(0);
  std::vector<float> values = {0.0f,     -0.0f,          1.0f,          65504.0f, 65520.0f,
                               65519.0f, 1e-8f,          6e-8f,         5.96e-8f, 2.98e-8f,
                               1e-5f,    3.0e38f,        -3.4e38f,      INFINITY, -INFINITY,
                               NAN,      1.00048828125f, 1.0009765625f, 0.333333f};
  for (int i = 0; i < 200000; ++i)
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (float v : values) {
    const c10::Half h(v);
    const c10::BFloat16 b(v);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(Half(v))));
      EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(v))));
      continue;
    }
    ASSERT_EQ(Half(v).bits, h.x) << v;
    ASSERT_EQ(BFloat16(v).bits, b.x) << v;
  }
}

TEST(CoreTypes, StridesFromDimOrderMatchATen) {
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 3, 4, 5}, {1, 1, 4, 5}, {2, 0, 3, 1}, {7, 1, 1, 3}};
  for (const auto& shape : shapes) {
    for (at::MemoryFormat format : {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast}) {
      const at::Tensor t = at::empty(shape).contiguous(format);
      const Tensor ours = view_of(t);
      // An empty tensor's strides address nothing (ATen and ExecuTorch differ there); sizes of 1
      // leave a stride free. Compare where they matter.
      if (t.numel() == 0) continue;
      for (int d = 0; d < t.dim(); ++d) {
        if (t.size(d) > 1) {
          EXPECT_EQ(ours.stride(d), t.stride(d)) << "dim " << d << " of " << t.sizes();
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember::testing
