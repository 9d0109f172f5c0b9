// ATen's advanced indexing (contract C27), shared by index.Tensor and index_put.
//
//   AdvancedIndex ix;
//   EMBER_TRY(AdvancedIndex::parse("index", self, indices, &ix));  // shapes, masks, bounds
//   EMBER_TRY(out.resize(ix.result_sizes()));
//   ix.for_each([&](const int64_t* self_coords, int64_t i) { ... });  // i: row-major in result
//   ix.for_each_row([&](const int64_t* self_coords, int64_t i, int64_t len) { ... });  // runs
//
// `indices` is an optional-tensor list: None keeps a dim whole; an int32/int64 tensor picks along
// one dim (negative values wrap); a bool/uint8 mask of k dims stands for its nonzero() split into k
// index tensors and must match the shape of the dims it covers. Index tensors broadcast together;
// adjacent advanced indices put the broadcast dims in their place, separated ones put them first.
// Every index is checked against its dim before any element is visited. No memory is allocated:
// the n-th nonzero of a mask is found with a forward-moving cursor.
#pragma once

#include <span>

#include "runtime/core/tensor.h"

namespace ember {

class AdvancedIndex {
 public:
  static Error parse(const char* op, const Tensor& self, std::span<Tensor* const> indices,
                     AdvancedIndex* out);

  // The shape of the indexing result.
  std::span<const int32_t> result_sizes() const { return {sizes_, static_cast<size_t>(dim_)}; }
  int64_t result_numel() const;

  // Calls f(self_coords, i) for each element of the result in row-major order, with the coordinates
  // in self that the element reads (or, for index_put, writes).
  template <typename F>
  void for_each(F&& f) {
    const int64_t n = result_numel();
    int64_t idx[kMaxRank] = {}, coords[kMaxRank] = {};
    for (int64_t i = 0; i < n; ++i) {
      self_coords(idx, coords);
      f(static_cast<const int64_t*>(coords), i);
      for (int d = dim_ - 1; d >= 0; --d) {
        if (++idx[d] < sizes_[d]) break;
        idx[d] = 0;
      }
    }
  }

  // The self dim the result's last dim walks (a dim no index covers), or -1 when the result's
  // last dim comes from the indices or the result has no dims.
  int last_self_dim() const { return dim_ > 0 && out_b_[dim_ - 1] < 0 ? out_self_[dim_ - 1] : -1; }

  // for_each a row at a time, when last_self_dim() >= 0: f(self_coords, i, len) for each run of
  // the result's last dim, with the coordinates of its first element (along the run the
  // coordinate of last_self_dim() counts up from 0), the row-major index of that element in the
  // result and the run's length.
  template <typename F>
  void for_each_row(F&& f) {
    const int64_t n = result_numel();
    if (n == 0 || last_self_dim() < 0) return;
    const int64_t len = sizes_[dim_ - 1];
    int64_t idx[kMaxRank] = {}, coords[kMaxRank] = {};
    for (int64_t i = 0; i < n; i += len) {
      self_coords(idx, coords);
      f(static_cast<const int64_t*>(coords), i, len);
      for (int d = dim_ - 2; d >= 0; --d) {
        if (++idx[d] < sizes_[d]) break;
        idx[d] = 0;
      }
    }
  }

 private:
  struct Entry {
    const Tensor* tensor;
    bool mask;
    int first_dim;                          // the self dim it starts at
    int ndims;                              // self dims it covers (mask rank, or 1)
    int64_t nnz;                            // masks: number of true elements
    int64_t cursor_n = -1, cursor_at = -1;  // masks: the cursor_n-th true element is at cursor_at
  };
  void self_coords(const int64_t* idx, int64_t* coords);
  int64_t mask_position(Entry& e, int64_t n);

  const Tensor* self_ = nullptr;
  Entry entries_[kMaxRank] = {};
  int num_entries_ = 0;
  int bdim_ = 0;
  int64_t bsizes_[kMaxRank] = {};
  int dim_ = 0;
  int32_t sizes_[kMaxRank] = {};
  // Result dim d is self dim out_self_[d] (a whole dim), or broadcast dim out_b_[d] when that is >=
  // 0.
  int out_self_[kMaxRank] = {};
  int out_b_[kMaxRank] = {};
};

}  // namespace ember
