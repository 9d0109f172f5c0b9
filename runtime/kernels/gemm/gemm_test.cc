// ember_gemm itself: both front-ends on every ISA variant this CPU has (not only the one
// cpu_isa() picks), float and double, edge sizes and strides, against a reference summed in long
// double. The kernels' conformance with ATen is tests/kernels/linalg_test.cc (mm, convolution)
// and backends/cpu/kernels/kernels_test.cc (the packed GEMM through the backend).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernels/gemm/gemm.h"
#include "runtime/kernels/gemm/packed_gemm.h"
#include "runtime/kernels/gemm/variants.h"
#include "runtime/platform/cpu_isa.h"
#include "runtime/platform/thread_pool.h"

namespace ember::gemm_variants {
namespace {

std::vector<const Variant*> variants() {
  std::vector<const Variant*> out{&variant_generic()};
#if defined(EMBER_GEMM_X86_VARIANTS)
  if (detected_cpu_isa() >= CpuIsa::Avx2) out.push_back(&variant_avx2());
  if (detected_cpu_isa() >= CpuIsa::Avx512) out.push_back(&variant_avx512());
#endif
  return out;
}

template <typename T>
std::vector<T> random_values(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

// |got - want| within what sums of k products of T allow: a few ulps of the sum of magnitudes.
template <typename T>
void expect_near_sum(T got, long double want, long double magnitude, const std::string& where) {
  const long double tol = 8 * magnitude * std::numeric_limits<T>::epsilon() + 1e-30L;
  EXPECT_LE(std::fabs(static_cast<long double>(got) - want), tol)
      << where << ": got " << got << ", want " << static_cast<double>(want);
}

void call(const Variant& v, const GemmProblem<float>& p, ThreadPool* threads) { v.f32(p, threads); }
void call(const Variant& v, const GemmProblem<double>& p, ThreadPool* threads) {
  v.f64(p, threads);
}

// C = alpha A·B + beta C with A, B, C each row-major or transposed (column stride != 1), and C
// also with a column stride of 2; beta 0 must ignore NaN in C.
template <typename T>
void check_strided(const Variant& v, int64_t m, int64_t n, int64_t k, int layout, T alpha, T beta,
                   ThreadPool* threads, std::mt19937& rng) {
  const bool ta = layout & 1, tb = layout & 2, tc = layout & 4, wide_c = layout & 8;
  const std::vector<T> a = random_values<T>(static_cast<size_t>(m * k), rng);
  const std::vector<T> b = random_values<T>(static_cast<size_t>(k * n), rng);
  const int64_t cstep = wide_c ? 2 : 1;
  std::vector<T> c = random_values<T>(static_cast<size_t>(m * n * cstep), rng);
  if (beta == T(0)) c.assign(c.size(), std::numeric_limits<T>::quiet_NaN());
  const std::vector<T> c0 = c;
  GemmProblem<T> p{m,
                   n,
                   k,
                   alpha,
                   a.data(),
                   ta ? 1 : k,
                   ta ? m : 1,
                   b.data(),
                   tb ? 1 : n,
                   tb ? k : 1,
                   beta,
                   c.data(),
                   (tc ? 1 : n) * cstep,
                   (tc ? m : 1) * cstep};
  call(v, p, threads);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double sum = 0, mag = 0;
      for (int64_t r = 0; r < k; ++r) {
        const long double t =
            static_cast<long double>(a[i * p.a_rs + r * p.a_cs]) * b[r * p.b_rs + j * p.b_cs];
        sum += t;
        mag += std::fabs(t);
      }
      const int64_t at = i * p.c_rs + j * p.c_cs;
      long double want = alpha * sum, old = 0;
      if (beta != T(0)) old = static_cast<long double>(beta) * c0[at];
      expect_near_sum(c[at], want + old, std::fabs(alpha) * mag + std::fabs(old),
                      std::string(v.name) + " " + std::to_string(m) + "x" + std::to_string(n) +
                          "x" + std::to_string(k) + " layout " + std::to_string(layout) + " at " +
                          std::to_string(i) + "," + std::to_string(j));
      if (::testing::Test::HasFailure()) return;
    }
    // The elements between C's (column stride 2) are untouched.
    for (int64_t j = 0; wide_c && j < n; ++j) {
      const int64_t gap = i * p.c_rs + j * p.c_cs + 1;
      if (gap < static_cast<int64_t>(c.size())) {
        ASSERT_TRUE(std::isnan(c[gap]) ? std::isnan(c0[gap]) : c[gap] == c0[gap]);
      }
    }
  }
}

TEST(GemmLibrary, StridedEdgeSizesFloatAndDoubleEveryVariant) {
  std::mt19937 rng(1);
  for (const Variant* v : variants()) {
    for (int64_t m : {1, 15, 17, 33}) {
      for (int64_t n : {1, 15, 17, 33}) {
        for (int64_t k : {1, 15, 17, 33}) {
          for (int layout : {0, 1, 2, 4, 8, 15}) {
            check_strided<float>(*v, m, n, k, layout, 1.f, 0.f, nullptr, rng);
            check_strided<double>(*v, m, n, k, layout, 1.0, 0.0, nullptr, rng);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

// Past one block in each dimension (KC 128, MC 192, NC 512 floats on AVX-512), alpha and beta,
// and split over threads.
TEST(GemmLibrary, StridedBlocksAlphaBetaAndThreads) {
  std::mt19937 rng(2);
  ThreadPool pool(3);
  for (const Variant* v : variants()) {
    check_strided<float>(*v, 200, 1030, 300, 0, 0.5f, 2.f, &pool, rng);
    check_strided<double>(*v, 200, 530, 260, 5, -1.5, 0.25, &pool, rng);
    check_strided<float>(*v, 37, 45, 131, 10, 2.f, -1.f, nullptr, rng);
    if (HasFailure()) return;
  }
}

// clamp(bias + A B (+ R)) through the packed front-end: dense A (lda past k) or gathered through
// a table of offsets; every size past a tile's rows, a vector, a half vector, a group and a
// panel; the units split in three give the same bits.
TEST(GemmLibrary, PackedEveryVariantDenseGatheredAndUnitRanges) {
  std::mt19937 rng(3);
  for (const Variant* v : variants()) {
    for (int64_t m : {1, 2, 5, 13, 15, 17, 33}) {
      for (int64_t k : {1, 15, 17, 33}) {
        for (int64_t n : {1, 8, 15, 17, 24, 33, 64, 100, 200}) {
          const std::string where = std::string(v->name) + " m " + std::to_string(m) + " k " +
                                    std::to_string(k) + " n " + std::to_string(n);
          const bool gathered = (m + k) % 2 == 1, with_r = (k + n) % 2 == 0;
          const bool with_bias = (m + n) % 3 != 0;
          const int64_t lda = gathered ? 2 * k + 3 : k + 1;
          std::vector<int32_t> offsets(static_cast<size_t>(k));
          for (int64_t kk = 0; kk < k; ++kk) offsets[kk] = static_cast<int32_t>(2 * kk + 1);
          const std::vector<float> a = random_values<float>(static_cast<size_t>(m * lda), rng);
          const std::vector<float> w = random_values<float>(static_cast<size_t>(n * k), rng);
          const std::vector<float> bias = random_values<float>(static_cast<size_t>(n), rng);
          const std::vector<float> r = random_values<float>(static_cast<size_t>(m * (n + 2)), rng);
          const PackedMatrix b =
              PackedMatrix::pack(w.data(), with_bias ? bias.data() : nullptr, k, n);
          const Clamp act{-1.5f, 2.f};
          const int64_t ldc = n + 2;
          std::vector<float> c(static_cast<size_t>(m * ldc), 7.f);
          int64_t units = 0;
          for (const PackedMatrix::Panel& p : b.panels) {
            units += (m + v->rows_for(p.nv) - 1) / v->rows_for(p.nv);
          }
          if (gathered) {
            v->packed_gathered(m, b, a.data(), lda, offsets.data(), c.data(), ldc, act, 0, units);
          } else {
            v->packed(m, b, a.data(), lda, with_r ? r.data() : nullptr, ldc, c.data(), ldc, act, 0,
                      units);
          }
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < ldc; ++j) {
              const float got = c[i * ldc + j];
              if (j >= n) {  // past n: not written
                ASSERT_EQ(got, 7.f) << where;
                continue;
              }
              long double sum = with_bias ? bias[j] : 0, mag = std::fabs(sum);
              for (int64_t kk = 0; kk < k; ++kk) {
                const long double t =
                    static_cast<long double>(a[i * lda + (gathered ? offsets[kk] : kk)]) *
                    w[j * k + kk];
                sum += t;
                mag += std::fabs(t);
              }
              if (with_r && !gathered) {
                sum += r[i * ldc + j];
                mag += std::fabs(r[i * ldc + j]);
              }
              const long double want = std::fmin(std::fmax(sum, -1.5L), 2.0L);
              expect_near_sum(got, want, mag, where);
              if (HasFailure()) return;
            }
          }
          if (gathered) continue;
          std::vector<float> split(c.size(), 7.f);
          for (int64_t t = 0; t < 3; ++t) {
            v->packed(m, b, a.data(), lda, with_r ? r.data() : nullptr, ldc, split.data(), ldc, act,
                      units * t / 3, units * (t + 1) / 3);
          }
          ASSERT_EQ(split, c) << where;
        }
      }
    }
  }
}

// A long k is summed in chunks (panels.inc) whose partial sums wait in C. The result must be the
// one pass's, bit for bit: where R is C itself the packed front-end cannot chunk (the partial
// sums would overwrite R), so the same call with R in place is the one pass to compare with.
// Also against the reference, with the dense and the gathered A, over unit ranges.
TEST(GemmLibrary, PackedChunksOfLongKAreOnePassBitForBit) {
  std::mt19937 rng(5);
  for (const Variant* v : variants()) {
    for (int64_t k : {769, 1300, 2048}) {
      for (int64_t m : {2, 7, 13}) {
        for (int64_t n : {24, 100}) {
          const std::string where = std::string(v->name) + " m " + std::to_string(m) + " k " +
                                    std::to_string(k) + " n " + std::to_string(n);
          const int64_t lda = k + 3, ldc = n + 1;
          std::vector<float> a = random_values<float>(static_cast<size_t>(m * lda), rng);
          const std::vector<float> w = random_values<float>(static_cast<size_t>(n * k), rng);
          const std::vector<float> bias = random_values<float>(static_cast<size_t>(n), rng);
          const std::vector<float> r = random_values<float>(static_cast<size_t>(m * ldc), rng);
          a[static_cast<size_t>(lda + k - 1)] = std::numeric_limits<float>::quiet_NaN();
          const PackedMatrix b = PackedMatrix::pack(w.data(), bias.data(), k, n);
          int64_t units = 0;
          for (const PackedMatrix::Panel& p : b.panels) {
            units += (m + v->rows_for(p.nv) - 1) / v->rows_for(p.nv);
          }
          const Clamp act{-4.f, 4.f};
          std::vector<float> chunked(static_cast<size_t>(m * ldc), 7.f);
          for (int64_t t = 0; t < 2; ++t) {
            v->packed(m, b, a.data(), lda, r.data(), ldc, chunked.data(), ldc, act, units * t / 2,
                      units * (t + 1) / 2);
          }
          std::vector<float> one_pass = r;
          v->packed(m, b, a.data(), lda, one_pass.data(), ldc, one_pass.data(), ldc, act, 0, units);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              const float got = chunked[i * ldc + j], want = one_pass[i * ldc + j];
              ASSERT_TRUE(std::isnan(got) ? std::isnan(want) : got == want)
                  << where << " at " << i << "," << j << ": " << got << " vs " << want;
              if (i == 1) {  // the NaN in A's row 1 reaches every column of C's
                ASSERT_TRUE(std::isnan(got)) << where << " at " << j;
                continue;
              }
              long double sum = bias[j], mag = std::fabs(sum);
              for (int64_t kk = 0; kk < k; ++kk) {
                const long double t = static_cast<long double>(a[i * lda + kk]) * w[j * k + kk];
                sum += t;
                mag += std::fabs(t);
              }
              sum += r[i * ldc + j];
              mag += std::fabs(r[i * ldc + j]);
              expect_near_sum(got, std::fmin(std::fmax(sum, -4.0L), 4.0L), mag, where);
              if (HasFailure()) return;
            }
            ASSERT_EQ(chunked[i * ldc + n], 7.f) << where;  // past n: not written
          }
          // The gathered A (a convolution's patches over many channels): every other element.
          std::vector<int32_t> offsets(static_cast<size_t>(k));
          for (int64_t kk = 0; kk < k; ++kk) offsets[kk] = static_cast<int32_t>(kk / 2 * 2);
          std::vector<float> gathered(static_cast<size_t>(m * ldc), 7.f);
          v->packed_gathered(m, b, a.data(), lda, offsets.data(), gathered.data(), ldc, Clamp{}, 0,
                             units);
          for (int64_t j = 0; j < n; ++j) {
            long double sum = bias[j], mag = std::fabs(sum);
            for (int64_t kk = 0; kk < k; ++kk) {
              const long double t = static_cast<long double>(a[offsets[kk]]) * w[j * k + kk];
              sum += t;
              mag += std::fabs(t);
            }
            expect_near_sum(gathered[j], sum, mag, where + " gathered");
          }
          if (HasFailure()) return;
        }
      }
    }
  }
}

// The public entry points run the variant in force (cpu_isa()).
TEST(GemmLibrary, PublicCallsRunTheVariantInForce) {
  EXPECT_STREQ(gemm_isa(), variant().name);
  EXPECT_STREQ(gemm_isa(), cpu_isa_name(cpu_isa()));
  const float a[2] = {1.f, 2.f}, w[6] = {1.f, 0.f, 0.f, 1.f, 1.f, 1.f};
  const float bias[3] = {0.5f, 0.f, -10.f};
  const PackedMatrix b = PackedMatrix::pack(w, bias, 2, 3);
  float c[3];
  gemm(1, b, a, 2, nullptr, 0, c, 3, Clamp{-1.f, 100.f});
  EXPECT_EQ(c[0], 1.5f);
  EXPECT_EQ(c[1], 2.f);
  EXPECT_EQ(c[2], -1.f);
  EXPECT_EQ(gemm_units(1, b), 1);
}

}  // namespace
}  // namespace ember::gemm_variants
