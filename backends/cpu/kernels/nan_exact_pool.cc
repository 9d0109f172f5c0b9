// The NaN-exact max pooling (kernels/nan_exact.h): ATen's maximum of each window, NaN where the
// window holds one, over plain and channel-blocked layouts, 16 or 8 channels to a vector.
#include "backends/cpu/kernels/nan_exact.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/kernels/nan_exact_internal.h"
#include "runtime/platform/cpu_isa.h"

namespace ember::cpu {
namespace {

using nan_exact_internal::kInf;
using nan_exact_internal::split;

// The running maximum of L channels, NaN skipped, and the last NaN seen (ATen's result is NaN
// where any value was). Two selects and no branch, so that the lanes become one vector.
template <int L>
EMBER_INLINE void max_into(float* m, float* nan, const float* p) {
  for (int l = 0; l < L; ++l) {
    const float v = p[l];
    m[l] = v > m[l] ? v : m[l];
    nan[l] = v != v ? v : nan[l];
  }
}

// The taps of a window inside the input, per dim: j in [lo, hi) where
// o * stride - pad + j * dilation lies in [0, in).
EMBER_INLINE void taps(const PoolWindow& w, const int64_t* o, int64_t* lo, int64_t* hi) {
  for (int k = 0; k < 3; ++k) {
    const int64_t first = o[k] * w.stride[k] - w.pad[k];
    if (w.dilation[k] == 1) {  // no divisions (they dominated a 3x3 window's time)
      lo[k] = std::max<int64_t>(0, -first);
      hi[k] = std::max<int64_t>(0, std::min(w.kernel[k], w.in[k] - first));
      continue;
    }
    lo[k] = first >= 0 ? 0 : (-first + w.dilation[k] - 1) / w.dilation[k];
    const int64_t last = w.in[k] - 1 - first;  // j * dilation <= last
    hi[k] = last < 0 ? 0 : std::min(w.kernel[k], last / w.dilation[k] + 1);
  }
}

// The loops over a window's taps, `body` run with `p` at each (in the calling function: a lambda
// would lose the function's target instruction set).
#define EMBER_FOR_TAPS(x, in, w, o, body)                                                  \
  do {                                                                                     \
    int64_t lo_[3], hi_[3];                                                                \
    taps(w, o, lo_, hi_);                                                                  \
    for (int64_t a_ = lo_[0]; a_ < hi_[0]; ++a_) {                                         \
      const int64_t d_ = o[0] * w.stride[0] - w.pad[0] + a_ * w.dilation[0];               \
      for (int64_t b_ = lo_[1]; b_ < hi_[1]; ++b_) {                                       \
        const int64_t h_ = o[1] * w.stride[1] - w.pad[1] + b_ * w.dilation[1];             \
        const float* row_ = x + d_ * in.spatial[0] + h_ * in.spatial[1];                   \
        for (int64_t c_ = lo_[2]; c_ < hi_[2]; ++c_) {                                     \
          const float* p =                                                                 \
              row_ + (o[2] * w.stride[2] - w.pad[2] + c_ * w.dilation[2]) * in.spatial[2]; \
          body;                                                                            \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  } while (false)

// One output position's L contiguous channels (x and y point at the first).
template <int L>
EMBER_INLINE void window(const float* x, const PoolLayout& in, const PoolWindow& w,
                         const int64_t* o, float* y) {
  float m[L], nan[L];
  for (int l = 0; l < L; ++l) {
    m[l] = -kInf;
    nan[l] = 0.f;
  }
  EMBER_FOR_TAPS(x, in, w, o, max_into<L>(m, nan, p));
  for (int l = 0; l < L; ++l) y[l] = nan[l] != nan[l] ? nan[l] : m[l];
}

// Output positions (od, oh, 0..out[2]) of one group of contiguous channels (x, y: its first
// channel at input position 0 and at output (od, oh, 0); ys: the output's stride along ow), L
// channels to a vector: the maximum skipping NaN (max(v, m) returns m where either is NaN), and
// the lanes that saw a NaN, which become NaN.
EMBER_TARGET_AVX512 void row16_avx512(const float* x, const PoolLayout& in, const PoolWindow& w,
                                      int64_t od, int64_t oh, float* y, int64_t ys) {
  const int64_t o[3] = {od, oh, 0};
  int64_t lo[3], hi[3];
  taps(w, o, lo, hi);
  const __m512 nan_v = _mm512_set1_ps(std::nanf(""));
  for (int64_t ow = 0; ow < w.out[2]; ++ow) {
    const int64_t o2[3] = {od, oh, ow};
    int64_t l2[3], h2[3];
    taps(w, o2, l2, h2);
    const int64_t first = ow * w.stride[2] - w.pad[2];
    __m512 m = _mm512_set1_ps(-kInf);
    __mmask16 nan = 0;
    for (int64_t a = lo[0]; a < hi[0]; ++a) {
      const int64_t d = od * w.stride[0] - w.pad[0] + a * w.dilation[0];
      for (int64_t b = lo[1]; b < hi[1]; ++b) {
        const int64_t h = oh * w.stride[1] - w.pad[1] + b * w.dilation[1];
        const float* row = x + d * in.spatial[0] + h * in.spatial[1];
        for (int64_t c = l2[2]; c < h2[2]; ++c) {
          const __m512 v = _mm512_loadu_ps(row + (first + c * w.dilation[2]) * in.spatial[2]);
          nan = static_cast<__mmask16>(nan | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
          m = _mm512_maskz_max_ps(0xFFFF, v, m);  // the zero-masking form (gcc 12 warns of an
                                                  // uninitialized value in the plain one)
        }
      }
    }
    _mm512_storeu_ps(y + ow * ys, _mm512_mask_mov_ps(m, nan, nan_v));
  }
}

// Likewise, 8 channels to an AVX2 vector (L = 8 or 16).
template <int L>
EMBER_TARGET_AVX2 void row_avx2(const float* x, const PoolLayout& in, const PoolWindow& w,
                                int64_t od, int64_t oh, float* y, int64_t ys) {
  const int64_t o[3] = {od, oh, 0};
  int64_t lo[3], hi[3];
  taps(w, o, lo, hi);
  const __m256 nan_v = _mm256_set1_ps(std::nanf(""));
  for (int64_t ow = 0; ow < w.out[2]; ++ow) {
    const int64_t o2[3] = {od, oh, ow};
    int64_t l2[3], h2[3];
    taps(w, o2, l2, h2);
    const int64_t first = ow * w.stride[2] - w.pad[2];
    __m256 m[L / 8], nan[L / 8];
    for (int k = 0; k < L / 8; ++k) {
      m[k] = _mm256_set1_ps(-kInf);
      nan[k] = _mm256_setzero_ps();
    }
    for (int64_t a = lo[0]; a < hi[0]; ++a) {
      const int64_t d = od * w.stride[0] - w.pad[0] + a * w.dilation[0];
      for (int64_t b = lo[1]; b < hi[1]; ++b) {
        const int64_t h = oh * w.stride[1] - w.pad[1] + b * w.dilation[1];
        const float* row = x + d * in.spatial[0] + h * in.spatial[1];
        for (int64_t c = l2[2]; c < h2[2]; ++c) {
          const float* p = row + (first + c * w.dilation[2]) * in.spatial[2];
          for (int k = 0; k < L / 8; ++k) {
            const __m256 v = _mm256_loadu_ps(p + 8 * k);
            nan[k] = _mm256_or_ps(nan[k], _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            m[k] = _mm256_max_ps(v, m[k]);
          }
        }
      }
    }
    for (int k = 0; k < L / 8; ++k) {
      _mm256_storeu_ps(y + ow * ys + 8 * k, _mm256_blendv_ps(m[k], nan_v, nan[k]));
    }
  }
}

enum class Isa { Generic, Avx2, Avx512 };

// Output rows [begin, end) of (batch, channel group, d, h): a channel group is a block of a
// blocked layout, 16 channels of a channels-last one, or one channel of another.
template <Isa I>
EMBER_INLINE void pool_rows(const float* x, const PoolLayout& in, float* y, const PoolLayout& out,
                            const PoolWindow& w, int64_t group, int64_t begin, int64_t end) {
  const int64_t groups = (w.channels + group - 1) / group;
  const bool contiguous = group > 1;
  for (int64_t r = begin; r < end; ++r) {
    int64_t rest = r;
    const int64_t oh = rest % w.out[1];
    rest /= w.out[1];
    const int64_t od = rest % w.out[0];
    rest /= w.out[0];
    const int64_t g = rest % groups;
    const int64_t b = rest / groups;
    const int64_t c0 = g * group;
    const int64_t count = std::min(group, w.channels - c0);
    // The group's first channel in each layout.
    const int64_t xi =
        b * in.batch + (c0 / in.block) * in.channel_block + (c0 % in.block) * in.channel;
    const int64_t yi =
        b * out.batch + (c0 / out.block) * out.channel_block + (c0 % out.block) * out.channel;
    float* dst = y + yi + od * out.spatial[0] + oh * out.spatial[1];
    if constexpr (I != Isa::Generic) {
      if (contiguous && (count == 16 || count == 8)) {
        if (I == Isa::Avx512 && count == 16) {
          row16_avx512(x + xi, in, w, od, oh, dst, out.spatial[2]);
        } else if (count == 16) {
          row_avx2<16>(x + xi, in, w, od, oh, dst, out.spatial[2]);
        } else {
          row_avx2<8>(x + xi, in, w, od, oh, dst, out.spatial[2]);
        }
        continue;
      }
    }
    for (int64_t ow = 0; ow < w.out[2]; ++ow) {
      const int64_t o[3] = {od, oh, ow};
      float* at = dst + ow * out.spatial[2];
      if (contiguous && count == 16) {
        window<16>(x + xi, in, w, o, at);
      } else if (contiguous && count == 8) {
        window<8>(x + xi, in, w, o, at);
      } else {
        for (int64_t c = 0; c < count; ++c) {
          window<1>(x + xi + c * in.channel, in, w, o, at + c * out.channel);
        }
      }
    }
  }
}
EMBER_TARGET_AVX512 void pool_avx512(const float* x, const PoolLayout& in, float* y,
                                     const PoolLayout& out, const PoolWindow& w, int64_t group,
                                     int64_t begin, int64_t end) {
  pool_rows<Isa::Avx512>(x, in, y, out, w, group, begin, end);
}
EMBER_TARGET_AVX2 void pool_avx2(const float* x, const PoolLayout& in, float* y,
                                 const PoolLayout& out, const PoolWindow& w, int64_t group,
                                 int64_t begin, int64_t end) {
  pool_rows<Isa::Avx2>(x, in, y, out, w, group, begin, end);
}
void pool_generic(const float* x, const PoolLayout& in, float* y, const PoolLayout& out,
                  const PoolWindow& w, int64_t group, int64_t begin, int64_t end) {
  pool_rows<Isa::Generic>(x, in, y, out, w, group, begin, end);
}

}  // namespace

void max_pool(const float* x, const PoolLayout& in, float* y, const PoolLayout& out,
              const PoolWindow& w, int threads) {
  // Channels that lie next to each other in both layouts are computed together.
  int64_t group = 1;
  const bool in_unit =
      (in.block > 1 && in.channel == 1) || (in.block == 1 && in.channel_block == 1);
  const bool out_unit =
      (out.block > 1 && out.channel == 1) || (out.block == 1 && out.channel_block == 1);
  if (in_unit && out_unit) {
    const int64_t run =
        std::min(in.block > 1 ? in.block : w.channels, out.block > 1 ? out.block : w.channels);
    group = run % 16 == 0 ? 16 : run % 8 == 0 ? 8 : 1;
    if (in.block > 1 && out.block > 1 && in.block != out.block) group = 1;
  }
  const int64_t rows = w.batch * ((w.channels + group - 1) / group) * w.out[0] * w.out[1];
  const int64_t taps = w.kernel[0] * w.kernel[1] * w.kernel[2];
  const int64_t work = rows * group * w.out[2] * taps;
  const CpuIsa isa = cpu_isa();
  split(rows, work, threads, [&](int64_t begin, int64_t end) {
    if (isa >= CpuIsa::Avx512) {
      pool_avx512(x, in, y, out, w, group, begin, end);
    } else if (isa >= CpuIsa::Avx2) {
      pool_avx2(x, in, y, out, w, group, begin, end);
    } else {
      pool_generic(x, in, y, out, w, group, begin, end);
    }
  });
}

}  // namespace ember::cpu
