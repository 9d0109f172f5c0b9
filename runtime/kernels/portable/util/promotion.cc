#include "runtime/kernels/portable/util/promotion.h"

namespace ember {
namespace {

enum class Category { None, Bool, Integral, Floating };

Category category(ScalarType t) {
  if (t == ScalarType::Bool) return Category::Bool;
  if (is_floating(t)) return Category::Floating;
  return Category::Integral;
}

int int_rank(ScalarType t) {
  switch (t) {
    case ScalarType::Char:
      return 1;
    case ScalarType::Short:
      return 2;
    case ScalarType::Int:
      return 3;
    case ScalarType::Long:
      return 4;
    default:
      return 0;
  }
}

int float_rank(ScalarType t) {
  switch (t) {
    case ScalarType::Half:
    case ScalarType::BFloat16:
      return 1;
    case ScalarType::Float:
      return 2;
    default:
      return 3;
  }
}

struct Partial {
  bool set = false;
  ScalarType type = ScalarType::Bool;
  void add(ScalarType t) {
    type = set ? promote_types(type, t) : t;
    set = true;
  }
};

// Lifts `higher` by `lower` only when `lower` is of a higher category (PyTorch's rule for
// combining dimensioned, zero-dim and wrapped-number results).
Partial combine(Partial higher, Partial lower) {
  if (!higher.set) return lower;
  if (!lower.set) return higher;
  if (category(lower.type) > category(higher.type)) {
    higher.type = promote_types(higher.type, lower.type);
  }
  return higher;
}

}  // namespace

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == ScalarType::Bool) return b;
  if (b == ScalarType::Bool) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if ((a == ScalarType::Half && b == ScalarType::BFloat16) ||
        (a == ScalarType::BFloat16 && b == ScalarType::Half)) {
      return ScalarType::Float;
    }
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral: uint8 with a signed type needs the next signed type holding both ranges.
  if (a == ScalarType::Byte || b == ScalarType::Byte) {
    const ScalarType other = a == ScalarType::Byte ? b : a;
    return other == ScalarType::Char ? ScalarType::Short : other;
  }
  return int_rank(a) >= int_rank(b) ? a : b;
}

ScalarType result_type(std::initializer_list<const Tensor*> tensors,
                       std::initializer_list<const EValue*> scalars) {
  return result_type(std::span<const Tensor* const>(tensors.begin(), tensors.size()),
                     std::span<const EValue* const>(scalars.begin(), scalars.size()));
}

ScalarType result_type(std::span<const Tensor* const> tensors,
                       std::span<const EValue* const> scalars) {
  Partial dimensioned, zero_dim, wrapped;
  for (const Tensor* t : tensors) {
    if (t == nullptr) continue;
    (t->dim() == 0 ? zero_dim : dimensioned).add(t->dtype());
  }
  for (const EValue* s : scalars) {
    if (s == nullptr || s->is_none()) continue;
    wrapped.add(s->is_double() ? ScalarType::Float
                : s->is_int()  ? ScalarType::Long
                               : ScalarType::Bool);
  }
  const Partial r = combine(dimensioned, combine(zero_dim, wrapped));
  return r.set ? r.type : ScalarType::Float;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

}  // namespace ember
