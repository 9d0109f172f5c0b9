// aten::as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride, SymInt?
// storage_offset=None,
//                           *, Tensor(a!) out)
// A gather from the input's storage: out[i] = storage[offset + sum_k i_k * stride[k]]. An Ember
// tensor owns exactly numel elements of storage at offset 0 (in its dim order), which is ATen's
// storage of a freshly computed tensor; every element read must lie inside it.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error as_strided_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& in = args[0]->to_tensor();
  const std::span<const int64_t> size = args[1]->to_int_list();
  const std::span<const int64_t> stride = args[2]->to_int_list();
  Tensor& out = args[4]->to_tensor();
  EMBER_CHECK(size.size() == stride.size(), Error::InvalidArgument,
              "as_strided: mismatch in length of strides and shape (%zu and %zu)", stride.size(),
              size.size());
  EMBER_CHECK(size.size() <= static_cast<size_t>(kMaxRank), Error::InvalidArgument,
              "as_strided: rank %zu is above the maximum %d", size.size(), kMaxRank);
  int64_t offset = 0;
  if (!args[3]->is_none()) offset = args[3]->to_int();
  EMBER_CHECK(offset >= 0, Error::InvalidArgument, "as_strided: storage offset %lld is negative",
              static_cast<long long>(offset));
  View v;
  v.dim = static_cast<int>(size.size());
  v.offset = offset;
  bool empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    EMBER_CHECK(size[d] >= 0 && size[d] < (int64_t{1} << 31), Error::InvalidArgument,
                "as_strided: invalid size %lld at dim %zu", static_cast<long long>(size[d]), d);
    EMBER_CHECK(stride[d] >= 0, Error::InvalidArgument,
                "as_strided: negative strides are not supported (stride %lld at dim %zu)",
                static_cast<long long>(stride[d]), d);
    v.sizes[d] = size[d];
    v.strides[d] = stride[d];
    empty = empty || size[d] == 0;
  }
  // ATen checks the storage only when the result has elements: the last element read must be in
  // the input's numel elements.
  if (!empty) {
    int64_t last = offset;
    bool overflow = false;
    for (size_t d = 0; d < size.size(); ++d) {
      int64_t reach = 0;
      overflow = overflow || __builtin_mul_overflow(size[d] - 1, stride[d], &reach) ||
                 __builtin_add_overflow(last, reach, &last);
    }
    EMBER_CHECK(!overflow && last < in.numel(), Error::InvalidArgument,
                "as_strided: the view reaches element %lld of an input of %lld elements "
                "(sizes, strides and storage offset out of bounds)",
                static_cast<long long>(overflow ? INT64_MAX : last),
                static_cast<long long>(in.numel()));
  } else {
    v.offset = 0;
  }
  return copy_view_out("as_strided_copy", in, v, out);
}

}  // namespace ember
