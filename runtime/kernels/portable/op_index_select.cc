// aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out)
// aten::embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1,
//     bool scale_grad_by_freq=False, bool sparse=False, *, Tensor(a!) out)
// Indices (int32 or int64) must lie in [0, size); embedding is index_select of weight rows with
// the indices' shape followed by the embedding dim.
#include <cstring>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {
namespace {

// out[..., i, ...] = in[..., index[i], ...] along `dim`, for i over `count` indices; out has been
// resized and has in's rank with `count` at `dim` (or rank 0 for a 0-d in).
Error select_rows(const char* op, const Tensor& in, int64_t dim, const Tensor& index, Tensor& out) {
  const int64_t size = in.dim() == 0 ? 1 : in.size(static_cast<int>(dim));
  const int64_t count = index.numel();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t k = index_value(index, i);
    EMBER_CHECK(k >= 0 && k < size, Error::InvalidArgument,
                "%s: index %lld is out of bounds for dimension %lld with size %lld", op,
                static_cast<long long>(k), static_cast<long long>(dim),
                static_cast<long long>(size));
  }
  if (in.dim() == 0) {
    if (count > 0) std::memcpy(out.mutable_data(), in.data(), in.element_size());
    return Error::Ok;
  }
  for (int64_t i = 0; i < count; ++i) {
    View src = View::of(in);
    src.offset += index_value(index, i) * src.strides[dim];
    src.sizes[dim] = 1;
    View dst = View::of(out);
    dst.offset += i * dst.strides[dim];
    dst.sizes[dim] = 1;
    copy_view(in, src, out, dst);
  }
  return Error::Ok;
}

}  // namespace

Error index_select_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "index_select";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& index = args[2]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  int64_t dim = 0;
  EMBER_TRY(wrap_dim(op, args[1]->to_int(), in.dim(), &dim));
  EMBER_CHECK(index.dim() <= 1, Error::InvalidArgument,
              "%s: index_select(): Index is supposed to be a vector", op);
  EMBER_CHECK(is_index_dtype(index.dtype()), Error::InvalidArgument,
              "%s: index_select(): Expected dtype int32 or int64 for index", op);
  EMBER_CHECK(out.dtype() == in.dtype() && out.dim() == in.dim(), Error::InvalidArgument,
              "%s: out must have the input's dtype and rank", op);
  EMBER_CHECK(in.dim() > 0 || index.numel() == 1, Error::InvalidArgument,
              "%s: index_select(): Index to scalar can have only 1 value", op);
  int32_t sizes[kMaxRank];
  for (int d = 0; d < in.dim(); ++d) {
    sizes[d] = d == dim ? static_cast<int32_t>(index.numel()) : in.size(d);
  }
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(in.dim())}));
  return select_rows(op, in, dim, index, out);
}

Error embedding_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "embedding";
  const Tensor& weight = args[0]->to_tensor();
  const Tensor& indices = args[1]->to_tensor();
  Tensor& out = args[5]->to_tensor();
  EMBER_CHECK(weight.dim() == 2, Error::InvalidArgument, "%s: 'weight' must be 2-D", op);
  EMBER_CHECK(is_index_dtype(indices.dtype()), Error::InvalidArgument,
              "%s: Expected tensor for argument #1 'indices' to have one of the following scalar "
              "types: Long, Int",
              op);
  EMBER_CHECK(
      out.dtype() == weight.dtype() && out.dim() == indices.dim() + 1 && indices.dim() < kMaxRank,
      Error::InvalidArgument, "%s: out must have weight's dtype and rank %d", op,
      indices.dim() + 1);
  int32_t sizes[kMaxRank];
  for (int d = 0; d < indices.dim(); ++d) sizes[d] = indices.size(d);
  sizes[indices.dim()] = weight.size(1);
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(indices.dim() + 1)}));
  // Rows of out in row-major order are the flattened indices.
  const int64_t rows = indices.numel(), width = weight.size(1);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t k = index_value(indices, i);
    EMBER_CHECK(k >= 0 && k < weight.size(0), Error::InvalidArgument,
                "%s: index %lld is out of range for %d rows", op, static_cast<long long>(k),
                weight.size(0));
  }
  for (int64_t i = 0; i < rows; ++i) {
    View src = View::of(weight);
    src.offset += index_value(indices, i) * src.strides[0];
    src.erase(0);
    View dst;
    dst.dim = 1;
    dst.sizes[0] = width;
    dst.strides[0] = out.stride(out.dim() - 1);
    dst.offset = offset_of(out, i * width);
    copy_view(weight, src, out, dst);
  }
  return Error::Ok;
}

}  // namespace ember
