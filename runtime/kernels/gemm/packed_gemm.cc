#include "runtime/kernels/gemm/packed_gemm.h"

#include <algorithm>

#include "runtime/kernels/gemm/variants.h"

namespace ember {

int64_t gemm_units(int64_t m, const PackedMatrix& packed) {
  const gemm_variants::Variant& v = gemm_variants::variant();
  int64_t units = 0;
  for (const PackedMatrix::Panel& p : packed.panels) {
    units += (m + v.rows_for(p.nv) - 1) / v.rows_for(p.nv);
  }
  return units;
}

void gemm(int64_t m, const PackedMatrix& packed, const float* a, int64_t lda, const float* r,
          int64_t ldr, float* c, int64_t ldc, Clamp act, int64_t unit_begin, int64_t unit_end) {
  gemm_variants::variant().packed(m, packed, a, lda, r, ldr, c, ldc, act, unit_begin, unit_end);
}

void gemm_gathered(int64_t m, const PackedMatrix& packed, const float* a, int64_t lda,
                   const int32_t* k_offsets, float* c, int64_t ldc, Clamp act) {
  gemm_variants::variant().packed_gathered(m, packed, a, lda, k_offsets, c, ldc, act, 0,
                                           gemm_units(m, packed));
}

PackedMatrix PackedMatrix::pack(const float* w, const float* bias, int64_t k, int64_t n) {
  PackedMatrix out;
  out.k = k;
  out.n = n;
  out.bias.assign((n + kGroup - 1) / kGroup * kGroup, 0.f);
  if (bias != nullptr) std::copy(bias, bias + n, out.bias.begin());
  // Panels of at most 4 groups, as even as they go (96 columns: 3 + 3, not 4 + 2).
  const int64_t vectors = (n + kGroup - 1) / kGroup;
  const int64_t panels = (vectors + 3) / 4;
  int64_t v0 = 0;
  for (int64_t i = 0; i < panels; ++i) {
    const int64_t nv = (vectors - v0 + (panels - i) - 1) / (panels - i);
    out.panels.push_back({v0 * kGroup, nv, static_cast<int64_t>(out.data.size())});
    out.data.resize(out.data.size() + k * nv * kGroup, 0.f);
    float* panel = out.data.data() + out.panels.back().offset;
    // A row of w (contiguous) becomes a column of the panel (its writes stay in L2).
    for (int64_t j = 0; j < nv * kGroup && v0 * kGroup + j < n; ++j) {
      const float* row = w + (v0 * kGroup + j) * k;
      for (int64_t kk = 0; kk < k; ++kk) panel[kk * nv * kGroup + j] = row[kk];
    }
    v0 += nv;
  }
  return out;
}

}  // namespace ember
