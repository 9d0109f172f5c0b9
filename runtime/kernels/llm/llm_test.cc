// The llm kernels' error paths and a numeric check against a two-pass softmax written here; the
// comparison with ExecuTorch's own kernels is python/tests/test_runtime_llm_ops.py.
#include "runtime/kernels/llm/llm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/kernel_call.h"

namespace ember {
namespace {

class Call : public testing::KernelCall {
 public:
  Call() { EXPECT_EQ(register_llm_kernels(), Error::Ok); }
  EValue* f(std::vector<int32_t> sizes, std::vector<float>& data) {
    return tensor(ScalarType::Float, std::move(sizes), data);
  }
};

std::vector<float> random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Two-pass softmax attention of q [B, S, Hq, D] over caches [B, M, Hkv, D].
std::vector<float> reference(const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v, int b_n, int s_n, int hq, int hkv, int d,
                             int m, int start_pos, bool causal) {
  std::vector<float> out(q.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int b = 0; b < b_n; ++b) {
    for (int s = 0; s < s_n; ++s) {
      for (int h = 0; h < hq; ++h) {
        const int hk = h / (hq / hkv);
        const int keys = causal ? start_pos + s + 1 : start_pos + s_n;
        std::vector<double> w(keys);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < keys; ++j) {
          double dot = 0;
          for (int i = 0; i < d; ++i) {
            dot += q[((b * s_n + s) * hq + h) * d + i] * k[((b * m + j) * hkv + hk) * d + i];
          }
          w[j] = dot * scale;
          mx = std::max(mx, w[j]);
        }
        for (double& x : w) sum += (x = std::exp(x - mx));
        for (int i = 0; i < d; ++i) {
          double acc = 0;
          for (int j = 0; j < keys; ++j) acc += w[j] * v[((b * m + j) * hkv + hk) * d + i];
          out[((b * s_n + s) * hq + h) * d + i] = static_cast<float>(acc / sum);
        }
      }
    }
  }
  return out;
}

TEST(LlmKernels, UpdateCacheWritesTheRowsAndRefusesOverflow) {
  Call c;
  std::vector<float> value = random(2 * 3 * 2 * 4, 1), cache(2 * 8 * 2 * 4, 0.0f), out(1, 7.0f);
  ASSERT_EQ(c.run("llama::update_cache.out",
                  {c.f({2, 3, 2, 4}, value), c.f({2, 8, 2, 4}, cache), c.i(5)}, c.f({1}, out)),
            Error::Ok);
  for (int b = 0; b < 2; ++b) {
    for (int p = 0; p < 8; ++p) {
      for (int e = 0; e < 8; ++e) {
        const float want = p >= 5 ? value[(b * 3 + p - 5) * 8 + e] : 0.0f;
        EXPECT_EQ(cache[(b * 8 + p) * 8 + e], want) << b << " " << p << " " << e;
      }
    }
  }
  std::vector<float> before = cache;
  for (int64_t pos : {6, -1, 100}) {
    EXPECT_EQ(c.run("llama::update_cache.out",
                    {c.f({2, 3, 2, 4}, value), c.f({2, 8, 2, 4}, cache), c.i(pos)}, c.f({1}, out)),
              Error::InvalidArgument)
        << pos;
  }
  EXPECT_EQ(cache, before);
  std::vector<float> narrow(2 * 8 * 1 * 4);
  EXPECT_EQ(c.run("llama::update_cache.out",
                  {c.f({2, 3, 2, 4}, value), c.f({2, 8, 1, 4}, narrow), c.i(0)}, c.f({1}, out)),
            Error::InvalidArgument);
}

struct Case {
  int b, s, hq, hkv, d, m, start_pos;
  bool causal;
};

TEST(LlmKernels, CustomSdpaMatchesTwoPassSoftmax) {
  // Head dims off the 16-lane stride, several key blocks, GQA 1, 2, 4 and 12 (two chunks of
  // query heads), prefill and decode.
  for (const Case& t : {Case{1, 1, 4, 2, 20, 300, 250, false}, Case{2, 5, 4, 1, 37, 70, 3, true},
                        Case{1, 4, 2, 2, 64, 9, 0, true}, Case{1, 3, 8, 2, 128, 140, 137, false},
                        Case{2, 2, 12, 1, 24, 80, 70, true}}) {
    Call c;
    std::vector<float> q = random(size_t(t.b) * t.s * t.hq * t.d, 2);
    std::vector<float> k = random(size_t(t.b) * t.m * t.hkv * t.d, 3);
    std::vector<float> v = random(k.size(), 4);
    std::vector<float> out(q.size());
    ASSERT_EQ(c.run("llama::custom_sdpa.out",
                    {c.f({t.b, t.s, t.hq, t.d}, q), c.f({t.b, t.m, t.hkv, t.d}, k),
                     c.f({t.b, t.m, t.hkv, t.d}, v), c.i(t.start_pos), c.none(), c.d(0.0),
                     c.b(t.causal), c.none()},
                    c.f({t.b, t.s, t.hq, t.d}, out)),
              Error::Ok)
        << last_error_message();
    const std::vector<float> want =
        reference(q, k, v, t.b, t.s, t.hq, t.hkv, t.d, t.m, t.start_pos, t.causal);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 2e-5) << i;
  }
}

