// aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
// aten::copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out)
// ExecuTorch's exporter writes a mutated buffer back with copy_ at the end of a method, and keeps
// copy.out for a functional copy; Ember's own compiler lowers both away (compiler/ops), so
// these run programs that ExecuTorch wrote.
#include <algorithm>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {
namespace {

// dst = src broadcast to dst's shape, converted to dst's dtype (ATen's copy_).
Error broadcast_copy(const char* op, const Tensor& src, Tensor& dst) {
  View v;
  EMBER_TRY(broadcast_view(op, src, dst.sizes(), &v));
  copy_view(src, v, dst);
  return Error::Ok;
}

}  // namespace

Error copy_in_place(KernelContext& /*ctx*/, std::span<EValue*> args) {
  Tensor& self = args[0]->to_tensor();
  const Tensor& src = args[1]->to_tensor();
  // x.copy_(x) leaves x as it is; other overlaps of src and self are not ones a program makes.
  const bool same = self.data() == src.data() && self.dtype() == src.dtype() &&
                    std::ranges::equal(self.sizes(), src.sizes());
  if (!same) EMBER_TRY(broadcast_copy("copy_", src, self));
  // The result is self; a program may give it a tensor of its own.
  Tensor& result = args[3]->to_tensor();
  if (result.data() == self.data()) return Error::Ok;
  EMBER_CHECK(result.dtype() == self.dtype(), Error::InvalidArgument,
              "copy_: the result has dtype %s, self %s", to_string(result.dtype()),
              to_string(self.dtype()));
  EMBER_TRY(result.resize(self.sizes()));
  copy_tensor(self, result);
  return Error::Ok;
}

Error copy_functional_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(out.dtype() == self.dtype(), Error::InvalidArgument,
              "copy: out has dtype %s, expected %s", to_string(out.dtype()),
              to_string(self.dtype()));
  EMBER_TRY(out.resize(self.sizes()));
  return broadcast_copy("copy", args[1]->to_tensor(), out);
}

}  // namespace ember
