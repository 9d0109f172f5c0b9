// aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out)
// aten::scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out)
// aten::scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *, Tensor(a!) out)
// aten::scatter.reduce_out(Tensor self, int dim, Tensor index, Tensor src, *, str reduce,
// Tensor(a!) out) aten::scatter.value_reduce_out(Tensor self, int dim, Tensor index, Scalar value,
// *, str reduce, Tensor(a!) out) aten::scatter_add.out(Tensor self, int dim, Tensor index, Tensor
// src, *, Tensor(a!) out) int64 indices in [0, size) along dim; other dims of index no larger than
// self's (and src's).
#include <cstring>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {
namespace {

enum class Reduce { None, Add, Multiply };

// Calls f(index_offset_in_self_coords, linear index position) for every element of `index`:
// `self_at` is the element offset in `self` with the dim coordinate replaced by the index value,
// `at` the row-major position in index. Fails on an out-of-range index before calling f at all.
template <typename F>
Error for_each_index(const char* op, const Tensor& self, int64_t dim, const Tensor& index, F&& f) {
  const int64_t size = self.dim() == 0 ? 1 : self.size(static_cast<int>(dim));
  for (int64_t i = 0; i < index.numel(); ++i) {
    const int64_t k = index_value(index, i);
    EMBER_CHECK(k >= 0 && k < size, Error::InvalidArgument,
                "%s: index %lld is out of bounds for dimension %lld with size %lld", op,
                static_cast<long long>(k), static_cast<long long>(dim),
                static_cast<long long>(size));
  }
  int64_t idx[kMaxRank] = {};
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t self_at = 0;
    for (int d = 0; d < index.dim(); ++d) {
      self_at += (d == dim ? index_value(index, i) : idx[d]) * self.stride(d);
    }
    if (index.dim() == 0 && self.dim() == 1) self_at = index_value(index, i) * self.stride(0);
    f(self_at, idx, i);
    for (int d = index.dim() - 1; d >= 0; --d) {
      if (++idx[d] < index.size(d)) break;
      idx[d] = 0;
    }
  }
  return Error::Ok;
}

Error check_index(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor* src) {
  EMBER_CHECK(index.dtype() == ScalarType::Long, Error::InvalidArgument,
              "%s: Expected dtype int64 for index", op);
  EMBER_CHECK(index.dim() == self.dim() || (index.dim() <= 1 && self.dim() <= 1),
              Error::InvalidArgument,
              "%s: Index tensor must have the same number of dimensions as "
              "self tensor",
              op);
  for (int d = 0; d < index.dim(); ++d) {
    EMBER_CHECK(d == dim || self.dim() == 0 || index.size(d) <= self.size(d),
                Error::InvalidArgument,
                "%s: Size does not match at dimension %d: expected index "
                "[%d] to be smaller than self [%d] apart from dimension %lld",
                op, d, index.size(d), self.size(d), static_cast<long long>(dim));
    EMBER_CHECK(src == nullptr || src->dim() == 0 || index.size(d) <= src->size(d),
                Error::InvalidArgument,
                "%s: Expected index [%d] to be smaller than src [%d] at "
                "dimension %d",
                op, index.size(d), src->size(d), d);
  }
  EMBER_CHECK(src == nullptr || src->dtype() == self.dtype(), Error::InvalidArgument,
              "%s: Expected self.dtype to be equal to src.dtype", op);
  return Error::Ok;
}

