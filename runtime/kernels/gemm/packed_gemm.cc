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

namespace {

// Panels of at most 4 groups of `group` columns, as even as they go (96 columns: 3 + 3, not
// 4 + 2): each panel's groups.
std::vector<int64_t> panel_groups(int64_t n, int64_t group) {
  const int64_t vectors = (n + group - 1) / group;
  const int64_t panels = (vectors + 3) / 4;
  std::vector<int64_t> out;
  int64_t v0 = 0;
  for (int64_t i = 0; i < panels; ++i) {
    out.push_back((vectors - v0 + (panels - i) - 1) / (panels - i));
    v0 += out.back();
  }
  return out;
}

int64_t padded(int64_t n, int64_t group) { return (n + group - 1) / group * group; }

}  // namespace

std::shared_ptr<void> take_storage(size_t bytes, const Storage& storage) {
  if (storage) return storage(bytes);
  return std::shared_ptr<void>(
      ::operator new(bytes, CacheLineAllocator<float>::kAlign),
      [](void* p) { ::operator delete(p, CacheLineAllocator<float>::kAlign); });
}

size_t PackedMatrix::storage_bytes(int64_t k, int64_t n) {
  return static_cast<size_t>((k + 1) * padded(n, kGroup)) * sizeof(float);
}

PackedMatrix PackedMatrix::pack(const float* w, const float* bias, int64_t k, int64_t n,
                                const Storage& storage) {
  PackedMatrix out;
  out.k = k;
  out.n = n;
  const size_t bytes = storage_bytes(k, n);
  out.storage = take_storage(bytes, storage);
  if (out.storage == nullptr) return PackedMatrix{};
  float* const mem = static_cast<float*>(out.storage.get());
  // The panels (each a multiple of 16 floats, so each starts on a cache line), then the bias.
  float* const bias_at = mem + k * padded(n, kGroup);
  std::fill(bias_at, bias_at + padded(n, kGroup), 0.f);
  if (bias != nullptr) std::copy(bias, bias + n, bias_at);
  int64_t v0 = 0, offset = 0;
  for (const int64_t nv : panel_groups(n, kGroup)) {
    out.panels.push_back({v0 * kGroup, nv, offset});
    float* panel = mem + offset;
    std::fill(panel, panel + k * nv * kGroup, 0.f);
    // A row of w (contiguous) becomes a column of the panel (its writes stay in L2).
    for (int64_t j = 0; j < nv * kGroup && v0 * kGroup + j < n; ++j) {
      const float* row = w + (v0 * kGroup + j) * k;
      for (int64_t kk = 0; kk < k; ++kk) panel[kk * nv * kGroup + j] = row[kk];
    }
    offset += k * nv * kGroup;
    v0 += nv;
  }
  out.data = mem;
  out.bias = bias_at;
  return out;
}

}  // namespace ember
