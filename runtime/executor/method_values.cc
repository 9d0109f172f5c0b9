// Method load: the values table (scalars, lists, tensors and their storage).
#include <cinttypes>
#include <cstring>

#include "runtime/executor/method_internal.h"
#include "runtime/executor/program.h"

namespace ember {

Tag tag_from_flatbuffer(fb::KernelTypes type);  // method_meta.cc

using namespace method_internal;

namespace {

const char* fb_tag_name(const fb::EValue* v) {
  return v == nullptr ? "null" : to_string(tag_from_flatbuffer(v->val_type()));
}

}  // namespace

Error Method::parse_values(const NamedDataMap* external_data, const PlanCounts& counts) {
  const auto* values = plan_->values();
  const size_t n = values->size();
  EMBER_ASSIGN_OR_RETURN(values_, allocate<EValue>(n, "values"));
  EMBER_ASSIGN_OR_RETURN(value_flags_, allocate<uint8_t>(n, "value flags"));
  num_values_ = n;
  // Unconstructed: parse_tensor builds each in place, nothing reads one it did not build, and
  // none needs destroying.
  static_assert(std::is_trivially_destructible_v<Tensor>);
  EMBER_ASSIGN_OR_RETURN(Tensor * tensors,
                         allocate_unconstructed<Tensor>(counts.tensors, "tensors"));
  EMBER_ASSIGN_OR_RETURN(external_buffers_,
                         allocate<FreeableBuffer>(counts.externals, "external buffers"));
  num_external_buffers_ = counts.externals;

  size_t tensor_index = 0;
  for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
    const fb::EValue* v = values->Get(i);
    const fb::KernelTypes type = v->val_type();
    EMBER_CHECK(type == fb::KernelTypes::Null || v->val() != nullptr, Error::InvalidProgram,
                "value %u (%s) has no payload", i, fb_tag_name(v));
    switch (type) {
      case fb::KernelTypes::Null:
        values_[i] = EValue();
        break;
      case fb::KernelTypes::Int:
        values_[i] = EValue::from_int(v->val_as_Int()->int_val());
        break;
      case fb::KernelTypes::Bool:
        values_[i] = EValue::from_bool(v->val_as_Bool()->bool_val());
        break;
      case fb::KernelTypes::Double:
        values_[i] = EValue::from_double(v->val_as_Double()->double_val());
        break;
      case fb::KernelTypes::String: {
        const flatbuffers::String* s = v->val_as_String()->string_val();
        values_[i] = EValue::from_string(s == nullptr ? std::string_view()
                                                      : std::string_view(s->c_str(), s->size()));
        break;
      }
      case fb::KernelTypes::Tensor: {
        Tensor* t = &tensors[tensor_index++];
        const Error e = parse_tensor(v->val_as_Tensor(), i, external_data, t);
        if (e != Error::Ok) return add_error_context(e, "value %u (Tensor)", i);
        values_[i] = EValue::from_tensor(t);
        break;
      }
      case fb::KernelTypes::IntList: {
        const auto* items = v->val_as_IntList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (IntList) has no items", i);
        EMBER_ASSIGN_OR_RETURN(EValue * *boxed, allocate<EValue*>(items->size(), "list items"));
        EMBER_ASSIGN_OR_RETURN(int64_t * scratch, allocate<int64_t>(items->size(), "list items"));
        for (flatbuffers::uoffset_t k = 0; k < items->size(); ++k) {
          const int64_t idx = items->Get(k);
          EMBER_CHECK(idx >= 0 && static_cast<uint64_t>(idx) < n, Error::InvalidProgram,
                      "value %u (IntList): item %u refers to value %" PRId64 " of %zu", i, k, idx,
                      n);
          const fb::EValue* member = values->Get(static_cast<flatbuffers::uoffset_t>(idx));
          EMBER_CHECK(member->val_type() == fb::KernelTypes::Int, Error::InvalidProgram,
                      "value %u (IntList): item %u refers to value %" PRId64 ", a %s, not an Int",
                      i, k, idx, fb_tag_name(member));
          boxed[k] = &values_[idx];
        }
        values_[i] = EValue::from_int_list({boxed, scratch, items->size()});
        break;
      }
      case fb::KernelTypes::DoubleList: {
        const auto* items = v->val_as_DoubleList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (DoubleList) has no items",
                    i);
        EMBER_CHECK(reinterpret_cast<uintptr_t>(items->data()) % alignof(double) == 0,
                    Error::InvalidProgram, "value %u (DoubleList): items are misaligned", i);
        values_[i] = EValue::from_double_list({items->data(), items->size()});
        break;
      }
      case fb::KernelTypes::BoolList: {
        const auto* items = v->val_as_BoolList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (BoolList) has no items", i);
        for (flatbuffers::uoffset_t k = 0; k < items->size(); ++k) {
          EMBER_CHECK(items->Get(k) <= 1, Error::InvalidProgram,
                      "value %u (BoolList): item %u is %u, not a bool", i, k, items->Get(k));
        }
        values_[i] =
            EValue::from_bool_list({reinterpret_cast<const bool*>(items->data()), items->size()});
        break;
      }
      case fb::KernelTypes::TensorList:
      case fb::KernelTypes::OptionalTensorList: {
        const bool optional = type == fb::KernelTypes::OptionalTensorList;
        const auto* items =
            optional ? v->val_as_OptionalTensorList()->items() : v->val_as_TensorList()->items();
        EMBER_CHECK(items != nullptr, Error::InvalidProgram, "value %u (%s) has no items", i,
                    fb_tag_name(v));
        EMBER_ASSIGN_OR_RETURN(EValue * *boxed, allocate<EValue*>(items->size(), "list items"));
        EMBER_ASSIGN_OR_RETURN(Tensor * *scratch, allocate<Tensor*>(items->size(), "list items"));
        for (flatbuffers::uoffset_t k = 0; k < items->size(); ++k) {
          const int32_t idx = items->Get(k);
          if (optional && idx == -1) {
            boxed[k] = nullptr;
            continue;
          }
          // Members come before the list (they are parsed first).
          EMBER_CHECK(idx >= 0 && static_cast<uint32_t>(idx) < i, Error::InvalidProgram,
                      "value %u (%s): item %u refers to value %d; members must precede the list", i,
                      fb_tag_name(v), k, idx);
          const Tag member = values_[idx].tag();
          EMBER_CHECK(member == Tag::Tensor || (optional && member == Tag::None),
                      Error::InvalidProgram,
                      "value %u (%s): item %u refers to value %d, a %s, not a Tensor", i,
                      fb_tag_name(v), k, idx, to_string(member));
          boxed[k] = &values_[idx];
        }
        const BoxedTensorList list{boxed, scratch, items->size()};
        values_[i] =
            optional ? EValue::from_optional_tensor_list(list) : EValue::from_tensor_list(list);
        break;
      }
      default:
        return fail(Error::InvalidProgram, "value %u has unknown type tag %d", i,
                    static_cast<int>(type));
    }
  }
  return Error::Ok;
}

