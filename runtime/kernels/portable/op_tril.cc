// aten::tril.out(Tensor self, int diagonal=0, *, Tensor(a!) out)
// aten::triu.out(Tensor self, int diagonal=0, *, Tensor(a!) out)
// Keeps element (i, j) of the last two dims when j - i <= diagonal (tril) or >= diagonal (triu);
// zeroes the rest (all-zero bytes are zero in every dtype).
#include <cstring>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"

namespace ember {
namespace {

Error triangle(const char* op, std::span<EValue*> args, bool lower) {
  const Tensor& in = args[0]->to_tensor();
  const int64_t diagonal = args[1]->to_int();
  Tensor& out = args[2]->to_tensor();
  EMBER_CHECK(in.dim() >= 2, Error::InvalidArgument,
              "%s: input tensor must have at least 2 dimensions", op);
  EMBER_CHECK(out.dtype() == in.dtype() && out.dim() == in.dim(), Error::InvalidArgument,
              "%s: out must have the input's dtype and rank", op);
  EMBER_TRY(out.resize(in.sizes()));
  const int64_t rows = in.size(in.dim() - 2), cols = in.size(in.dim() - 1);
  const size_t es = in.element_size();
  const auto* src = static_cast<const uint8_t*>(in.data());
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  for (int64_t l = 0; l < in.numel(); ++l) {
    const int64_t j = l % cols, i = (l / cols) % rows;
    const bool keep = lower ? j - i <= diagonal : j - i >= diagonal;
    uint8_t* d = dst + offset_of(out, l) * static_cast<int64_t>(es);
    if (keep) {
      std::memcpy(d, src + offset_of(in, l) * static_cast<int64_t>(es), es);
    } else {
      std::memset(d, 0, es);
    }
  }
  return Error::Ok;
}

}  // namespace

Error tril_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return triangle("tril", args, true);
}

Error triu_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return triangle("triu", args, false);
}

}  // namespace ember
