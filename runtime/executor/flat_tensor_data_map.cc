#include "runtime/executor/flat_tensor_data_map.h"

#include <array>
#include <cinttypes>
#include <cstring>

#include "ember/schema/flat_tensor_generated.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/header.h"

namespace ember {
namespace fb = flat_tensor_flatbuffer;

namespace {
constexpr size_t kHeaderMinLength = 40;
// Four bytes of a file as text for a message: anything but printable ASCII becomes '?'.
std::array<char, 5> printable4(const uint8_t* p) {
  std::array<char, 5> s{};
  for (int i = 0; i < 4; ++i) s[i] = p[i] >= 0x20 && p[i] < 0x7f ? static_cast<char>(p[i]) : '?';
  return s;
}

}  // namespace

Result<FlatTensorDataMap> FlatTensorDataMap::load(const DataLoader* loader) {
  const size_t file_size = loader->size();
  EMBER_CHECK(file_size >= 48, Error::InvalidExternalData,
              ".ptd file is %zu bytes, shorter than its 48-byte header", file_size);
  Result<FreeableBuffer> head = loader->load(0, 48, SegmentType::External);
  if (!head.ok()) return head.error();
  const uint8_t* h = head->bytes();
  EMBER_CHECK(std::memcmp(h + 4, "FT01", 4) == 0, Error::InvalidExternalData,
              "not a .ptd file: identifier is '%s', expected 'FT01'", printable4(h + 4).data());
  EMBER_CHECK(std::memcmp(h + 8, "FH01", 4) == 0, Error::InvalidExternalData,
              ".ptd header magic is '%s', expected 'FH01'", printable4(h + 8).data());
  const uint32_t length = read_le<uint32_t>(h + 12);
  EMBER_CHECK(length >= kHeaderMinLength, Error::InvalidExternalData,
              ".ptd header length %u is below %zu", length, kHeaderMinLength);
  const uint64_t fb_offset = read_le<uint64_t>(h + 16);
  const uint64_t fb_size = read_le<uint64_t>(h + 24);
  const uint64_t segment_base = read_le<uint64_t>(h + 32);
  const uint64_t segment_size = read_le<uint64_t>(h + 40);
  head->free();

  uint64_t end = 0;
  EMBER_CHECK(!__builtin_add_overflow(segment_base, segment_size, &end) && end <= file_size,
              Error::InvalidExternalData,
              ".ptd segment data [%" PRIu64 ", +%" PRIu64 ") lies outside the %zu-byte file",
              segment_base, segment_size, file_size);
  uint64_t fb_end = 0;
  EMBER_CHECK(!__builtin_add_overflow(fb_offset, fb_size, &fb_end) && fb_end <= file_size &&
                  fb_offset >= 48 && fb_end >= 8,
              Error::InvalidExternalData,
              ".ptd flatbuffer [%" PRIu64 ", +%" PRIu64 ") is invalid for a %zu-byte file",
              fb_offset, fb_size, file_size);

  Result<FreeableBuffer> body = loader->load(0, fb_end, SegmentType::External);
  if (!body.ok()) return body.error();
  EMBER_CHECK(reinterpret_cast<uintptr_t>(body->data()) % alignof(std::max_align_t) == 0,
              Error::InvalidArgument, ".ptd data is not aligned to %zu bytes",
              alignof(std::max_align_t));
  flatbuffers::Verifier verifier(body->bytes(), body->size());
  EMBER_CHECK(fb::VerifyFlatTensorBuffer(verifier), Error::InvalidExternalData,
              ".ptd flatbuffer failed verification (a corrupt or truncated file)");
  const fb::FlatTensor* root = fb::GetFlatTensor(body->data());
  EMBER_CHECK(root->segments() != nullptr && root->named_data() != nullptr,
              Error::InvalidExternalData, ".ptd lacks its required segments or named_data table");

  const auto* segments = root->segments();
  for (flatbuffers::uoffset_t i = 0; i < segments->size(); ++i) {
    const fb::DataSegment* s = segments->Get(i);
    uint64_t seg_end = 0;
    EMBER_CHECK(
        !__builtin_add_overflow(s->offset(), s->size(), &seg_end) && seg_end <= segment_size,
        Error::InvalidExternalData,
        ".ptd segment %u [%" PRIu64 ", +%" PRIu64 ") leaves the %" PRIu64 " bytes of segment data",
        i, s->offset(), s->size(), segment_size);
  }
  for (flatbuffers::uoffset_t i = 0; i < root->named_data()->size(); ++i) {
    const fb::NamedData* nd = root->named_data()->Get(i);
    EMBER_CHECK(nd->key() != nullptr, Error::InvalidExternalData, ".ptd entry %u has no key", i);
    EMBER_CHECK(nd->segment_index() < segments->size(), Error::InvalidExternalData,
                ".ptd entry '%s' names segment %u of %u", nd->key()->c_str(), nd->segment_index(),
                segments->size());
    if (const fb::TensorLayout* layout = nd->tensor_layout()) {
      EMBER_CHECK(
          layout->sizes() != nullptr && layout->dim_order() != nullptr &&
              layout->sizes()->size() == layout->dim_order()->size() &&
              is_valid_dim_order({layout->dim_order()->data(), layout->dim_order()->size()}),
          Error::InvalidExternalData,
          ".ptd entry '%s' has an invalid tensor layout (sizes and dim order)", nd->key()->c_str());
      const auto dtype = static_cast<ScalarType>(layout->scalar_type());
      EMBER_CHECK(is_valid(dtype), Error::InvalidExternalData,
                  ".ptd entry '%s' has scalar type code %d", nd->key()->c_str(),
                  static_cast<int>(dtype));
      Result<size_t> nbytes =
          checked_nbytes(dtype, {layout->sizes()->data(), layout->sizes()->size()});
      if (!nbytes.ok()) {
        return add_error_context(Error::InvalidExternalData, ".ptd entry '%s'", nd->key()->c_str());
      }
      EMBER_CHECK(*nbytes <= segments->Get(nd->segment_index())->size(), Error::InvalidExternalData,
                  ".ptd entry '%s' needs %zu bytes but its segment holds %" PRIu64,
                  nd->key()->c_str(), *nbytes, segments->Get(nd->segment_index())->size());
    }
  }
  return FlatTensorDataMap(loader, std::move(*body), segment_base);
}

const fb::FlatTensor* FlatTensorDataMap::root() const {
  return fb::GetFlatTensor(flatbuffer_.data());
}

Result<size_t> FlatTensorDataMap::find(std::string_view key) const {
  const auto* entries = root()->named_data();
  for (flatbuffers::uoffset_t i = 0; i < entries->size(); ++i) {
    const flatbuffers::String* k = entries->Get(i)->key();
    if (key == std::string_view(k->c_str(), k->size())) return static_cast<size_t>(i);
  }
  return fail(Error::NotFound, "'%.*s' is missing from named data", static_cast<int>(key.size()),
              key.data());
}

Result<TensorLayout> FlatTensorDataMap::get_tensor_layout(std::string_view key) const {
  Result<size_t> index = find(key);
  if (!index.ok()) return index.error();
  const fb::NamedData* nd = root()->named_data()->Get(static_cast<flatbuffers::uoffset_t>(*index));
  const fb::TensorLayout* layout = nd->tensor_layout();
  EMBER_CHECK(layout != nullptr, Error::NotFound, "named data '%.*s' has no tensor layout",
              static_cast<int>(key.size()), key.data());
  const auto dtype = static_cast<ScalarType>(layout->scalar_type());
  std::span<const int32_t> sizes(layout->sizes()->data(), layout->sizes()->size());
  Result<size_t> nbytes = checked_nbytes(dtype, sizes);
  if (!nbytes.ok()) return nbytes.error();
  return TensorLayout{
      dtype, sizes, {layout->dim_order()->data(), layout->dim_order()->size()}, *nbytes};
}

Result<FreeableBuffer> FlatTensorDataMap::get_data(std::string_view key) const {
  Result<size_t> index = find(key);
  if (!index.ok()) return index.error();
  const fb::NamedData* nd = root()->named_data()->Get(static_cast<flatbuffers::uoffset_t>(*index));
  const fb::DataSegment* s = root()->segments()->Get(nd->segment_index());
  return loader_->load(segment_base_ + s->offset(), s->size(), SegmentType::External);
}

Error FlatTensorDataMap::load_data_into(std::string_view key, void* buffer, size_t size) const {
  Result<FreeableBuffer> data = get_data(key);
  if (!data.ok()) return data.error();
  EMBER_CHECK(data->size() >= size, Error::InvalidArgument,
              "named data '%.*s' holds %zu bytes, %zu requested", static_cast<int>(key.size()),
              key.data(), data->size(), size);
  if (size > 0) std::memcpy(buffer, data->data(), size);
  return Error::Ok;
}

size_t FlatTensorDataMap::num_keys() const { return root()->named_data()->size(); }

Result<std::string_view> FlatTensorDataMap::key(size_t index) const {
  EMBER_CHECK(index < num_keys(), Error::InvalidArgument, "key index %zu of %zu", index,
              num_keys());
  const flatbuffers::String* k =
      root()->named_data()->Get(static_cast<flatbuffers::uoffset_t>(index))->key();
  return std::string_view(k->c_str(), k->size());
}

}  // namespace ember
