#include "backends/cpu/kernels/policy.h"

#include <omp.h>

#include <algorithm>

#include "backends/cpu/kernels/simd_kernels.h"
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

}  // namespace ember::cpu
