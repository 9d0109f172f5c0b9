// Picks the next token from a step's logits: greedy at temperature 0, else softmax(logits / T)
// restricted to the top-k tokens and then to the smallest set whose probability reaches top-p.
//
//   Sampler sampler({.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 7});
//   int32_t next = sampler.sample(logits);   // logits of one position, float
//
// The same seed and logits give the same tokens on every machine (a fixed generator, no
// platform distribution). Ties in greedy decoding go to the lowest id, as torch.argmax.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "runtime/core/result.h"

namespace ember::llm {

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: no limit
  float top_p = 1.0f;        // 1: no limit
  uint64_t seed = 0;
};

class Sampler {
 public:
  // InvalidArgument for a negative or non-finite temperature, top_k < 0, top_p outside (0, 1].
  static Result<Sampler> make(const SamplerOptions& options);

  // Fails (InvalidArgument) on empty logits or, when sampling, logits with a NaN.
  Result<int32_t> sample(std::span<const float> logits);

 private:
  explicit Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}
  double uniform();  // in [0, 1), from the top 53 bits of the generator

  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused between calls
  std::vector<double> weights_;
};

}  // namespace ember::llm
