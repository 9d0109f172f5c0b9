#include "runtime/kernels/cortex_m/elementwise.h"

namespace ember::cortex_m {
namespace {

bool is_channel_vector(const Tensor& t, int64_t c) {
  return t.dim() == 4 && t.size(0) == 1 && t.size(1) == c && t.size(2) == 1 && t.size(3) == 1;
}

}  // namespace

Error binary_shapes(const Tensor& self, const Tensor& other, const Tensor& out, const char* op,
                    Broadcast* mode) {
  EMBER_TRY(check_dtype(self, ScalarType::Char, op, "self"));
  EMBER_TRY(check_dtype(other, ScalarType::Char, op, "other"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  if (same_sizes(self.sizes(), other.sizes())) {
    int64_t want[kMaxRank];
    for (int i = 0; i < self.dim(); ++i) want[i] = self.size(i);
    EMBER_TRY(check_sizes(out, {want, static_cast<size_t>(self.dim())}, op, "out"));
    EMBER_CHECK(same_layout(self, other) && same_layout(self, out), Error::InvalidArgument,
                "%s: self, other and out must share one dim order (read in memory order)", op);
    *mode = Broadcast::None;
    return Error::Ok;
  }
  const bool four_d = self.dim() == 4 && other.dim() == 4;
  if (four_d && is_channel_vector(other, self.size(1))) {
    *mode = Broadcast::OtherIsChannel;
  } else if (four_d && is_channel_vector(self, other.size(1))) {
    *mode = Broadcast::SelfIsChannel;
  } else {
    return fail(Error::InvalidArgument,
                "%s: self (rank %d) and other (rank %d) have different sizes and are not a "
                "channel broadcast of [1, C, 1, 1] over [N, C, H, W]",
                op, self.dim(), other.dim());
  }
  const Tensor& big = *mode == Broadcast::OtherIsChannel ? self : other;
  const int64_t want[] = {big.size(0), big.size(1), big.size(2), big.size(3)};
  return check_sizes(out, want, op, "out");
}

}  // namespace ember::cortex_m
