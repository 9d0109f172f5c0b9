// The pre-packed front-end of Ember's one GEMM library (ember_gemm): the right-hand matrix packed
// once (a layer's weight), the left read in place, a fused epilogue. The cpu backend's own kernels
// (pointwise convolutions, the inverted residual block, matrix-vector and linear steps) use it.
//
//   PackedMatrix b = PackedMatrix::pack(w, bias, k, n);     // w: [n][k], PyTorch's [out][in]
//   gemm(m, b, a, lda, residual_or_null, ldr, c, ldc, clamp);   // c = clamp(a b + bias (+ r))
//
// B is stored in panels of at most 4 groups of 16 columns (64 columns), each [k][16 nv]
// contiguous, so the k loop streams through memory: what matters where B is read once per call
// (a matrix-vector product streams the whole weight from DRAM; oneDNN 2.6's matmul reaches half
// this kernel's bandwidth there). The register tile is the one gemm.h's front-end runs
// (tile.inc): up to 12 rows x 4 vectors on AVX-512, 6 rows x 2 vectors on AVX2 and on the generic
// (16-byte) variant; the columns past n are neither read nor written. The variant is gemm_isa()'s
// (gemm.h). A k over 768 is summed in chunks of 512, the partial sums kept in C (the same
// additions in the same order: the same bits), so that B's chunk stays in cache for all the row
// tiles; the first tile of a chunk fetches B's rows ahead of itself. Nothing here allocates but
// pack() (from the storage it is given, or the heap); the calls are thread-safe on distinct C
// rows or unit ranges.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <vector>

namespace ember {

// Storage aligned to a cache line: a 512-bit load that straddles two lines costs about twice one
// that does not (the cpu backend's depthwise pass measured 1.9 against 3.6 cycles an FMA at
// stride 2).
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  bool operator==(const CacheLineAllocator&) const { return true; }
};
using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

// An activation that is a clamp: relu [0, inf), relu6/hardtanh [lo, hi], none (-inf, inf). NaN
// passes through as NaN, as in PyTorch.
struct Clamp {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

// Where a packer puts its arrays: `bytes` starting on a cache line, kept alive by the pointer
// returned as long as it is held (it may own nothing: a runtime's method allocator keeps the
// bytes). Empty: the heap.
using Storage = std::function<std::shared_ptr<void>(size_t bytes)>;
// `bytes` from `storage`, or from the heap (on a cache line) where it is empty; null where the
// storage gave none.
std::shared_ptr<void> take_storage(size_t bytes, const Storage& storage);

// An array in a packer's storage (ember::Storage; the heap where none is given), read as a
// vector is.
template <typename T>
class Stored {
 public:
  Stored() = default;
  // n values `fill`; null data (size 0) where the storage gave none.
  Stored(size_t n, const Storage& storage, T fill) : owner_(take_storage(n * sizeof(T), storage)) {
    if (owner_ == nullptr) return;
    p_ = static_cast<T*>(owner_.get());
    n_ = n;
    std::fill(p_, p_ + n, fill);
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  std::shared_ptr<void> owner_;
  T* p_ = nullptr;
  size_t n_ = 0;
};

struct PackedMatrix {
  // The column group of the panels: a 512-bit vector, two 256-bit ones, four 128-bit ones.
  static constexpr int64_t kGroup = 16;
  struct Panel {
    int64_t n0, nv, offset;  // first column, groups of kGroup columns, offset in data
  };
  int64_t k = 0, n = 0;
  const float* data = nullptr;  // each panel starts on a cache line (a multiple of 16 floats)
  const float* bias = nullptr;  // [n rounded up to kGroup], zero-padded
  std::vector<Panel> panels;
  std::shared_ptr<void> storage;  // what holds data and bias

  // w: [n][k] dense (a 1x1 convolution's or a linear layer's weight); bias: [n] or null. The
  // result holds copies of both, in `storage`; where that gives null, the result is empty
  // (data null, no panels).
  static PackedMatrix pack(const float* w, const float* bias, int64_t k, int64_t n,
                           const Storage& storage = {});
  // The bytes pack() takes for a [n][k] weight.
  static size_t storage_bytes(int64_t k, int64_t n);
};

// The work of a gemm of m rows by `b` in units, a tile of rows of one panel each, panel by
// panel (one row: one unit a panel). Threads split [0, gemm_units(m, b)); the count depends on
// the ISA variant (its tile's rows).
int64_t gemm_units(int64_t m, const PackedMatrix& b);

// C[m][n] = clamp(bias + A B (+ R)) for the units [unit_begin, unit_end) (all by default):
// A [m][k] (lda), C and R [m][n] with strides ldc and ldr; R may be null, and may be C.
void gemm(int64_t m, const PackedMatrix& b, const float* a, int64_t lda, const float* r,
          int64_t ldr, float* c, int64_t ldc, Clamp act, int64_t unit_begin = 0,
          int64_t unit_end = std::numeric_limits<int64_t>::max());

// The same over a gathered A, read in place: row i, column kk at a[i * lda + k_offsets[kk]] (a
// convolution's patches without an im2col copy: lda the stride between output pixels,
// k_offsets[kk] where tap kk of the first pixel's window is). No residual; all units.
void gemm_gathered(int64_t m, const PackedMatrix& b, const float* a, int64_t lda,
                   const int32_t* k_offsets, float* c, int64_t ldc, Clamp act);

}  // namespace ember
