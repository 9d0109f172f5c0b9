// ATen's type promotion, for kernels that combine operands of several dtypes.
//
//   ScalarType common = result_type({&a, &b});          // tensors; 0-dim ones count as scalars
//   ScalarType with_scalar = result_type({&a}, alpha);  // a Python number joins by category
//   if (!can_cast(common, out.dtype())) return fail(...);
//
// The rules are PyTorch's (torch.result_type): dimensioned tensors decide within a category,
// zero-dim tensors and then Python numbers only lift the category (bool < integer < floating).
#pragma once

#include <initializer_list>
#include <span>

#include "runtime/core/evalue.h"

namespace ember {

// promote_types(a, b) of PyTorch, over the supported dtypes.
ScalarType promote_types(ScalarType a, ScalarType b);

// torch.result_type over tensors and Python-number scalars (Int -> int64, Double -> the default
// float32, Bool -> bool). Null entries are skipped.
ScalarType result_type(std::initializer_list<const Tensor*> tensors,
                       std::initializer_list<const EValue*> scalars = {});
ScalarType result_type(std::span<const Tensor* const> tensors,
                       std::span<const EValue* const> scalars);

// torch.can_cast: no floating -> integral, no non-bool -> bool.
bool can_cast(ScalarType from, ScalarType to);

}  // namespace ember