TEST(LlmKernels, CustomSdpaRefusesBadArguments) {
  Call c;
  std::vector<float> q(1 * 2 * 3 * 8), k(1 * 6 * 2 * 8), v(k.size()), out(q.size()), mask(2 * 6);
  std::vector<double> q64(q.size()), k64(k.size()), v64(k.size()), out64(q.size());
  auto sdpa = [&](EValue* query, int64_t pos, EValue* m, bool causal, int kv_heads = 2) {
    return c.run("llama::custom_sdpa.out",
                 {query, c.f({1, 6, kv_heads, 8}, k), c.f({1, 6, kv_heads, 8}, v), c.i(pos), m,
                  c.d(0.0), c.b(causal), c.none()},
                 c.f({1, 2, 3, 8}, out));
  };
  // 3 query heads over 2 key/value heads.
  EXPECT_EQ(sdpa(c.f({1, 2, 3, 8}, q), 0, c.none(), true), Error::InvalidArgument);
  std::vector<float> q4(1 * 2 * 4 * 8);
  // Past the cache, negative, mask with is_causal.
  EXPECT_EQ(sdpa(c.f({1, 2, 4, 8}, q4), 5, c.none(), true), Error::InvalidArgument);
  EXPECT_EQ(sdpa(c.f({1, 2, 4, 8}, q4), -1, c.none(), false), Error::InvalidArgument);
  EXPECT_EQ(sdpa(c.f({1, 2, 4, 8}, q4), 0, c.f({2, 6}, mask), true), Error::InvalidArgument);
  EXPECT_EQ(sdpa(c.f({1, 2, 4, 8}, q4), 0, c.f({2, 5}, mask), false), Error::InvalidArgument);
  // Double is not an attention dtype.
  EXPECT_EQ(c.run("llama::custom_sdpa.out",
                  {c.tensor(ScalarType::Double, {1, 2, 3, 8}, q64.data()),
                   c.tensor(ScalarType::Double, {1, 6, 3, 8}, k64.data()),
                   c.tensor(ScalarType::Double, {1, 6, 3, 8}, v64.data()), c.i(0), c.none(),
                   c.d(0.0), c.b(true), c.none()},
                  c.tensor(ScalarType::Double, {1, 2, 3, 8}, out64.data())),
            Error::NotSupported);
}

TEST(LlmKernels, MaskedOutRowIsNaNAsExecuTorch) {
  Call c;
  std::vector<float> q = random(8, 5), k = random(3 * 8, 6), v = random(3 * 8, 7), out(8);
  std::vector<float> mask(3, -std::numeric_limits<float>::infinity());
  ASSERT_EQ(c.run("llama::custom_sdpa.out",
                  {c.f({1, 1, 1, 8}, q), c.f({1, 3, 1, 8}, k), c.f({1, 3, 1, 8}, v), c.i(0),
                   c.f({1, 3}, mask), c.d(0.0), c.b(false), c.none()},
                  c.f({1, 1, 1, 8}, out)),
            Error::Ok);
  for (float x : out) EXPECT_TRUE(std::isnan(x));
}

TEST(LlmKernels, SdpaWithKvCacheLeavesCachesOnError) {
  Call c;
  std::vector<float> q = random(2 * 2 * 4, 8), k = random(2 * 1 * 4, 9), v = random(k.size(), 10);
  std::vector<float> kc(4 * 1 * 4, 1.0f), vc(kc.size(), 2.0f), out(q.size());
  auto call = [&](int64_t pos) {
    return c.run(
        "llama::sdpa_with_kv_cache.out",
        {c.f({1, 2, 2, 4}, q), c.f({1, 2, 1, 4}, k), c.f({1, 2, 1, 4}, v), c.f({1, 4, 1, 4}, kc),
         c.f({1, 4, 1, 4}, vc), c.i(pos), c.i(2), c.none(), c.d(0.0), c.b(true), c.none()},
        c.f({1, 2, 2, 4}, out));
  };
  EXPECT_EQ(call(3), Error::InvalidArgument);
  EXPECT_EQ(kc, std::vector<float>(kc.size(), 1.0f));
  EXPECT_EQ(vc, std::vector<float>(vc.size(), 2.0f));
  ASSERT_EQ(call(2), Error::Ok) << last_error_message();
  for (int e = 0; e < 8; ++e) {
    EXPECT_EQ(kc[8 + e], k[e]);
    EXPECT_EQ(vc[8 + e], v[e]);
  }
}

}  // namespace
}  // namespace ember
