#include "backends/cpu/packed_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "backends/cpu/avx512.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu {
namespace {

using avx512::clamp;
using avx512::kVec;
using avx512::low256;
using avx512::round_up;

// Where column kk of a row of A is: kk itself (a dense row), or a table's entry (the patches of
// a convolution, read in place).
struct DenseColumns {
  int64_t operator[](int64_t kk) const { return kk; }
};
struct GatheredColumns {
  const int32_t* offset;
  int64_t operator[](int64_t kk) const { return offset[kk]; }
};

// A tile of MR rows and NV vectors of C = clamp(bias + A B (+ R)). A: row i, column kk at
// a[i * lda + ak[kk]]; B: [k][16 NV] (stride ldb, zero-padded past N); bias: 16 NV floats
// (zero-padded). The last vector of each row is stored under `last` (the columns past N are
// neither read nor written). HALF: the last vector holds at most 8 columns, and its FMAs are
// 256 bits wide (a 24-channel projection: a 512-bit FMA costs two 256-bit ones on this CPU, so a
// third of that work was on zeros).
template <int MR, int NV, bool HALF, typename AK>
EMBER_AVX512 void gemm_tile(const float* a, int64_t lda, AK ak, const float* b, int64_t ldb,
                            const float* bias, int64_t k, const float* r, int64_t ldr, float* c,
                            int64_t ldc, __mmask16 last, __m512 lo, __m512 hi) {
  constexpr int NF = HALF ? NV - 1 : NV;  // full vectors
  __m512 acc[MR][NF > 0 ? NF : 1];
  __m256 acch[HALF ? MR : 1];
#pragma GCC unroll 16
  for (int j = 0; j < NF; ++j) {
    const __m512 bv = _mm512_loadu_ps(bias + kVec * j);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i][j] = bv;
  }
  if constexpr (HALF) {
    const __m256 bv = _mm256_loadu_ps(bias + kVec * NF);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acch[i] = bv;
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    const float* ak_col = a + ak[kk];
    __m512 bv[NF > 0 ? NF : 1];
#pragma GCC unroll 16
    for (int j = 0; j < NF; ++j) bv[j] = _mm512_loadu_ps(b + kk * ldb + kVec * j);
    [[maybe_unused]] __m256 bh;
    if constexpr (HALF) bh = _mm256_loadu_ps(b + kk * ldb + kVec * NF);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(ak_col[i * lda]);
#pragma GCC unroll 16
      for (int j = 0; j < NF; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
      if constexpr (HALF) acch[i] = _mm256_fmadd_ps(_mm256_set1_ps(ak_col[i * lda]), bh, acch[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < NF; ++j) {
      const __mmask16 m = j == NV - 1 ? last : static_cast<__mmask16>(0xFFFF);
      __m512 v = acc[i][j];
      if (r != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, r + i * ldr + kVec * j));
      _mm512_mask_storeu_ps(c + i * ldc + kVec * j, m, clamp(v, lo, hi));
    }
    if constexpr (HALF) {
      const auto m = static_cast<__mmask8>(last);
      __m256 v = acch[i];
      if (r != nullptr) v = _mm256_add_ps(v, _mm256_maskz_loadu_ps(m, r + i * ldr + kVec * NF));
      // max, then min, return their second operand where one is NaN: x (as clamp() does).
      v = _mm256_min_ps(low256(hi), _mm256_max_ps(low256(lo), v));
      _mm256_mask_storeu_ps(c + i * ldc + kVec * NF, m, v);
    }
  }
}

// Rows per tile for nv vectors: 24 accumulators (of 32 registers) where nv allows.
constexpr int rows_for(int64_t nv) { return nv == 4 ? 6 : nv == 3 ? 8 : 12; }

template <int NV, bool HALF, typename AK, int MR = rows_for(NV)>
EMBER_AVX512 void gemm_tail(int64_t m, const float* a, int64_t lda, AK ak, const float* b,
                            int64_t ldb, const float* bias, int64_t k, const float* r, int64_t ldr,
                            float* c, int64_t ldc, __mmask16 last, __m512 lo, __m512 hi) {
  if constexpr (MR > 1) {
    if (m < MR) {
      gemm_tail<NV, HALF, AK, MR - 1>(m, a, lda, ak, b, ldb, bias, k, r, ldr, c, ldc, last, lo, hi);
      return;
    }
  }
  gemm_tile<MR, NV, HALF>(a, lda, ak, b, ldb, bias, k, r, ldr, c, ldc, last, lo, hi);
}

template <int NV, bool HALF, typename AK>
EMBER_AVX512 void gemm_columns(int64_t m, const float* a, int64_t lda, AK ak, const float* b,
                               int64_t ldb, const float* bias, int64_t k, const float* r,
                               int64_t ldr, float* c, int64_t ldc, __mmask16 last, __m512 lo,
                               __m512 hi) {
  constexpr int MR = rows_for(NV);
  int64_t i = 0;
  for (; i + MR <= m; i += MR) {
    gemm_tile<MR, NV, HALF>(a + i * lda, lda, ak, b, ldb, bias, k,
                            r == nullptr ? nullptr : r + i * ldr, ldr, c + i * ldc, ldc, last, lo,
                            hi);
  }
  if (i < m) {
    gemm_tail<NV, HALF>(m - i, a + i * lda, lda, ak, b, ldb, bias, k,
                        r == nullptr ? nullptr : r + i * ldr, ldr, c + i * ldc, ldc, last, lo, hi);
  }
}

template <typename AK>
EMBER_AVX512 void gemm_panels(int64_t m, const PackedMatrix& packed, const float* a, int64_t lda,
                              AK ak, const float* r, int64_t ldr, float* c, int64_t ldc, Clamp act,
                              int64_t unit_begin, int64_t unit_end) {
  const int64_t k = packed.k;
  const __m512 lo = _mm512_set1_ps(act.lo), hi = _mm512_set1_ps(act.hi);
  int64_t base = 0;  // the panel's first unit
  for (const PackedMatrix::Panel& p : packed.panels) {
    const int64_t mr = rows_for(p.nv), tiles = (m + mr - 1) / mr;
    const int64_t t0 = std::max<int64_t>(unit_begin - base, 0);
    const int64_t t1 = std::min(unit_end - base, tiles);
    base += tiles;
    if (t0 >= t1) continue;
    const int64_t row0 = t0 * mr, rows = std::min(t1 * mr, m) - row0;
    const int64_t ldb = kVec * p.nv;
    const float* b = packed.data.data() + p.offset;
    const int64_t in_last = std::min<int64_t>(packed.n - (p.n0 + (p.nv - 1) * kVec), kVec);
    const auto last = static_cast<__mmask16>((1u << in_last) - 1);
    const float* aa = a + row0 * lda;
    const float* rr = r == nullptr ? nullptr : r + row0 * ldr + p.n0;
    float* cc = c + row0 * ldc + p.n0;
    const float* bb = packed.bias.data() + p.n0;
    // The panel's vectors and whether its last is half-empty, as template arguments.
    auto run = [&](auto nv, auto half) {
      gemm_columns<decltype(nv)::value, decltype(half)::value>(rows, aa, lda, ak, b, ldb, bb, k, rr,
                                                               ldr, cc, ldc, last, lo, hi);
    };
    auto run_nv = [&](auto nv) {
      if (in_last <= kVec / 2) {
        run(nv, std::true_type{});
      } else {
        run(nv, std::false_type{});
      }
    };
    switch (p.nv) {
      case 4:
        run_nv(std::integral_constant<int, 4>{});
        break;
      case 3:
        run_nv(std::integral_constant<int, 3>{});
        break;
      case 2:
        run_nv(std::integral_constant<int, 2>{});
        break;
      default:
        run_nv(std::integral_constant<int, 1>{});
        break;
    }
  }
}

}  // namespace

