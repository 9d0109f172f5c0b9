#include "runtime/kernels/prim/prim_ops.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/kernels/portable/util/elementwise.h"

namespace ember {
namespace {

// A Python number: an int (bools count as ints, as in Python) or a float.
struct Num {
  bool is_int = true;
  int64_t i = 0;
  double d = 0;
  double as_double() const { return is_int ? static_cast<double>(i) : d; }
};

Num int_num(int64_t v) { return Num{true, v, 0}; }
Num float_num(double v) { return Num{false, 0, v}; }

Num read(const EValue& v) {
  if (v.is_double()) return float_num(v.to_double());
  if (v.is_int()) return int_num(v.to_int());
  return int_num(v.to_bool() ? 1 : 0);
}

// -2^63 <= v < 2^63, so the conversion to int64 is defined.
bool fits_int64(double v) { return v >= -9223372036854775808.0 && v < 9223372036854775808.0; }

// Stores `r` in the kind the program declared for `out` (checked at load as a Scalar).
Error write(const char* op, EValue& out, Num r) {
  if (out.is_double()) {
    out = EValue::from_double(r.as_double());
  } else if (out.is_bool()) {
    out = EValue::from_bool(r.is_int ? r.i != 0 : r.d != 0);
  } else if (out.is_int()) {
    if (!r.is_int) {
      EMBER_CHECK(std::isfinite(r.d) && std::trunc(r.d) == r.d && fits_int64(r.d),
                  Error::InvalidArgument,
                  "%s: result %g does not fit the int value the program declared for it", op, r.d);
      r = int_num(static_cast<int64_t>(r.d));
    }
    out = EValue::from_int(r.i);
  } else {
    return fail(Error::InvalidArgument, "%s: the result value is not a scalar", op);
  }
  return Error::Ok;
}

// Python's floor division and modulo on ints (the result of // rounds toward -inf; % takes the
// divisor's sign).
Error int_floordiv(const char* op, int64_t a, int64_t b, int64_t* q) {
  EMBER_CHECK(b != 0, Error::InvalidArgument, "%s: integer division by zero", op);
  EMBER_CHECK(!(a == std::numeric_limits<int64_t>::min() && b == -1), Error::InvalidArgument,
              "%s: integer overflow", op);
  int64_t r = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --r;
  *q = r;
  return Error::Ok;
}
Error int_mod(const char* op, int64_t a, int64_t b, int64_t* m) {
  EMBER_CHECK(b != 0, Error::InvalidArgument, "%s: integer modulo by zero", op);
  if (b == -1) {  // a % -1 is 0; INT64_MIN % -1 would trap
    *m = 0;
    return Error::Ok;
  }
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  *m = r;
  return Error::Ok;
}
double float_floordiv(double a, double b) { return std::floor(a / b); }
double float_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

enum class BinOp { Add, Sub, Mul, FloorDiv, TrueDiv, Mod, Max, Min };

Error binary(const char* op, BinOp kind, std::span<EValue*> args) {
  const Num a = read(*args[0]);
  const Num b = read(*args[1]);
  EValue& out = *args[2];
  if (kind == BinOp::TrueDiv) {
    EMBER_CHECK(b.as_double() != 0, Error::InvalidArgument, "%s: division by zero", op);
    return write(op, out, float_num(a.as_double() / b.as_double()));
  }
  if (a.is_int && b.is_int) {
    int64_t r = 0;
    bool overflow = false;
    switch (kind) {
      case BinOp::Add:
        overflow = __builtin_add_overflow(a.i, b.i, &r);
        break;
      case BinOp::Sub:
        overflow = __builtin_sub_overflow(a.i, b.i, &r);
        break;
      case BinOp::Mul:
        overflow = __builtin_mul_overflow(a.i, b.i, &r);
        break;
      case BinOp::FloorDiv:
        EMBER_TRY(int_floordiv(op, a.i, b.i, &r));
        break;
      case BinOp::Mod:
        EMBER_TRY(int_mod(op, a.i, b.i, &r));
        break;
      case BinOp::Max:
        r = a.i > b.i ? a.i : b.i;
        break;
      case BinOp::Min:
        r = a.i < b.i ? a.i : b.i;
        break;
      case BinOp::TrueDiv:
        break;
    }
    EMBER_CHECK(!overflow, Error::InvalidArgument, "%s: integer overflow", op);
    return write(op, out, int_num(r));
  }
  const double x = a.as_double(), y = b.as_double();
  double r = 0;
  switch (kind) {
    case BinOp::Add:
      r = x + y;
      break;
    case BinOp::Sub:
      r = x - y;
      break;
    case BinOp::Mul:
      r = x * y;
      break;
    case BinOp::FloorDiv:
      EMBER_CHECK(y != 0, Error::InvalidArgument, "%s: division by zero", op);
      r = float_floordiv(x, y);
      break;
    case BinOp::Mod:
      EMBER_CHECK(y != 0, Error::InvalidArgument, "%s: modulo by zero", op);
      r = float_mod(x, y);
      break;
    case BinOp::Max:
      r = x > y ? x : y;
      break;
    case BinOp::Min:
      r = x < y ? x : y;
      break;
    case BinOp::TrueDiv:
      break;
  }
  return write(op, out, float_num(r));
}

enum class CmpOp { Eq, Gt, Lt, Ge, Le };

Error compare(const char* op, CmpOp kind, std::span<EValue*> args) {
  const Num a = read(*args[0]);
  const Num b = read(*args[1]);
  bool r = false;
  if (a.is_int && b.is_int) {
    const int64_t x = a.i, y = b.i;
    r = kind == CmpOp::Eq   ? x == y
        : kind == CmpOp::Gt ? x > y
        : kind == CmpOp::Lt ? x < y
        : kind == CmpOp::Ge ? x >= y
                            : x <= y;
  } else {
    const double x = a.as_double(), y = b.as_double();
    r = kind == CmpOp::Eq   ? x == y
        : kind == CmpOp::Gt ? x > y
        : kind == CmpOp::Lt ? x < y
        : kind == CmpOp::Ge ? x >= y
                            : x <= y;
  }
  return write(op, *args[2], int_num(r ? 1 : 0));
}

// A float rounded by `f` (floor, ceil, nearbyint, trunc) to a Python int.
Error to_int(const char* op, double v, double (*f)(double), EValue& out) {
  const double r = f(v);
  EMBER_CHECK(std::isfinite(r) && fits_int64(r), Error::InvalidArgument,
              "%s: %g cannot be converted to an int", op, v);
  return write(op, out, int_num(static_cast<int64_t>(r)));
}

#define EMBER_PRIM_BINARY(fn, name, kind) \
  Error fn(KernelContext&, std::span<EValue*> args) { return binary(name, BinOp::kind, args); }
EMBER_PRIM_BINARY(prim_add, "executorch_prim::add.Scalar", Add)
EMBER_PRIM_BINARY(prim_sub, "executorch_prim::sub.Scalar", Sub)
EMBER_PRIM_BINARY(prim_mul, "executorch_prim::mul.Scalar", Mul)
EMBER_PRIM_BINARY(prim_floordiv, "executorch_prim::floordiv.Scalar", FloorDiv)
EMBER_PRIM_BINARY(prim_floordiv_int, "executorch_prim::floordiv.int", FloorDiv)
EMBER_PRIM_BINARY(prim_truediv, "executorch_prim::truediv.Scalar", TrueDiv)
EMBER_PRIM_BINARY(prim_mod, "executorch_prim::mod.Scalar", Mod)
EMBER_PRIM_BINARY(prim_mod_int, "executorch_prim::mod.int", Mod)
EMBER_PRIM_BINARY(prim_max, "executorch_prim::sym_max.Scalar", Max)
EMBER_PRIM_BINARY(prim_min, "executorch_prim::sym_min.Scalar", Min)
#undef EMBER_PRIM_BINARY

#define EMBER_PRIM_COMPARE(fn, name, kind) \
  Error fn(KernelContext&, std::span<EValue*> args) { return compare(name, CmpOp::kind, args); }
EMBER_PRIM_COMPARE(prim_eq, "executorch_prim::eq.Scalar", Eq)
EMBER_PRIM_COMPARE(prim_gt, "executorch_prim::gt.Scalar", Gt)
EMBER_PRIM_COMPARE(prim_lt, "executorch_prim::lt.Scalar", Lt)
EMBER_PRIM_COMPARE(prim_ge, "executorch_prim::ge.Scalar", Ge)
EMBER_PRIM_COMPARE(prim_le, "executorch_prim::le.Scalar", Le)
#undef EMBER_PRIM_COMPARE

Error prim_neg(KernelContext&, std::span<EValue*> args) {
  const char* op = "executorch_prim::neg.Scalar";
  const Num a = read(*args[0]);
  if (!a.is_int) return write(op, *args[1], float_num(-a.d));
  EMBER_CHECK(a.i != std::numeric_limits<int64_t>::min(), Error::InvalidArgument,
              "%s: integer overflow", op);
  return write(op, *args[1], int_num(-a.i));
}

Error prim_sym_not(KernelContext&, std::span<EValue*> args) {
  const Num a = read(*args[0]);
  const bool truth = a.is_int ? a.i != 0 : a.d != 0;
  return write("executorch_prim::sym_not.Scalar", *args[1], int_num(truth ? 0 : 1));
}

Error prim_sym_float(KernelContext&, std::span<EValue*> args) {
  return write("executorch_prim::sym_float.Scalar", *args[1],
               float_num(read(*args[0]).as_double()));
}

// Python's int(), math.ceil(), round() and math.trunc() of a number, each an int.
#define EMBER_PRIM_TO_INT(fn, name, rounding)                       \
  Error fn(KernelContext&, std::span<EValue*> args) {               \
    const Num a = read(*args[0]);                                   \
    if (a.is_int) return write(name, *args[1], a);                  \
    return to_int(                                                  \
        name, a.d, [](double v) { return rounding(v); }, *args[1]); \
  }
EMBER_PRIM_TO_INT(prim_sym_int, "executorch_prim::sym_int.Scalar", std::trunc)
EMBER_PRIM_TO_INT(prim_trunc, "executorch_prim::trunc.Scalar", std::trunc)
EMBER_PRIM_TO_INT(prim_ceil, "executorch_prim::ceil.Scalar", std::ceil)
// nearbyint in the default rounding mode rounds half to even, as Python's round() does.
EMBER_PRIM_TO_INT(prim_round, "executorch_prim::round.Scalar", std::nearbyint)
#undef EMBER_PRIM_TO_INT

Error prim_sym_ite(KernelContext&, std::span<EValue*> args) {
  const Num b = read(*args[0]);
  const bool truth = b.is_int ? b.i != 0 : b.d != 0;
  return write("executorch_prim::sym_ite.Scalar", *args[3], read(truth ? *args[1] : *args[2]));
}

Error sym_size_int(KernelContext&, std::span<EValue*> args) {
  const Tensor& self = args[0]->to_tensor();
  int64_t dim = args[1]->to_int();
  const int64_t rank = self.dim();
  if (dim < 0) dim += rank;
  EMBER_CHECK(dim >= 0 && dim < rank, Error::InvalidArgument,
              "aten::sym_size.int: dim %lld is out of range for a tensor of rank %lld",
              static_cast<long long>(args[1]->to_int()), static_cast<long long>(rank));
  return write("aten::sym_size.int", *args[2], int_num(self.sizes()[static_cast<size_t>(dim)]));
}

Error sym_numel(KernelContext&, std::span<EValue*> args) {
  return write("aten::sym_numel", *args[1], int_num(args[0]->to_tensor().numel()));
}

Error local_scalar_dense(KernelContext&, std::span<EValue*> args) {
  const char* op = "aten::_local_scalar_dense";
  const Tensor& self = args[0]->to_tensor();
  EMBER_CHECK(self.numel() == 1, Error::InvalidArgument,
              "%s: a tensor with %lld elements cannot be converted to a scalar", op,
              static_cast<long long>(self.numel()));
  EMBER_CHECK(self.data<uint8_t>() != nullptr, Error::InvalidArgument, "%s: tensor has no data",
              op);
  Num r;
  bool ok = true;
  EMBER_SWITCH_ALL_TYPES(self.dtype(), T, ok = false, {
    const T v = self.data<T>()[0];
    if constexpr (std::is_same_v<T, bool>) {
      r = int_num(v ? 1 : 0);
    } else if constexpr (std::is_integral_v<T>) {
      r = int_num(static_cast<int64_t>(v));
    } else if constexpr (std::is_same_v<T, double>) {
      r = float_num(v);
    } else {
      r = float_num(static_cast<double>(convert<float>(v)));
    }
  });
  EMBER_CHECK(ok, Error::InvalidArgument, "%s: unsupported dtype", op);
  return write(op, *args[1], r);
}

// executorch_prim::et_view.default(self, size, out): out becomes a view of self's storage with
// the given sizes, no copy (the compiler emits it for a view of a contiguous tensor; out has no
// memory of its own). Both in the default dim order, the same dtype and element count. One size
// may be -1, inferred from the others (ATen's view; ExecuTorch's exporter writes it).
Error et_view(KernelContext&, std::span<EValue*> args) {
  const char* op = "executorch_prim::et_view.default";
  const Tensor& self = args[0]->to_tensor();
  const std::span<const int64_t> size = args[1]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  EMBER_CHECK(out.dtype() == self.dtype(), Error::InvalidArgument, "%s: out has dtype %s, self %s",
              op, to_string(out.dtype()), to_string(self.dtype()));
  EMBER_CHECK(self.is_contiguous() && static_cast<int>(size.size()) == out.dim() &&
                  size.size() <= static_cast<size_t>(kMaxRank),
              Error::InvalidArgument, "%s: self is not contiguous, or the size is not out's rank",
              op);
  int32_t sizes[kMaxRank] = {};
  int64_t numel = 1;
  int inferred = -1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == -1 && inferred < 0) {
      inferred = static_cast<int>(d);
      continue;
    }
    EMBER_CHECK(size[d] >= 0 && size[d] <= std::numeric_limits<int32_t>::max(),
                Error::InvalidArgument, "%s: size %lld", op, static_cast<long long>(size[d]));
    sizes[d] = static_cast<int32_t>(size[d]);
    EMBER_CHECK(!__builtin_mul_overflow(numel, size[d], &numel), Error::InvalidArgument,
                "%s: the size's element count overflows", op);
  }
  if (inferred >= 0) {
    EMBER_CHECK(numel > 0 && self.numel() % numel == 0 &&
                    self.numel() / numel <= std::numeric_limits<int32_t>::max(),
                Error::InvalidArgument, "%s: cannot infer the -1 size of a view of %lld elements",
                op, static_cast<long long>(self.numel()));
    sizes[inferred] = static_cast<int32_t>(self.numel() / numel);
    numel = self.numel();
  }
  EMBER_CHECK(numel == self.numel(), Error::InvalidArgument, "%s: a view of %lld elements as %lld",
              op, static_cast<long long>(self.numel()), static_cast<long long>(numel));
  EMBER_TRY(out.resize({sizes, size.size()}));
  EMBER_CHECK(out.is_contiguous(), Error::InvalidArgument, "%s: out is not contiguous", op);
  out.set_data(self.mutable_data());
  return Error::Ok;
}

