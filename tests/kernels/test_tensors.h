// Random inputs and dtype lists for the conformance tests of the linear-algebra, convolution,
// normalization, pooling and data-movement kernels.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace ember::testing {

inline const std::vector<at::ScalarType>& all_dtypes() {
  static const std::vector<at::ScalarType> types = {
      at::kByte, at::kChar,  at::kShort,  at::kInt,  at::kLong,
      at::kHalf, at::kFloat, at::kDouble, at::kBool, at::kBFloat16};
  return types;
}

inline const std::vector<at::ScalarType>& float_dtypes() {
  static const std::vector<at::ScalarType> types = {at::kFloat, at::kDouble, at::kHalf,
                                                    at::kBFloat16};
  return types;
}

// Values a dtype represents exactly enough to compare: small integers, or normal floats.
inline at::Tensor random_tensor(at::ScalarType dtype, at::IntArrayRef sizes) {
  if (dtype == at::kBool) return at::randint(0, 2, sizes).to(at::kBool);
  if (at::isFloatingType(dtype)) return at::randn(sizes).to(dtype);
  if (dtype == at::kByte) return at::randint(0, 20, sizes).to(dtype);
  return at::randint(-10, 10, sizes).to(dtype);
}

}  // namespace ember::testing
