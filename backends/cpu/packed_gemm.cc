#include "backends/cpu/packed_gemm.h"

#include <omp.h>

#include <algorithm>

#include "backends/cpu/simd_kernels.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu {

namespace simd {
const Kernels* kernels() {
  static const Kernels* const k =
      cpu_isa() >= CpuIsa::Avx512
          ? (__builtin_cpu_supports("avx512vnni") ? &kernels_avx512_vnni() : &kernels_avx512())
      : cpu_isa() >= CpuIsa::Avx2 ? &kernels_avx2()
                                  : nullptr;
  return k;
}
}  // namespace simd

bool own_kernels_supported() { return simd::kernels() != nullptr; }

bool own_conv_kernels_chosen() { return own_kernels_supported() && simd::kernels()->convolutions; }

bool own_linear_kernels_chosen() { return own_kernels_supported() && simd::kernels()->linear; }

int64_t gemm_units(int64_t m, const PackedMatrix& packed) {
  const simd::Kernels& k = *simd::kernels();
  int64_t units = 0;
  for (const PackedMatrix::Panel& p : packed.panels) {
    units += (m + k.rows_for(p.nv) - 1) / k.rows_for(p.nv);
  }
  return units;
}

void gemm(int64_t m, const PackedMatrix& packed, const float* a, int64_t lda, const float* r,
          int64_t ldr, float* c, int64_t ldc, Clamp act, int64_t unit_begin, int64_t unit_end) {
  simd::kernels()->gemm(m, packed, a, lda, r, ldr, c, ldc, act, unit_begin, unit_end);
}

void gemm_threads(int threads, int64_t m, const PackedMatrix& packed, const float* a, int64_t lda,
                  const float* r, int64_t ldr, float* c, int64_t ldc, Clamp act) {
  const int64_t units = gemm_units(m, packed);
  threads = static_cast<int>(std::min<int64_t>(threads, units));
  if (threads <= 1) {
    gemm(m, packed, a, lda, r, ldr, c, ldc, act);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    gemm(m, packed, a, lda, r, ldr, c, ldc, act, units * t / n, units * (t + 1) / n);
  }
}

void gemm_gathered(int64_t m, const PackedMatrix& packed, const float* a, int64_t lda,
                   const int32_t* k_offsets, float* c, int64_t ldc, Clamp act) {
  simd::kernels()->gemm_gathered(m, packed, a, lda, k_offsets, c, ldc, act, 0,
                                 gemm_units(m, packed));
}

PackedMatrix PackedMatrix::pack(const float* w, const float* bias, int64_t k, int64_t n) {
  PackedMatrix out;
  out.k = k;
  out.n = n;
  out.bias.assign(round_up_group(n), 0.f);
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

}  // namespace ember::cpu