Error scatter(const char* op, std::span<EValue*> args, const Tensor* src, const EValue* value,
              Reduce reduce, Tensor& out) {
  const Tensor& self = args[0]->to_tensor();
  const Tensor& index = args[2]->to_tensor();
  int64_t dim = 0;
  EMBER_TRY(wrap_dim(op, args[1]->to_int(), self.dim(), &dim));
  EMBER_TRY(check_index(op, self, dim, index, src));
  EMBER_CHECK(out.dtype() == self.dtype() && out.dim() == self.dim(), Error::InvalidArgument,
              "%s: out must have self's dtype and rank", op);
  EMBER_TRY(out.resize(self.sizes()));
  // Validate every index before writing anything.
  EMBER_TRY(for_each_index(op, self, dim, index, [](int64_t, const int64_t*, int64_t) {}));
  copy_tensor(self, out);
  // out may have another dim order than self: go through out's strides.
  EMBER_SWITCH_ALL_TYPES(self.dtype(), T, (void)0, {
    T* po = out.data<T>();
    const T fill = value == nullptr ? T() : scalar_to<T>(*value);
    (void)for_each_index(op, self, dim, index, [&](int64_t, const int64_t* idx, int64_t i) {
      int64_t o = 0, s = 0;
      for (int d = 0; d < index.dim(); ++d) {
        o += (d == dim ? index_value(index, i) : idx[d]) * out.stride(d);
        if (src != nullptr && src->dim() > 0) s += idx[d] * src->stride(d);
      }
      if (index.dim() == 0 && out.dim() == 1) o = index_value(index, i) * out.stride(0);
      const T v = src == nullptr ? fill : src->data<T>()[s];
      if (reduce == Reduce::Add) {
        po[o] = convert<T>(convert<compute_type_t<T>>(po[o]) + convert<compute_type_t<T>>(v));
      } else if (reduce == Reduce::Multiply) {
        po[o] = convert<T>(convert<compute_type_t<T>>(po[o]) * convert<compute_type_t<T>>(v));
      } else {
        po[o] = v;
      }
    });
  });
  return Error::Ok;
}

Error parse_reduce(const char* op, const EValue& e, Reduce* r) {
  const std::string_view s = e.to_string();
  if (s == "add") {
    *r = Reduce::Add;
  } else if (s == "multiply") {
    *r = Reduce::Multiply;
  } else {
    return fail(Error::InvalidArgument, "%s: reduce argument must be either add or multiply", op);
  }
  return Error::Ok;
}

}  // namespace

Error gather_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  const char* op = "gather";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& index = args[2]->to_tensor();
  Tensor& out = args[4]->to_tensor();
  int64_t dim = 0;
  EMBER_TRY(wrap_dim(op, args[1]->to_int(), self.dim(), &dim));
  EMBER_TRY(check_index(op, self, dim, index, nullptr));
  EMBER_CHECK(out.dtype() == self.dtype() && out.dim() == index.dim(), Error::InvalidArgument,
              "%s: out must have self's dtype and index's rank", op);
  EMBER_TRY(out.resize(index.sizes()));
  const size_t es = self.element_size();
  const auto* ps = static_cast<const uint8_t*>(self.data());
  auto* po = static_cast<uint8_t*>(out.mutable_data());
  return for_each_index(op, self, dim, index, [&](int64_t self_at, const int64_t*, int64_t i) {
    std::memcpy(po + offset_of(out, i) * static_cast<int64_t>(es),
                ps + self_at * static_cast<int64_t>(es), es);
  });
}

Error scatter_src_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return scatter("scatter", args, &args[3]->to_tensor(), nullptr, Reduce::None,
                 args[4]->to_tensor());
}

Error scatter_value_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return scatter("scatter", args, nullptr, args[3], Reduce::None, args[4]->to_tensor());
}

Error scatter_reduce_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  Reduce r = Reduce::None;
  EMBER_TRY(parse_reduce("scatter", *args[4], &r));
  return scatter("scatter", args, &args[3]->to_tensor(), nullptr, r, args[5]->to_tensor());
}

Error scatter_value_reduce_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  Reduce r = Reduce::None;
  EMBER_TRY(parse_reduce("scatter", *args[4], &r));
  return scatter("scatter", args, nullptr, args[3], r, args[5]->to_tensor());
}

Error scatter_add_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return scatter("scatter_add", args, &args[3]->to_tensor(), nullptr, Reduce::Add,
                 args[4]->to_tensor());
}

}  // namespace ember
