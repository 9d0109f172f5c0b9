#include "runtime/llm/sampler.h"

#include <algorithm>
#include <cmath>

#include "runtime/core/error.h"

namespace ember::llm {

Result<Sampler> Sampler::make(const SamplerOptions& options) {
  if (!std::isfinite(options.temperature) || options.temperature < 0.0f) {
    return fail(Error::InvalidArgument, "temperature must be a finite number >= 0, not %g",
                static_cast<double>(options.temperature));
  }
  if (options.top_k < 0) {
    return fail(Error::InvalidArgument, "top-k must be >= 0 (0: no limit), not %d",
                static_cast<int>(options.top_k));
  }
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f)) {
    return fail(Error::InvalidArgument, "top-p must lie in (0, 1], not %g",
                static_cast<double>(options.top_p));
  }
  return Sampler(options);
}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

Result<int32_t> Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) return fail(Error::InvalidArgument, "no logits to sample from");
  if (options_.temperature == 0.0f) {
    // The first maximum, as torch.argmax; a NaN compares false and is never taken.
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
      if (logits[i] > logits[best] || std::isnan(logits[best])) best = i;
    }
    return static_cast<int32_t>(best);
  }
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) {
      return fail(Error::InvalidArgument, "the logits hold a NaN (token %zu)", i);
    }
    candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
  }
  // Highest first, the lower id first among equals.
  auto order = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < keep) {
    keep = static_cast<size_t>(options_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<ptrdiff_t>(keep),
                      candidates_.end(), order);
    candidates_.resize(keep);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), order);
  }
  // softmax(logits / T) over the kept tokens, in double.
  const double top = static_cast<double>(candidates_[0].first);
  std::vector<double>& p = weights_;
  p.resize(keep);
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((static_cast<double>(candidates_[i].first) - top) / options_.temperature);
    sum += p[i];
  }
  // top-p: the smallest prefix whose probability reaches top_p (at least one token).
  if (options_.top_p < 1.0f) {
    double mass = 0.0;
    size_t n = 0;
    while (n < keep) {
      mass += p[n++] / sum;
      if (mass >= static_cast<double>(options_.top_p)) break;
    }
    keep = n;
    sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += p[i];
  }
  double r = uniform() * sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0.0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;  // rounding left r at or just above 0
}

}  // namespace ember::llm
