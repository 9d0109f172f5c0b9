#include "runtime/kernels/portable/util/elementwise.h"

#include "runtime/kernels/portable/util/copy.h"

namespace ember {

Error broadcast_shape(std::span<const Tensor* const> ins, int32_t* sizes, int& rank) {
  rank = 0;
  for (const Tensor* t : ins) rank = t->dim() > rank ? t->dim() : rank;
  for (int d = 0; d < rank; ++d) sizes[d] = 1;
  for (const Tensor* t : ins) {
    for (int d = 0; d < rank; ++d) {
      const int dt = d - (rank - t->dim());
      if (dt < 0) continue;
      const int32_t s = t->size(dt);
      EMBER_CHECK(s == sizes[d] || s == 1 || sizes[d] == 1, Error::InvalidArgument,
                  "shapes do not broadcast: dim %d is %d in one operand and %d in another", d,
                  sizes[d], s);
      if (s != 1) sizes[d] = s;
    }
  }
  return Error::Ok;
}

Error resize_to_broadcast(std::span<const Tensor* const> ins, Tensor& out) {
  // Operands of one shape (the common case) give that shape with no broadcasting to work out.
  bool same = !ins.empty();
  for (const Tensor* t : ins) same = same && same_sizes(t->sizes(), ins[0]->sizes());
  int32_t sizes[kMaxRank];
  std::span<const int32_t> shape;
  if (same) {
    shape = ins[0]->sizes();
  } else {
    int n = 0;
    EMBER_TRY(broadcast_shape(ins, sizes, n));
    shape = {sizes, static_cast<size_t>(n)};
  }
  EMBER_CHECK(static_cast<size_t>(out.dim()) == shape.size(), Error::InvalidArgument,
              "out has rank %d; the broadcast result has rank %zu", out.dim(), shape.size());
  return out.resize(shape);
}

Error resize_to_broadcast(const Tensor& a, const Tensor& b, Tensor& out) {
  const Tensor* ins[] = {&a, &b};
  return resize_to_broadcast(ins, out);
}

void ScalarTensor::reset(const EValue& v) {
  ScalarType type = ScalarType::Bool;
  if (v.is_double()) {
    value_.d = v.to_double();
    type = ScalarType::Double;
  } else if (v.is_int()) {
    value_.i = v.to_int();
    type = ScalarType::Long;
  } else {
    value_.b = v.is_bool() && v.to_bool();
  }
  Result<Tensor> t = Tensor::make(type, {}, {}, &value_);
  if (t.ok()) tensor_ = *t;
}

Error check_accepts(const ElementwiseSpec& spec, ScalarType dtype) {
  const unsigned category = dtype == ScalarType::Bool   ? kAcceptBool
                            : dtype == ScalarType::Half ? kAcceptHalf
                            : is_floating(dtype)        ? kAcceptFloat
                                                        : kAcceptInt;
  EMBER_CHECK((spec.accepts & category) != 0, Error::InvalidArgument,
              "%s: not implemented for dtype %s", spec.name, to_string(dtype));
  return Error::Ok;
}

Error check_alpha(const char* op_name, ScalarType common, const EValue& alpha) {
  EMBER_CHECK(common != ScalarType::Bool || alpha.is_bool() ||
                  (alpha.is_int() && (alpha.to_int() == 0 || alpha.to_int() == 1)),
              Error::InvalidArgument, "%s: boolean alpha only for boolean tensors", op_name);
  EMBER_CHECK(is_floating(common) || !alpha.is_double(), Error::InvalidArgument,
              "%s: for integral input tensors, alpha must not be a floating point number", op_name);
  return Error::Ok;
}

Error check_nonzero_divisor(const char* op_name, const EValue& divisor) {
  bool zero = false;
  if (divisor.is_tensor()) {
    const Tensor& t = divisor.to_tensor();
    // Dense storage: every element lies in [0, numel) whatever the dim order.
    EMBER_SWITCH_ALL_TYPES(t.dtype(), CTYPE, (void)0, {
      const CTYPE* p = t.data<CTYPE>();
      for (int64_t i = 0; i < t.numel() && !zero; ++i) zero = static_cast<float>(p[i]) == 0.0f;
    });
  } else if (divisor.is_int()) {
    zero = divisor.to_int() == 0;
  } else if (divisor.is_bool()) {
    zero = !divisor.to_bool();
  } else if (divisor.is_double()) {
    zero = divisor.to_double() == 0.0;
  }
  EMBER_CHECK(!zero, Error::InvalidArgument, "%s: integer division by zero", op_name);
  return Error::Ok;
}

Error copy_out(ThreadPool* pool, const Tensor& in, Tensor& out, const char* op_name) {
  EMBER_CHECK(out.dim() == in.dim(), Error::InvalidArgument, "%s: out has rank %d, the input %d",
              op_name, out.dim(), in.dim());
  EMBER_TRY(out.resize(in.sizes()));
  if (in.dtype() == out.dtype()) {
    copy_tensor(in, out);  // by contiguous runs (util/copy.h), dim orders honoured
    return Error::Ok;
  }
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      out.dtype(), CTYPE,
      status = fail(Error::NotSupported, "%s: dtype %s", op_name, to_string(out.dtype())), {
        const LoadFn<CTYPE> load = load_fn<CTYPE>(in.dtype());
        EMBER_CHECK(load != nullptr, Error::NotSupported, "%s: dtype %s", op_name,
                    to_string(in.dtype()));
        const void* pi = in.data();
        CTYPE* po = out.data<CTYPE>();
        for_each_broadcast_n<1>({&in}, out, pool,
                                [&](const int64_t* i, int64_t o) { po[o] = load(pi, i[0]); });
      });
  return status;
}

Error wrap_dim(int64_t dim, int rank, const char* op_name, int& wrapped) {
  const int64_t r = rank == 0 ? 1 : rank;
  EMBER_CHECK(dim >= -r && dim < r, Error::InvalidArgument,
              "%s: dim %lld is out of range for a tensor of rank %d", op_name,
              static_cast<long long>(dim), rank);
  wrapped = static_cast<int>(dim < 0 ? dim + r : dim);
  return Error::Ok;
}

}  // namespace ember
