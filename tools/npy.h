// NumPy .npy files (format versions 1.0-3.0) as the `ember` command reads and writes them.
//
//   Result<NpyArray> a = read_npy("x.npy");        // dtype, shape, bytes (C order)
//   EMBER_TRY(write_npy("out.npy", tensor));
//   Result<OwnedTensor> x = npy_in_layout(*a, meta->input_tensor_info(0)->dim_order);
//
// bfloat16 has no NumPy dtype; it is written as float32 (values exactly representable).
#pragma once

#include <string>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/executor/module.h"

namespace ember::tools {

struct NpyArray {
  ScalarType dtype;
  std::vector<int32_t> shape;
  std::vector<uint8_t> data;  // C-contiguous, little-endian
};

// Errors: AccessFailed (cannot read), InvalidArgument (not an .npy file, Fortran order, a dtype
// Ember has no counterpart for, big-endian data, a size that does not match the shape).
Result<NpyArray> read_npy(const std::string& path);

// Writes `t` in C order whatever its dim order. AccessFailed on I/O errors.
Error write_npy(const std::string& path, const Tensor& t);

// The values of `a` (C order, as NumPy holds them) in a tensor laid out in `dim_order`, the layout
// a method declares for the input (empty: C order). An array whose rank differs from the dim
// order's keeps C order, so that the method's own shape check reports the input.
Result<OwnedTensor> npy_in_layout(const NpyArray& a, std::span<const uint8_t> dim_order);

}  // namespace ember::tools
