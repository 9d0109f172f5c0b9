#include "runtime/kernels/portable/util/advanced_index.h"

#include "runtime/kernels/portable/util/copy.h"

namespace ember {
namespace {

bool is_mask(ScalarType t) { return t == ScalarType::Bool || t == ScalarType::Byte; }

bool mask_at(const Tensor& m, int64_t linear) {
  return static_cast<const uint8_t*>(m.data())[offset_of(m, linear)] != 0;
}

}  // namespace

Error AdvancedIndex::parse(const char* op, const Tensor& self, std::span<Tensor* const> indices,
                           AdvancedIndex* ix) {
  *ix = AdvancedIndex();
  ix->self_ = &self;
  int dim = 0, first_adv = -1, last_adv = -1, pos = 0;
  bool gap = false;
  for (Tensor* t : indices) {
    if (t == nullptr) {
      ++dim;
      if (first_adv >= 0) gap = true;
      ++pos;
      continue;
    }
    if (last_adv >= 0 && gap) last_adv = -2;  // a None between advanced indices
    Entry e{t, is_mask(t->dtype()), dim, 1, 0};
    EMBER_CHECK(e.mask || is_index_dtype(t->dtype()), Error::InvalidArgument,
                "%s: tensors used as indices must be long, int, byte or bool tensors, got %s", op,
                to_string(t->dtype()));
    if (e.mask) {
      e.ndims = t->dim() == 0 ? 0 : t->dim();
      EMBER_CHECK(dim + e.ndims <= self.dim(), Error::InvalidArgument,
                  "%s: too many indices for tensor of dimension %d", op, self.dim());
      for (int k = 0; k < t->dim(); ++k) {
        EMBER_CHECK(t->size(k) == self.size(dim + k), Error::InvalidArgument,
                    "%s: the shape of the mask [%d] at index %d does not match the shape of the "
                    "indexed tensor [%d] at index %d",
                    op, t->size(k), k, self.size(dim + k), dim + k);
      }
      EMBER_CHECK(t->dim() > 0, Error::NotSupported, "%s: 0-d boolean masks are not supported", op);
      for (int64_t i = 0; i < t->numel(); ++i) e.nnz += mask_at(*t, i) ? 1 : 0;
    } else {
      EMBER_CHECK(dim < self.dim(), Error::InvalidArgument,
                  "%s: too many indices for tensor of dimension %d", op, self.dim());
    }
    if (first_adv < 0) first_adv = pos;
    if (last_adv != -2) last_adv = pos;
    dim += e.ndims;
    ix->entries_[ix->num_entries_++] = e;
    ++pos;
  }
  const bool adjacent = last_adv != -2;
  // Broadcast the index shapes (a mask counts as 1-D of length nnz), right-aligned.
  for (int k = 0; k < ix->num_entries_; ++k) {
    const Entry& e = ix->entries_[k];
    const int r = e.mask ? 1 : e.tensor->dim();
    if (r > ix->bdim_) {
      for (int j = ix->bdim_ - 1; j >= 0; --j) ix->bsizes_[j + r - ix->bdim_] = ix->bsizes_[j];
      for (int j = 0; j < r - ix->bdim_; ++j) ix->bsizes_[j] = 1;
      ix->bdim_ = r;
    }
    for (int j = 0; j < r; ++j) {
      const int64_t s = e.mask ? e.nnz : e.tensor->size(j);
      int64_t& b = ix->bsizes_[ix->bdim_ - r + j];
      EMBER_CHECK(s == b || s == 1 || b == 1, Error::InvalidArgument,
                  "%s: shape mismatch: indexing tensors could not be broadcast together", op);
      if (b == 1) b = s;
    }
  }
  // Check every integer index against its dim (when any element is read at all).
  int64_t bnumel = 1;
  for (int j = 0; j < ix->bdim_; ++j) bnumel *= ix->bsizes_[j];
  for (int k = 0; k < ix->num_entries_ && bnumel > 0; ++k) {
    const Entry& e = ix->entries_[k];
    if (e.mask) continue;
    const int64_t size = self.size(e.first_dim);
    for (int64_t i = 0; i < e.tensor->numel(); ++i) {
      const int64_t v = index_value(*e.tensor, i);
      EMBER_CHECK(v >= -size && v < size, Error::InvalidArgument,
                  "%s: index %lld is out of bounds for dimension %d with size %lld", op,
                  static_cast<long long>(v), e.first_dim, static_cast<long long>(size));
    }
  }
  // The result's dims.
  const int adv_start = ix->num_entries_ > 0 ? ix->entries_[0].first_dim : 0;
  bool covered[kMaxRank] = {};
  for (int k = 0; k < ix->num_entries_; ++k) {
    for (int j = 0; j < ix->entries_[k].ndims; ++j) covered[ix->entries_[k].first_dim + j] = true;
  }
  const auto add_b = [&]() {
    for (int j = 0; j < ix->bdim_; ++j) {
      ix->out_b_[ix->dim_] = j;
      ix->out_self_[ix->dim_] = -1;
      ix->sizes_[ix->dim_++] = static_cast<int32_t>(ix->bsizes_[j]);
    }
  };
  EMBER_CHECK(self.dim() - dim + ix->bdim_ <= kMaxRank, Error::InvalidArgument,
              "%s: the result would have more than %d dims", op, kMaxRank);
  if (ix->num_entries_ > 0 && !adjacent) add_b();
  for (int d = 0; d < self.dim(); ++d) {
    if (ix->num_entries_ > 0 && adjacent && d == adv_start) add_b();
    if (covered[d]) continue;
    ix->out_b_[ix->dim_] = -1;
    ix->out_self_[ix->dim_] = d;
    ix->sizes_[ix->dim_++] = self.size(d);
  }
  if (ix->num_entries_ > 0 && adjacent && adv_start == self.dim()) add_b();
  return Error::Ok;
}

int64_t AdvancedIndex::result_numel() const {
  int64_t n = 1;
  for (int d = 0; d < dim_; ++d) n *= sizes_[d];
  return n;
}

int64_t AdvancedIndex::mask_position(Entry& e, int64_t n) {
  if (n < e.cursor_n) e.cursor_n = -1, e.cursor_at = -1;
  while (e.cursor_n < n) {
    ++e.cursor_at;
    if (mask_at(*e.tensor, e.cursor_at)) ++e.cursor_n;
  }
  return e.cursor_at;
}

void AdvancedIndex::self_coords(const int64_t* idx, int64_t* coords) {
  int64_t b[kMaxRank] = {};
  for (int d = 0; d < dim_; ++d) {
    if (out_b_[d] >= 0) {
      b[out_b_[d]] = idx[d];
    } else {
      coords[out_self_[d]] = idx[d];
    }
  }
  for (int k = 0; k < num_entries_; ++k) {
    Entry& e = entries_[k];
    if (e.mask) {
      const int64_t n = e.nnz == 1 ? 0 : b[bdim_ - 1];
      int64_t at = mask_position(e, n);
      for (int j = e.ndims - 1; j >= 0; --j) {
        const int64_t s = e.tensor->size(j);
        coords[e.first_dim + j] = at % s;
        at /= s;
      }
      continue;
    }
    const Tensor& t = *e.tensor;
    int64_t off = 0;
    for (int j = 0; j < t.dim(); ++j) {
      if (t.size(j) != 1) off += b[bdim_ - t.dim() + j] * t.stride(j);
    }
    const int64_t v =
        t.dtype() == ScalarType::Long ? t.data<int64_t>()[off] : t.data<int32_t>()[off];
    const int64_t size = self_->size(e.first_dim);
    coords[e.first_dim] = v < 0 ? v + size : v;
  }
}

}  // namespace ember
