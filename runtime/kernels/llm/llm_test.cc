// The llm kernels' error paths, and numeric checks against a two-pass softmax written here: the
// registered ops (the variant cpu_isa() picks), then every variant of the attention kernel this
// CPU runs (generic, avx2: both of its paths, float and half types, masks, threads) and its exp
// against std::exp. The comparison with ExecuTorch's own kernels is
// python/tests/test_runtime_llm_ops.py.
#include "runtime/kernels/llm/llm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/kernels/llm/common.h"
#include "runtime/platform/thread_pool.h"
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

// Two-pass softmax attention of q [B, S, Hq, D] over caches [B, M, Hkv, D], in double; with a
// mask [S, M], every position with the mask added, else the first start_pos + S (causal: + s + 1).
std::vector<float> reference(const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v, int b_n, int s_n, int hq, int hkv, int d,
                             int m, int start_pos, bool causal,
                             const std::vector<float>& mask = {}) {
  std::vector<float> out(q.size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (int b = 0; b < b_n; ++b) {
    for (int s = 0; s < s_n; ++s) {
      for (int h = 0; h < hq; ++h) {
        const int hk = h / (hq / hkv);
        const int keys = !mask.empty() ? m : causal ? start_pos + s + 1 : start_pos + s_n;
        std::vector<double> w(keys);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < keys; ++j) {
          double dot = 0;
          for (int i = 0; i < d; ++i) {
            dot +=
                double{q[((b * s_n + s) * hq + h) * d + i]} * k[((b * m + j) * hkv + hk) * d + i];
          }
          w[j] = dot * scale + (mask.empty() ? 0.0 : mask[s * m + j]);
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

template <typename T>
constexpr ScalarType dtype_of() {
  if constexpr (std::is_same_v<T, Half>) return ScalarType::Half;
  if constexpr (std::is_same_v<T, BFloat16>) return ScalarType::BFloat16;
  return ScalarType::Float;
}

struct Shape {
  int b, s, hq, hkv, d, m, start_pos;
  bool causal, mask;
};

// The attention of `t` (random values; a random mask whose last positions are -inf where asked)
// with one kernel variant on `threads` threads, against the reference of the values rounded to T.
template <typename T>
void check_variant(const llm::AttentionVariant& variant, const Shape& t, int threads, double tol) {
  const size_t q_n = size_t(t.b) * t.s * t.hq * t.d, kv_n = size_t(t.b) * t.m * t.hkv * t.d;
  std::vector<T> q(q_n), k(kv_n), v(kv_n), out(q_n);
  std::vector<float> qf = random(q_n, 2), kf = random(kv_n, 3), vf = random(kv_n, 4), mask;
  for (size_t i = 0; i < q_n; ++i) qf[i] = static_cast<float>(q[i] = static_cast<T>(qf[i]));
  for (size_t i = 0; i < kv_n; ++i) kf[i] = static_cast<float>(k[i] = static_cast<T>(kf[i]));
  for (size_t i = 0; i < kv_n; ++i) vf[i] = static_cast<float>(v[i] = static_cast<T>(vf[i]));
  if (t.mask) {
    mask = random(size_t(t.s) * t.m, 5);
    for (int s = 0; s < t.s; ++s) {
      for (int j = t.start_pos + s + 1; j < t.m; ++j) mask[s * t.m + j] = -INFINITY;
    }
  }
  const ScalarType dtype = dtype_of<T>();
  Tensor tq = *Tensor::make(dtype, std::vector<int32_t>{t.b, t.s, t.hq, t.d}, {}, q.data());
  Tensor tk = *Tensor::make(dtype, std::vector<int32_t>{t.b, t.m, t.hkv, t.d}, {}, k.data());
  Tensor tv = *Tensor::make(dtype, std::vector<int32_t>{t.b, t.m, t.hkv, t.d}, {}, v.data());
  Tensor tout = *Tensor::make(dtype, std::vector<int32_t>{t.b, t.s, t.hq, t.d}, {}, out.data());
  Tensor tmask;
  EValue mask_value;  // None
  if (t.mask) {
    tmask = *Tensor::make(ScalarType::Float, std::vector<int32_t>{t.s, t.m}, {}, mask.data());
    mask_value = EValue::from_tensor(&tmask);
  }
  llm::AttentionJob job;
  ASSERT_EQ(llm::plan_attention("test", tq, tk, tv, t.start_pos, mask_value, t.causal, EValue(),
                                tout, &job),
            Error::Ok)
      << last_error_message();
  ThreadPool pool(threads);
  KernelContext ctx{nullptr, &pool};
  llm::run_attention(ctx, job, variant);
  const std::vector<float> want =
      reference(qf, kf, vf, t.b, t.s, t.hq, t.hkv, t.d, t.m, t.start_pos, t.causal, mask);
  for (size_t i = 0; i < q_n; ++i) {
    ASSERT_NEAR(static_cast<float>(out[i]), want[i], tol)
        << variant.name << " threads " << threads << " element " << i << " of b" << t.b << " s"
        << t.s << " hq" << t.hq << " hkv" << t.hkv << " d" << t.d << " m" << t.m << " start "
        << t.start_pos << (t.causal ? " causal" : "") << (t.mask ? " mask" : "");
  }
}

// Shapes that take each path of the kernel: the transposed one (a tile of 3 rows or more, padded
// to whole vectors: groups of 3 to 16, query positions tiled by 64 rows, tiles cut by the causal
// diagonal, several key blocks, partial register tiles, head_dim off the vector width), and the
// row one (1 or 2 rows: decode without grouped-query attention, or a head_dim whose rows fill
// the scratch unpadded).
const Shape kShapes[] = {
    {1, 1, 4, 4, 64, 300, 250, false, false},    // rows: decode, group 1
    {1, 1, 4, 2, 20, 300, 250, true, false},     // rows: group 2
    {1, 3, 2, 2, 33, 80, 40, true, false},       // rows: group 1, three positions a tile
    {1, 1, 14, 2, 64, 1024, 1000, true, false},  // transposed: Qwen2.5-0.5B's decode
    {1, 70, 14, 2, 64, 128, 0, true, false},     // its prefill: 9 positions a tile, diagonal
    {1, 37, 6, 2, 48, 200, 100, true, false},    // group 3, 21 positions a tile, after 100
    {2, 5, 4, 1, 37, 70, 3, false, false},       // group 4, not causal, batch 2
    {2, 2, 12, 1, 24, 80, 70, true, false},      // group 12
    {1, 3, 16, 1, 64, 50, 20, true, false},      // multi-query
    {1, 2, 32, 1, 256, 40, 30, true, false},     // 16 rows a tile at head_dim 256: 2 head tiles
    {1, 2, 8, 1, 300, 30, 20, true, false},      // head_dim 300: 13 rows, by the row path
    {1, 1, 8, 2, 1024, 20, 10, false, false},    // the largest head_dim: 4 rows a tile
    {2, 1, 8, 2, 5, 9, 3, true, false},          // head_dim 5
    {1, 4, 8, 2, 32, 40, 3, false, true},        // a mask, transposed
    {1, 3, 2, 2, 32, 40, 3, false, true},        // a mask, rows
};

TEST(LlmKernels, EveryVariantMatchesTwoPassSoftmax) {
  for (const llm::AttentionVariant& variant : llm::attention_variants()) {
    for (const Shape& t : kShapes) {
      for (int threads : {1, 3}) check_variant<float>(variant, t, threads, 2e-5);
    }
  }
}

TEST(LlmKernels, EveryVariantMatchesTwoPassSoftmaxInHalfTypes) {
  // Computed in float from the rounded values, rounded once at the output.
  for (const llm::AttentionVariant& variant : llm::attention_variants()) {
    for (const Shape& t : kShapes) {
      check_variant<Half>(variant, t, 2, 2e-3);
      check_variant<BFloat16>(variant, t, 2, 1.6e-2);
    }
  }
}

TEST(LlmKernels, EveryVariantGivesNaNForAMaskedOutRow) {
  // Tiles of 1 row (the row path) and of 4 (transposed): the second query row has no key.
  for (const llm::AttentionVariant& variant : llm::attention_variants()) {
    for (int heads : {1, 4}) {
      Call c;
      std::vector<float> q = random(2 * heads * 8, 5), k = random(3 * 8, 6), v = random(3 * 8, 7);
      std::vector<float> out(q.size()),
          mask = {0.5f, -INFINITY, 1.0f, -INFINITY, -INFINITY, -INFINITY};
      Tensor tq =
          *Tensor::make(ScalarType::Float, std::vector<int32_t>{1, 2, heads, 8}, {}, q.data());
      Tensor tk = *Tensor::make(ScalarType::Float, std::vector<int32_t>{1, 3, 1, 8}, {}, k.data());
      Tensor tv = *Tensor::make(ScalarType::Float, std::vector<int32_t>{1, 3, 1, 8}, {}, v.data());
      Tensor tout =
          *Tensor::make(ScalarType::Float, std::vector<int32_t>{1, 2, heads, 8}, {}, out.data());
      Tensor tmask = *Tensor::make(ScalarType::Float, std::vector<int32_t>{2, 3}, {}, mask.data());
      llm::AttentionJob job;
      ASSERT_EQ(llm::plan_attention("test", tq, tk, tv, 0, EValue::from_tensor(&tmask), false,
                                    EValue(), tout, &job),
                Error::Ok);
      KernelContext ctx{nullptr, nullptr};
      llm::run_attention(ctx, job, variant);
      for (int i = 0; i < heads * 8; ++i) {
        EXPECT_FALSE(std::isnan(out[i])) << variant.name << " " << heads << " " << i;
        EXPECT_TRUE(std::isnan(out[heads * 8 + i])) << variant.name << " " << heads << " " << i;
      }
    }
  }
}

// Distance of `got` from exp(x) in units in the last place of the float nearest exp(x).
double ulps_from_exp(float got, float x) {
  const double want = std::exp(static_cast<double>(x));
  const float rounded = static_cast<float>(want);
  const double ulp = std::nextafter(rounded, std::numeric_limits<float>::infinity()) - rounded;
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST(LlmKernels, EveryVariantsExpMatchesStdExp) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kMinNormal = std::numeric_limits<float>::min();
  // Every 61st float from -0 down to -87.33 (exp at or above 2^-126), then 100k steps to -104.
  std::vector<float> normal, tiny;
  for (uint32_t bits = 0x80000000u;; bits += 61) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    if (x < -87.33f) break;
    normal.push_back(x);
  }
  for (int i = 0; i <= 100000; ++i) tiny.push_back(-87.33f - 16.67f * static_cast<float>(i) / 1e5f);
  const std::vector<float> special = {-kInf,
                                      0.0f,
                                      -0.0f,
                                      -1e-40f,
                                      -std::numeric_limits<float>::max(),
                                      -1e10f,
                                      -88.0f,
                                      -88.7f,
                                      std::numeric_limits<float>::quiet_NaN()};
  ASSERT_GT(normal.size(), size_t{1} << 20);
  for (const llm::AttentionVariant& variant : llm::attention_variants()) {
    std::vector<float> y(normal.size());
    variant.exp_nonpositive(normal.data(), y.data(), static_cast<int64_t>(normal.size()));
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < normal.size(); ++i) {
      const double e = ulps_from_exp(y[i], normal[i]);
      if (e > worst) worst = e, worst_x = normal[i];
    }
    EXPECT_LE(worst, 2.5) << variant.name << " at x = " << worst_x;
    y.resize(tiny.size());
    variant.exp_nonpositive(tiny.data(), y.data(), static_cast<int64_t>(tiny.size()));
    for (size_t i = 0; i < tiny.size(); ++i) {
      ASSERT_LE(std::fabs(y[i] - std::exp(static_cast<double>(tiny[i]))), kMinNormal)
          << variant.name << " x = " << tiny[i];
      ASSERT_GE(y[i], 0.0f) << variant.name << " x = " << tiny[i];
    }
    y.resize(special.size());
    variant.exp_nonpositive(special.data(), y.data(), static_cast<int64_t>(special.size()));
    EXPECT_EQ(y[0], 0.0f) << variant.name << ": exp(-inf)";
    EXPECT_FALSE(std::signbit(y[0])) << variant.name << ": exp(-inf)";
    EXPECT_EQ(y[1], 1.0f) << variant.name << ": exp(0)";
    EXPECT_EQ(y[2], 1.0f) << variant.name << ": exp(-0)";
    EXPECT_EQ(y[3], 1.0f) << variant.name << ": exp(-1e-40)";
    EXPECT_EQ(y[4], 0.0f) << variant.name << ": exp(-FLT_MAX)";
    EXPECT_EQ(y[5], 0.0f) << variant.name << ": exp(-1e10)";
    EXPECT_EQ(y[6], 0.0f) << variant.name << ": exp(-88)";
    EXPECT_EQ(y[7], 0.0f) << variant.name << ": exp(-88.7)";
    EXPECT_TRUE(std::isnan(y[8])) << variant.name << ": exp(NaN)";
  }
}

TEST(LlmKernels, TilesFitTheScratch) {
  // Every tile's rows fit kTileRows, and its rows times head_dim one scratch array (the row
  // path's layout; the transposed one pads them to a multiple of 16 where that fits too).
  for (int64_t d : {1, 5, 16, 48, 64, 85, 96, 128, 200, 256, 257, 300, 512, 1000, 1024}) {
    for (int64_t group : {1, 2, 3, 7, 8, 16, 17, 64, 100}) {
      for (int64_t q_len : {1, 2, 9, 100, 512}) {
        llm::AttentionJob job;
        job.batch = 1;
        job.q_len = q_len;
        job.kv_heads = 2;
        job.q_heads = 2 * group;
        job.head_dim = d;
        const int64_t rows = job.tile_heads() * job.tile_positions();
        EXPECT_GE(rows, 1);
        EXPECT_LE(rows, llm::kTileRows) << d << " " << group << " " << q_len;
        EXPECT_LE(rows * d, llm::kScratchFloats) << d << " " << group << " " << q_len;
        EXPECT_EQ(job.tasks(), 2 * job.position_tiles() * job.head_tiles());
        EXPECT_GE(job.position_tiles() * job.tile_positions(), q_len);
        EXPECT_GE(job.head_tiles() * job.tile_heads(), group);
      }
    }
  }
}

}  // namespace
}  // namespace ember