Error Method::parse_tensor(const fb::Tensor* ft, size_t value_index,
                           const NamedDataMap* external_data, Tensor* out) {
  const auto dtype = static_cast<ScalarType>(ft->scalar_type());
  EMBER_CHECK(is_valid(dtype), Error::InvalidProgram, "scalar type code %d is not defined",
              static_cast<int>(dtype));
  EMBER_CHECK(is_supported(dtype), Error::NotSupported,
              "dtype %s (code %d) is not supported by Ember", to_string(dtype),
              static_cast<int>(dtype));
  EMBER_CHECK(ft->storage_offset() == 0, Error::InvalidProgram,
              "storage_offset is %d; only 0 is supported", ft->storage_offset());
  EMBER_CHECK(ft->sizes() != nullptr && ft->dim_order() != nullptr, Error::InvalidProgram,
              "sizes or dim_order is missing");
  EMBER_CHECK(reinterpret_cast<uintptr_t>(ft->sizes()->data()) % alignof(int32_t) == 0,
              Error::InvalidProgram, "sizes are misaligned");
  const auto dynamism = static_cast<ShapeDynamism>(ft->shape_dynamism());
  EMBER_CHECK(dynamism == ShapeDynamism::Static || dynamism == ShapeDynamism::DynamicBound,
              Error::NotSupported, "shape dynamism %d is not supported (static or bounded only)",
              static_cast<int>(dynamism));
  std::span<const int32_t> sizes(ft->sizes()->data(), ft->sizes()->size());
  std::span<const uint8_t> dim_order(ft->dim_order()->data(), ft->dim_order()->size());
  EMBER_CHECK(dim_order.size() == sizes.size(), Error::InvalidProgram,
              "dim_order has %zu entries for rank %zu", dim_order.size(), sizes.size());
  const Error made = Tensor::make_at(out, dtype, sizes, dim_order, nullptr, dynamism);
  if (made != Error::Ok) {
    // Tensor::make reports InvalidArgument for bad metadata; from a file that is a bad program.
    return made == Error::InvalidArgument ? Error::InvalidProgram : made;
  }
  const size_t nbytes = out->capacity_bytes();

  const fb::AllocationDetails* alloc = ft->allocation_info();
  auto planned_address = [&]() -> Result<void*> {
    EMBER_CHECK(memory_->planned_memory != nullptr, Error::InvalidProgram,
                "tensor is planned in arena %u but the method plans no arenas", alloc->memory_id());
    const uint64_t offset = static_cast<uint64_t>(alloc->memory_offset_low()) |
                            (static_cast<uint64_t>(alloc->memory_offset_high()) << 32);
    return memory_->planned_memory->address(alloc->memory_id(), offset, nbytes);
  };

  void* data = nullptr;
  uint8_t flags = 0;
  const fb::ExtraTensorInfo* extra = ft->extra_tensor_info();
  if (extra != nullptr && extra->location() == fb::TensorDataLocation::EXTERNAL) {
    const flatbuffers::String* fqn = extra->fully_qualified_name();
    EMBER_CHECK(fqn != nullptr, Error::InvalidProgram, "external tensor has no name");
    EMBER_CHECK(external_data != nullptr, Error::NotFound,
                "'%s' is missing from named data: the program keeps its weights in a .ptd file "
                "and none was given",
                fqn->c_str());
    Result<TensorLayout> layout = external_data->get_tensor_layout(fqn->c_str());
    if (!layout.ok()) return layout.error();
    EMBER_CHECK(layout->dtype == dtype && layout->sizes.size() == sizes.size() &&
                    std::equal(sizes.begin(), sizes.end(), layout->sizes.begin()) &&
                    layout->dim_order.size() == dim_order.size() &&
                    std::equal(dim_order.begin(), dim_order.end(), layout->dim_order.begin()),
                Error::InvalidExternalData,
                "named data '%s' has another dtype, shape or dim order than the program's tensor "
                "(%s, rank %zu)",
                fqn->c_str(), to_string(dtype), sizes.size());
    if (alloc != nullptr) {
      EMBER_ASSIGN_OR_RETURN(data, planned_address());
      EMBER_TRY(external_data->load_data_into(fqn->c_str(), data, nbytes));
      flags = kPlanned;
    } else {
      Result<FreeableBuffer> buffer = external_data->get_data(fqn->c_str());
      if (!buffer.ok()) return buffer.error();
      EMBER_CHECK(buffer->size() >= nbytes, Error::InvalidExternalData,
                  "named data '%s' holds %zu bytes, the tensor needs %zu", fqn->c_str(),
                  buffer->size(), nbytes);
      data = const_cast<void*>(buffer->data());
      // The buffer stays mapped for the Method's lifetime: the tensor points into it.
      external_buffers_[next_external_++] = std::move(*buffer);
      flags = kConstant | kPlanned;
    }
  } else if (ft->data_buffer_idx() > 0 && alloc == nullptr) {
    Result<const uint8_t*> constant = program_->constant_data(ft->data_buffer_idx(), nbytes);
    if (!constant.ok()) return constant.error();
    data = const_cast<uint8_t*>(*constant);
    flags = kConstant | kPlanned;
  } else if (ft->data_buffer_idx() > 0) {
    EMBER_ASSIGN_OR_RETURN(data, planned_address());
    Result<const uint8_t*> initial = program_->mutable_data(ft->data_buffer_idx(), nbytes);
    if (!initial.ok()) return initial.error();
    if (nbytes > 0) std::memcpy(data, *initial, nbytes);
    flags = kPlanned;
  } else if (alloc != nullptr) {
    EMBER_ASSIGN_OR_RETURN(data, planned_address());
    flags = kPlanned;
  }
  EMBER_CHECK(is_aligned_for(data, dtype), Error::InvalidProgram,
              "data of a %s tensor is not aligned to %zu bytes", to_string(dtype),
              alignment_for(dtype));
  out->set_data(data);
  value_flags_[value_index] = flags;
  return Error::Ok;
}

}  // namespace ember
