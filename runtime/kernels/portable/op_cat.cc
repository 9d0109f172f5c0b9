// aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out)
// aten::stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out)
// cat promotes the inputs' dtypes (out must be castable from the result) and skips 1-D empty
// inputs, as ATen's legacy rule does; stack requires equal shapes and inserts a new dim.
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/promotion.h"

namespace ember {
namespace {

bool skipped(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

}  // namespace

Error cat_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const std::span<Tensor* const> inputs = args[0]->to_tensor_list();
  Tensor& out = args[2]->to_tensor();
  EMBER_CHECK(!inputs.empty(), Error::InvalidArgument, "cat: expected a non-empty list of Tensors");
  const Tensor* ref = nullptr;
  ScalarType common = inputs[0]->dtype();
  for (const Tensor* t : inputs) {
    common = promote_types(common, t->dtype());
    EMBER_CHECK(t->dim() > 0, Error::InvalidArgument,
                "cat: zero-dimensional tensor cannot be concatenated");
    if (ref == nullptr && !skipped(*t)) ref = t;
  }
  EMBER_CHECK(can_cast(common, out.dtype()), Error::InvalidArgument,
              "cat: result type %s can't be cast to the out dtype %s", to_string(common),
              to_string(out.dtype()));
  if (ref == nullptr) ref = inputs[0];
  int64_t dim = 0;
  EMBER_TRY(wrap_dim("cat", args[1]->to_int(), ref->dim(), &dim));
  int32_t sizes[kMaxRank];
  for (int d = 0; d < ref->dim(); ++d) sizes[d] = d == dim ? 0 : ref->size(d);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    if (skipped(t) && ref->dim() != 1) continue;
    EMBER_CHECK(t.dim() == ref->dim(), Error::InvalidArgument,
                "cat: tensors must have the same number of dimensions: got %d and %d", ref->dim(),
                t.dim());
    for (int d = 0; d < t.dim(); ++d) {
      EMBER_CHECK(d == dim || t.size(d) == ref->size(d), Error::InvalidArgument,
                  "cat: sizes of tensors must match except in dimension %lld; expected size %d "
                  "but got size %d for tensor number %zu in the list",
                  static_cast<long long>(dim), ref->size(d), t.size(d), i);
    }
    sizes[dim] += t.size(static_cast<int>(dim));
  }
  EMBER_CHECK(out.dim() == ref->dim(), Error::InvalidArgument, "cat: out has rank %d, expected %d",
              out.dim(), ref->dim());
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(ref->dim())}));
  int64_t start = 0;
  for (const Tensor* t : inputs) {
    if (skipped(*t) && ref->dim() != 1) continue;
    View dst = View::of(out);
    dst.offset += start * dst.strides[dim];
    dst.sizes[dim] = t->size(static_cast<int>(dim));
    copy_view(*t, View::of(*t), out, dst);
    start += t->size(static_cast<int>(dim));
  }
  return Error::Ok;
}

Error stack_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const std::span<Tensor* const> inputs = args[0]->to_tensor_list();
  Tensor& out = args[2]->to_tensor();
  EMBER_CHECK(!inputs.empty(), Error::InvalidArgument, "stack: expects a non-empty TensorList");
  const Tensor& ref = *inputs[0];
  int64_t dim = 0;
  EMBER_TRY(wrap_dim("stack", args[1]->to_int(), ref.dim() + 1, &dim));
  EMBER_CHECK(ref.dim() < kMaxRank, Error::InvalidArgument, "stack: rank %d is the maximum",
              kMaxRank);
  ScalarType common = ref.dtype();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    common = promote_types(common, t.dtype());
    bool same = t.dim() == ref.dim();
    for (int d = 0; same && d < t.dim(); ++d) same = t.size(d) == ref.size(d);
    EMBER_CHECK(same, Error::InvalidArgument,
                "stack: stack expects each tensor to be equal size, tensor %zu differs", i);
  }
  EMBER_CHECK(can_cast(common, out.dtype()), Error::InvalidArgument,
              "stack: result type %s can't be cast to the out dtype %s", to_string(common),
              to_string(out.dtype()));
  EMBER_CHECK(out.dim() == ref.dim() + 1, Error::InvalidArgument,
              "stack: out has rank %d, expected %d", out.dim(), ref.dim() + 1);
  int32_t sizes[kMaxRank];
  for (int d = 0, s = 0; d <= ref.dim(); ++d) {
    sizes[d] = d == dim ? static_cast<int32_t>(inputs.size()) : ref.size(s++);
  }
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(ref.dim() + 1)}));
  for (size_t i = 0; i < inputs.size(); ++i) {
    View dst = View::of(out);
    dst.offset += static_cast<int64_t>(i) * dst.strides[dim];
    dst.erase(static_cast<int>(dim));
    copy_view(*inputs[i], View::of(*inputs[i]), out, dst);
  }
  return Error::Ok;
}

}  // namespace ember
