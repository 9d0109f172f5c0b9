// aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[]
// out) aten::split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out)
// aten::unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out)
// These return nothing, so a program may or may not repeat the out list after the schema
// arguments (§4.8): the kernels are registered without a signature and check their arguments.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {
namespace {

// The out list at `at`, optionally repeated once.
Error out_list(const char* op, std::span<EValue*> args, size_t at, std::span<Tensor* const>* outs) {
  EMBER_CHECK(args.size() == at + 1 || args.size() == at + 2, Error::InvalidArgument,
              "%s: expected %zu or %zu arguments, got %zu", op, at + 1, at + 2, args.size());
  EMBER_CHECK(args[0]->is_tensor() && args[at]->tag() == Tag::ListTensor, Error::InvalidArgument,
              "%s: expected a tensor and a list of out tensors", op);
  *outs = args[at]->to_tensor_list();
  for (Tensor* t : *outs) {
    EMBER_CHECK(t != nullptr, Error::InvalidArgument, "%s: an out tensor is missing", op);
  }
  return Error::Ok;
}

// Copies `len` entries of `dim` from `start` on into `out`.
Error copy_chunk(const char* op, const Tensor& in, int64_t dim, int64_t start, int64_t len,
                 Tensor& out) {
  View v = View::of(in);
  v.offset += start * v.strides[dim];
  v.sizes[dim] = len;
  return copy_view_out(op, in, v, out);
}

}  // namespace

Error split_with_sizes_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "split_with_sizes_copy";
  std::span<Tensor* const> outs;
  EMBER_TRY(out_list(op, args, 3, &outs));
  EMBER_CHECK(args[1]->tag() == Tag::ListInt && args[2]->is_int(), Error::InvalidArgument,
              "%s: expected split sizes and a dim", op);
  const Tensor& in = args[0]->to_tensor();
  int64_t dim = 0;
  EMBER_TRY(wrap_dim(op, args[2]->to_int(), in.dim(), &dim));
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument, "%s: cannot split a 0-d tensor", op);
  const std::span<const int64_t> sizes = args[1]->to_int_list();
  EMBER_CHECK(sizes.size() == outs.size(), Error::InvalidArgument,
              "%s: %zu chunks for %zu out tensors", op, sizes.size(), outs.size());
  int64_t total = 0;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, Error::InvalidArgument, "%s: negative split size", op);
    total += s;
  }
  EMBER_CHECK(total == in.size(static_cast<int>(dim)), Error::InvalidArgument,
              "%s: split sizes sum to %lld, the dim has size %d", op, static_cast<long long>(total),
              in.size(static_cast<int>(dim)));
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_TRY(copy_chunk(op, in, dim, start, sizes[i], *outs[i]));
    start += sizes[i];
  }
  return Error::Ok;
}

Error split_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "split_copy";
  std::span<Tensor* const> outs;
  EMBER_TRY(out_list(op, args, 3, &outs));
  EMBER_CHECK(args[1]->is_int() && args[2]->is_int(), Error::InvalidArgument,
              "%s: expected a split size and a dim", op);
  const Tensor& in = args[0]->to_tensor();
  int64_t dim = 0;
  EMBER_TRY(wrap_dim(op, args[2]->to_int(), in.dim(), &dim));
  const int64_t chunk = args[1]->to_int();
  EMBER_CHECK(chunk >= 0, Error::InvalidArgument, "%s: split_size must be non-negative", op);
  const int64_t size = in.dim() == 0 ? 0 : in.size(static_cast<int>(dim));
  EMBER_CHECK(chunk > 0 || size == 0, Error::InvalidArgument,
              "%s: split_size can only be 0 if the dimension size is 0", op);
  const int64_t count = chunk == 0 ? 1 : std::max<int64_t>((size + chunk - 1) / chunk, 1);
  EMBER_CHECK(count == static_cast<int64_t>(outs.size()), Error::InvalidArgument,
              "%s: %lld chunks for %zu out tensors", op, static_cast<long long>(count),
              outs.size());
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument, "%s: cannot split a 0-d tensor", op);
  // Chunks of split_size; the last one takes the remainder.
  int64_t start = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t len = std::min(chunk, size - start);
    EMBER_TRY(copy_chunk(op, in, dim, start, len, *outs[static_cast<size_t>(i)]));
    start += len;
  }
  return Error::Ok;
}

Error unbind_copy_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "unbind_copy";
  std::span<Tensor* const> outs;
  EMBER_TRY(out_list(op, args, 2, &outs));
  EMBER_CHECK(args[1]->is_int(), Error::InvalidArgument, "%s: expected a dim", op);
  const Tensor& in = args[0]->to_tensor();
  EMBER_CHECK(in.dim() > 0, Error::InvalidArgument,
              "%s: dimension specified as 0 but tensor has no dimensions", op);
  int64_t dim = 0;
  EMBER_TRY(wrap_dim(op, args[1]->to_int(), in.dim(), &dim));
  EMBER_CHECK(static_cast<int64_t>(outs.size()) == in.size(static_cast<int>(dim)),
              Error::InvalidArgument, "%s: %zu out tensors for a dim of size %d", op, outs.size(),
              in.size(static_cast<int>(dim)));
  for (size_t i = 0; i < outs.size(); ++i) {
    View v = View::of(in);
    v.offset += static_cast<int64_t>(i) * v.strides[dim];
    v.erase(static_cast<int>(dim));
    EMBER_TRY(copy_view_out(op, in, v, *outs[i]));
  }
  return Error::Ok;
}

}  // namespace ember
