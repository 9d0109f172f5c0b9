#include "runtime/llm/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/core/error.h"

namespace ember::llm {
namespace {

Sampler make(SamplerOptions o) {
  Result<Sampler> s = Sampler::make(o);
  EXPECT_TRUE(s.ok()) << last_error_message();
  return std::move(*s);
}

TEST(Sampler, GreedyTakesTheFirstMaximumAsTorchArgmax) {
  Sampler s = make({});
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(*s.sample(logits), 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(*s.sample(std::vector<float>{nan, -3.0f, -2.0f}), 2);  // a NaN is never the maximum
}

// Frequencies over many draws against softmax(logits / T) restricted as the options say.
std::vector<double> frequencies(SamplerOptions o, const std::vector<float>& logits, int draws) {
  Sampler s = make(o);
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) {
    Result<int32_t> id = s.sample(logits);
    EXPECT_TRUE(id.ok());
    f[static_cast<size_t>(*id)] += 1.0 / draws;
  }
  return f;
}

std::vector<double> softmax(const std::vector<float>& logits, float t, std::vector<bool> keep) {
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (keep[i]) sum += p[i] = std::exp(static_cast<double>(logits[i]) / t);
  }
  for (double& v : p) v /= sum;
  return p;
}

const std::vector<float> kLogits = {1.0f, 3.0f, 0.0f, 2.5f, -1.0f, 2.0f};

TEST(Sampler, TemperatureSamplesTheSoftmax) {
  for (float t : {0.5f, 1.0f, 2.0f}) {
    std::vector<double> f = frequencies({.temperature = t, .seed = 1}, kLogits, 200000);
    std::vector<double> p = softmax(kLogits, t, std::vector<bool>(kLogits.size(), true));
    for (size_t i = 0; i < p.size(); ++i)
      EXPECT_NEAR(f[i], p[i], 0.005) << "T " << t << " id " << i;
  }
}

TEST(Sampler, TopKKeepsTheKHighest) {
  std::vector<double> f =
      frequencies({.temperature = 1.0f, .top_k = 3, .seed = 2}, kLogits, 100000);
  std::vector<double> p = softmax(kLogits, 1.0f, {false, true, false, true, false, true});
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(f[i], p[i], 0.005) << i;
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // softmax(kLogits): ids 1 (0.46), 3 (0.28), 5 (0.17), ...: 0.6 needs ids 1 and 3.
  std::vector<double> f =
      frequencies({.temperature = 1.0f, .top_p = 0.6f, .seed = 3}, kLogits, 100000);
  std::vector<double> p = softmax(kLogits, 1.0f, {false, true, false, true, false, false});
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(f[i], p[i], 0.005) << i;
}

TEST(Sampler, TheSameSeedGivesTheSameTokens) {
  Sampler a = make({.temperature = 1.0f, .seed = 42});
  Sampler b = make({.temperature = 1.0f, .seed = 42});
  Sampler c = make({.temperature = 1.0f, .seed = 43});
  int same_as_c = 0;
  for (int i = 0; i < 200; ++i) {
    const int32_t x = *a.sample(kLogits);
    EXPECT_EQ(x, *b.sample(kLogits));
    same_as_c += x == *c.sample(kLogits);
  }
  EXPECT_LT(same_as_c, 200);
}

TEST(Sampler, BadOptionsAndLogitsAreRefused) {
  EXPECT_EQ(Sampler::make({.temperature = -1.0f}).error(), Error::InvalidArgument);
  EXPECT_EQ(Sampler::make({.temperature = std::numeric_limits<float>::infinity()}).error(),
            Error::InvalidArgument);
  EXPECT_EQ(Sampler::make({.top_k = -2}).error(), Error::InvalidArgument);
  EXPECT_EQ(Sampler::make({.top_p = 0.0f}).error(), Error::InvalidArgument);
  EXPECT_EQ(Sampler::make({.top_p = 1.5f}).error(), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("top-p"), std::string::npos);
  Sampler s = make({.temperature = 1.0f});
  EXPECT_EQ(s.sample(std::vector<float>{}).error(), Error::InvalidArgument);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, nan}).error(), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("NaN"), std::string::npos);
}

}  // namespace
}  // namespace ember::llm