// Signature letters (kernel_registry.h): the result is one more `s` (or `i` for sizes).
const Kernel kPrimKernels[] = {
    {"executorch_prim::et_view.default", et_view, "tlt"},
    {"aten::sym_size.int", sym_size_int, "tii"},
    {"aten::sym_numel", sym_numel, "ti"},
    {"aten::_local_scalar_dense", local_scalar_dense, "ts"},
    {"executorch_prim::add.Scalar", prim_add, "sss"},
    {"executorch_prim::sub.Scalar", prim_sub, "sss"},
    {"executorch_prim::mul.Scalar", prim_mul, "sss"},
    {"executorch_prim::floordiv.Scalar", prim_floordiv, "sss"},
    {"executorch_prim::floordiv.int", prim_floordiv_int, "iii"},
    {"executorch_prim::truediv.Scalar", prim_truediv, "sss"},
    {"executorch_prim::mod.Scalar", prim_mod, "sss"},
    {"executorch_prim::mod.int", prim_mod_int, "iii"},
    {"executorch_prim::eq.Scalar", prim_eq, "sss"},
    {"executorch_prim::gt.Scalar", prim_gt, "sss"},
    {"executorch_prim::lt.Scalar", prim_lt, "sss"},
    {"executorch_prim::ge.Scalar", prim_ge, "sss"},
    {"executorch_prim::le.Scalar", prim_le, "sss"},
    {"executorch_prim::neg.Scalar", prim_neg, "ss"},
    {"executorch_prim::sym_max.Scalar", prim_max, "sss"},
    {"executorch_prim::sym_min.Scalar", prim_min, "sss"},
    {"executorch_prim::sym_not.Scalar", prim_sym_not, "ss"},
    {"executorch_prim::sym_float.Scalar", prim_sym_float, "ss"},
    {"executorch_prim::sym_int.Scalar", prim_sym_int, "ss"},
    {"executorch_prim::ceil.Scalar", prim_ceil, "ss"},
    {"executorch_prim::round.Scalar", prim_round, "ss"},
    {"executorch_prim::trunc.Scalar", prim_trunc, "ss"},
    {"executorch_prim::sym_ite.Scalar", prim_sym_ite, "ssss"},
};

}  // namespace

Error register_prim_ops() { return register_kernels(kPrimKernels); }

std::span<const Kernel> prim_kernels() { return kPrimKernels; }

}  // namespace ember