int64_t gemm_units(int64_t m, const PackedMatrix& packed) {
  int64_t units = 0;
  for (const PackedMatrix::Panel& p : packed.panels)
    units += (m + rows_for(p.nv) - 1) / rows_for(p.nv);
  return units;
}

void gemm(int64_t m, const PackedMatrix& packed, const float* a, int64_t lda, const float* r,
          int64_t ldr, float* c, int64_t ldc, Clamp act, int64_t unit_begin, int64_t unit_end) {
  gemm_panels(m, packed, a, lda, DenseColumns{}, r, ldr, c, ldc, act, unit_begin, unit_end);
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
  gemm_panels(m, packed, a, lda, GatheredColumns{k_offsets}, nullptr, 0, c, ldc, act, 0,
              gemm_units(m, packed));
}

PackedMatrix PackedMatrix::pack(const float* w, const float* bias, int64_t k, int64_t n) {
  PackedMatrix out;
  out.k = k;
  out.n = n;
  out.bias.assign(round_up(n), 0.f);
  if (bias != nullptr) std::copy(bias, bias + n, out.bias.begin());
  // Panels of at most 4 vectors, as even as they go (96 columns: 3 + 3, not 4 + 2).
  const int64_t vectors = (n + kVec - 1) / kVec;
  const int64_t panels = (vectors + 3) / 4;
  int64_t v0 = 0;
  for (int64_t i = 0; i < panels; ++i) {
    const int64_t nv = (vectors - v0 + (panels - i) - 1) / (panels - i);
    out.panels.push_back({v0 * kVec, nv, static_cast<int64_t>(out.data.size())});
    out.data.resize(out.data.size() + k * nv * kVec, 0.f);
    float* panel = out.data.data() + out.panels.back().offset;
    // A row of w (contiguous) becomes a column of the panel (its writes stay in L2).
    for (int64_t j = 0; j < nv * kVec && v0 * kVec + j < n; ++j) {
      const float* row = w + (v0 * kVec + j) * k;
      for (int64_t kk = 0; kk < k; ++kk) panel[kk * nv * kVec + j] = row[kk];
    }
    v0 += nv;
  }
  return out;
}

bool avx512_supported() { return cpu_isa() >= CpuIsa::Avx512; }

}  // namespace ember::cpu
