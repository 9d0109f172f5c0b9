// EValue: one entry of a method's value table, a tagged union over every value kind of the format.
//
//   EValue v = EValue::from_int(3);
//   if (v.is_int()) use(v.to_int());
//   Tensor& t = args[0]->to_tensor();  // kernels: the tag was checked at method load
//
// Lists of ints and tensors are boxed: they refer to other entries of the value table and are
// read through them at call time, so that a Move into a member is seen by the list, as in
// ExecuTorch. EValues never own memory; the method's allocator or the caller does.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "runtime/core/tensor.h"

namespace ember {

class EValue;

enum class Tag : uint8_t {
  None,
  Int,
  Double,
  Bool,
  String,
  Tensor,
  ListInt,
  ListDouble,
  ListBool,
  ListTensor,
  ListOptionalTensor,
};

// The tag's name ("Tensor", "ListInt", ...).
const char* to_string(Tag tag);

// A list of Int values, read through the value table. `scratch` holds `size` int64s.
struct BoxedIntList {
  EValue* const* items;
  int64_t* scratch;
  size_t size;
  std::span<const int64_t> get() const;
};

// A list of Tensor values (TensorList) or of optional tensors (OptionalTensorList, where a null
// item is None). `scratch` holds `size` pointers.
struct BoxedTensorList {
  EValue* const* items;
  Tensor** scratch;
  size_t size;
  std::span<Tensor* const> get() const;
};

class EValue {
 public:
  EValue() : tag_(Tag::None) { payload_.i = 0; }

  static EValue from_int(int64_t v) {
    return make(Tag::Int, [&](auto& p) { p.i = v; });
  }
  static EValue from_double(double v) {
    return make(Tag::Double, [&](auto& p) { p.d = v; });
  }
  static EValue from_bool(bool v) {
    return make(Tag::Bool, [&](auto& p) { p.b = v; });
  }
  static EValue from_string(std::string_view v) {
    return make(Tag::String, [&](auto& p) { p.s = {v.data(), v.size()}; });
  }
  static EValue from_tensor(Tensor* v) {
    return make(Tag::Tensor, [&](auto& p) { p.t = v; });
  }
  static EValue from_int_list(BoxedIntList v) {
    return make(Tag::ListInt, [&](auto& p) { p.il = v; });
  }
  static EValue from_double_list(std::span<const double> v) {
    return make(Tag::ListDouble, [&](auto& p) { p.dl = {v.data(), v.size()}; });
  }
  static EValue from_bool_list(std::span<const bool> v) {
    return make(Tag::ListBool, [&](auto& p) { p.bl = {v.data(), v.size()}; });
  }
  static EValue from_tensor_list(BoxedTensorList v) {
    return make(Tag::ListTensor, [&](auto& p) { p.tl = v; });
  }
  static EValue from_optional_tensor_list(BoxedTensorList v) {
    return make(Tag::ListOptionalTensor, [&](auto& p) { p.tl = v; });
  }

  Tag tag() const { return tag_; }
  bool is_none() const { return tag_ == Tag::None; }
  bool is_int() const { return tag_ == Tag::Int; }
  bool is_double() const { return tag_ == Tag::Double; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_string() const { return tag_ == Tag::String; }
  bool is_tensor() const { return tag_ == Tag::Tensor; }
  // Int, Double or Bool: what a schema's `Scalar` accepts.
  bool is_scalar() const { return is_int() || is_double() || is_bool(); }

  int64_t to_int() const { return (assert(is_int()), payload_.i); }
  double to_double() const { return (assert(is_double()), payload_.d); }
  bool to_bool() const { return (assert(is_bool()), payload_.b); }
  std::string_view to_string() const {
    return (assert(is_string()), std::string_view(payload_.s.data, payload_.s.size));
  }
  Tensor& to_tensor() const { return (assert(is_tensor()), *payload_.t); }
  Tensor* tensor_ptr() const { return is_tensor() ? payload_.t : nullptr; }
  std::span<const int64_t> to_int_list() const {
    return (assert(tag_ == Tag::ListInt), payload_.il.get());
  }
  std::span<const double> to_double_list() const {
    return (assert(tag_ == Tag::ListDouble),
            std::span<const double>(payload_.dl.data, payload_.dl.size));
  }
  std::span<const bool> to_bool_list() const {
    return (assert(tag_ == Tag::ListBool),
            std::span<const bool>(payload_.bl.data, payload_.bl.size));
  }
  std::span<Tensor* const> to_tensor_list() const {
    return (assert(tag_ == Tag::ListTensor), payload_.tl.get());
  }
  std::span<Tensor* const> to_optional_tensor_list() const {
    return (assert(tag_ == Tag::ListOptionalTensor), payload_.tl.get());
  }
  // The value of an Int, Double or Bool as a double.
  double scalar_as_double() const {
    return is_double() ? payload_.d : is_int() ? static_cast<double>(payload_.i) : payload_.b;
  }

 private:
  union Payload {
    int64_t i;
    double d;
    bool b;
    struct {
      const char* data;
      size_t size;
    } s;
    Tensor* t;
    BoxedIntList il;
    struct {
      const double* data;
      size_t size;
    } dl;
    struct {
      const bool* data;
      size_t size;
    } bl;
    BoxedTensorList tl;
  };
  template <typename F>
  static EValue make(Tag tag, F&& set) {
    EValue v;
    v.tag_ = tag;
    set(v.payload_);
    return v;
  }

  Tag tag_;
  Payload payload_;
};

inline std::span<const int64_t> BoxedIntList::get() const {
  for (size_t i = 0; i < size; ++i) scratch[i] = items[i]->to_int();
  return {scratch, size};
}

inline std::span<Tensor* const> BoxedTensorList::get() const {
  for (size_t i = 0; i < size; ++i)
    scratch[i] = items[i] == nullptr ? nullptr : items[i]->tensor_ptr();
  return {scratch, size};
}

}  // namespace ember
