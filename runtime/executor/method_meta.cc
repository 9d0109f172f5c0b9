#include "runtime/executor/method_meta.h"

#include "ember/schema/program_generated.h"
#include "runtime/executor/method.h"

namespace ember {
namespace fb = executorch_flatbuffer;

Tag tag_from_flatbuffer(fb::KernelTypes type) {
  switch (type) {
    case fb::KernelTypes::Null:
      return Tag::None;
    case fb::KernelTypes::Int:
      return Tag::Int;
    case fb::KernelTypes::Bool:
      return Tag::Bool;
    case fb::KernelTypes::Double:
      return Tag::Double;
    case fb::KernelTypes::Tensor:
      return Tag::Tensor;
    case fb::KernelTypes::String:
      return Tag::String;
    case fb::KernelTypes::IntList:
      return Tag::ListInt;
    case fb::KernelTypes::DoubleList:
      return Tag::ListDouble;
    case fb::KernelTypes::BoolList:
      return Tag::ListBool;
    case fb::KernelTypes::TensorList:
      return Tag::ListTensor;
    case fb::KernelTypes::OptionalTensorList:
      return Tag::ListOptionalTensor;
    default:
      return Tag::None;
  }
}

std::string_view MethodMeta::name() const {
  return {plan_->name()->c_str(), plan_->name()->size()};
}

size_t MethodMeta::num_inputs() const {
  return plan_->inputs() == nullptr ? 0 : plan_->inputs()->size();
}

size_t MethodMeta::num_outputs() const {
  return plan_->outputs() == nullptr ? 0 : plan_->outputs()->size();
}

Result<Tag> MethodMeta::tag_of(int32_t value_index) const {
  const auto* values = plan_->values();
  EMBER_CHECK(
      values != nullptr && value_index >= 0 && static_cast<uint32_t>(value_index) < values->size(),
      Error::InvalidProgram, "value index %d is out of range", value_index);
  const fb::EValue* v = values->Get(static_cast<flatbuffers::uoffset_t>(value_index));
  EMBER_CHECK(v != nullptr && v->val_type() != fb::KernelTypes::NONE, Error::InvalidProgram,
              "value %d has no type", value_index);
  return tag_from_flatbuffer(v->val_type());
}

Result<Tag> MethodMeta::input_tag(size_t index) const {
  EMBER_CHECK(index < num_inputs(), Error::InvalidArgument, "input %zu of %zu", index,
              num_inputs());
  return tag_of(plan_->inputs()->Get(static_cast<flatbuffers::uoffset_t>(index)));
}

Result<Tag> MethodMeta::output_tag(size_t index) const {
  EMBER_CHECK(index < num_outputs(), Error::InvalidArgument, "output %zu of %zu", index,
              num_outputs());
  return tag_of(plan_->outputs()->Get(static_cast<flatbuffers::uoffset_t>(index)));
}

Result<TensorInfo> MethodMeta::tensor_info_of(int32_t value_index) const {
  Result<Tag> tag = tag_of(value_index);
  if (!tag.ok()) return tag.error();
  EMBER_CHECK(*tag == Tag::Tensor, Error::InvalidArgument, "value %d is a %s, not a Tensor",
              value_index, to_string(*tag));
  const fb::Tensor* t =
      plan_->values()->Get(static_cast<flatbuffers::uoffset_t>(value_index))->val_as_Tensor();
  EMBER_CHECK(t != nullptr && t->sizes() != nullptr && t->dim_order() != nullptr,
              Error::InvalidProgram, "tensor value %d lacks sizes or dim order", value_index);
  const auto dtype = static_cast<ScalarType>(t->scalar_type());
  std::span<const int32_t> sizes(t->sizes()->data(), t->sizes()->size());
  Result<size_t> nbytes = checked_nbytes(dtype, sizes);
  if (!nbytes.ok()) return add_error_context(Error::InvalidProgram, "tensor value %d", value_index);
  return TensorInfo{dtype,
                    sizes,
                    {t->dim_order()->data(), t->dim_order()->size()},
                    static_cast<ShapeDynamism>(t->shape_dynamism()),
                    *nbytes,
                    t->allocation_info() != nullptr || t->data_buffer_idx() != 0};
}

Result<TensorInfo> MethodMeta::input_tensor_info(size_t index) const {
  EMBER_CHECK(index < num_inputs(), Error::InvalidArgument, "input %zu of %zu", index,
              num_inputs());
  return tensor_info_of(plan_->inputs()->Get(static_cast<flatbuffers::uoffset_t>(index)));
}

Result<TensorInfo> MethodMeta::output_tensor_info(size_t index) const {
  EMBER_CHECK(index < num_outputs(), Error::InvalidArgument, "output %zu of %zu", index,
              num_outputs());
  return tensor_info_of(plan_->outputs()->Get(static_cast<flatbuffers::uoffset_t>(index)));
}

size_t MethodMeta::num_memory_planned_buffers() const {
  const auto* sizes = plan_->non_const_buffer_sizes();
  return sizes == nullptr || sizes->size() == 0 ? 0 : sizes->size() - 1;
}

Result<int64_t> MethodMeta::memory_planned_buffer_size(size_t index) const {
  EMBER_CHECK(index < num_memory_planned_buffers(), Error::InvalidArgument,
              "planned buffer %zu of %zu", index, num_memory_planned_buffers());
  return plan_->non_const_buffer_sizes()->Get(static_cast<flatbuffers::uoffset_t>(index + 1));
}

size_t MethodMeta::num_instructions() const {
  const auto* chains = plan_->chains();
  if (chains == nullptr) return 0;
  size_t n = 0;
  for (flatbuffers::uoffset_t i = 0; i < chains->size(); ++i) {
    const auto* instructions = chains->Get(i)->instructions();
    n += instructions == nullptr ? 0 : instructions->size();
  }
  return n;
}

}  // namespace ember

namespace ember {
size_t MethodMeta::method_allocator_bytes() const { return Method::required_memory(plan_); }
}  // namespace ember
