#include "runtime/executor/program.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "ember/schema/program_generated.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"

namespace ember {
namespace fb = executorch_flatbuffer;

namespace {
// Nesting and table-count limits for the verifier: far above any real program, low enough that a
// hostile file cannot make verification slow.
constexpr flatbuffers::uoffset_t kMaxDepth = 64;
constexpr flatbuffers::uoffset_t kMaxTables = 10'000'000;

// The FlatBuffers verifier checks the alignment of table fields but not of vector elements, so a
// crafted file can place a vector of 8-byte scalars at an address that is only 4-aligned. An empty
// vector has no element to read, and writers place it anywhere (ExecuTorch's and Ember's own, for
// the empty int list of a cond's operands, land on 4 bytes).
template <typename T>
bool elements_aligned(const flatbuffers::Vector<T>* v) {
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

// Every vector of 8-byte scalars in a plan: arena sizes, int lists, double lists.
Error check_plan_alignment(const fb::ExecutionPlan* plan, flatbuffers::uoffset_t index) {
  EMBER_CHECK(elements_aligned(plan->non_const_buffer_sizes()), Error::InvalidProgram,
              "execution plan %u: non_const_buffer_sizes is misaligned", index);
  if (plan->values() == nullptr) return Error::Ok;
  for (flatbuffers::uoffset_t i = 0; i < plan->values()->size(); ++i) {
    const fb::EValue* v = plan->values()->Get(i);
    const fb::IntList* il = v->val_as_IntList();
    const fb::DoubleList* dl = v->val_as_DoubleList();
    EMBER_CHECK((il == nullptr || elements_aligned(il->items())) &&
                    (dl == nullptr || elements_aligned(dl->items())),
                Error::InvalidProgram, "execution plan %u: value %u has misaligned items", index,
                i);
  }
  return Error::Ok;
}
}  // namespace

Program::HeaderStatus Program::check_header(const void* data, size_t size) {
  if (size < 8) return HeaderStatus::ShortData;
  const char* id = static_cast<const char*>(data) + 4;
  if (std::memcmp(id, "ET12", 4) == 0) return HeaderStatus::CompatibleVersion;
  if (id[0] == 'E' && id[1] == 'T') return HeaderStatus::IncompatibleVersion;
  return HeaderStatus::NotPresent;
}

Result<Program> Program::load(const DataLoader* loader) {
  const size_t file_size = loader->size();
  EMBER_CHECK(file_size >= 8, Error::InvalidProgram,
              "not a program: %zu bytes is too short for a .pte file", file_size);
  Result<FreeableBuffer> head =
      loader->load(0, std::min(file_size, ExtendedHeader::kNumHeadBytes), SegmentType::Program);
  if (!head.ok()) return head.error();
  switch (check_header(head->data(), head->size())) {
    case HeaderStatus::CompatibleVersion:
      break;
    case HeaderStatus::IncompatibleVersion:
      return fail(Error::InvalidProgram,
                  "incompatible program version: identifier '%.4s', Ember reads 'ET12'",
                  reinterpret_cast<const char*>(head->bytes() + 4));
    default:
      return fail(Error::InvalidProgram, "not a program: identifier is not 'ET12'");
  }
  Result<ExtendedHeader> header = ExtendedHeader::parse(head->bytes(), head->size());
  if (!header.ok()) return header.error();
  head->free();

  Program program;
  program.loader_ = loader;
  program.header_ = *header;
  size_t program_size = file_size;
  if (header->present) {
    const ExtendedHeader& h = *header;
    EMBER_CHECK(h.program_size >= 8 + h.length && h.program_size <= file_size,
                Error::InvalidProgram,
                "extended header: program_size %" PRIu64 " does not fit a %zu-byte file",
                h.program_size, file_size);
    // ExecuTorch's file-size rule (docs/pte-format.md §2.2): old headers skip it.
    if (h.segment_data_size > 0 || h.segment_base_offset == 0) {
      uint64_t end = 0;
      EMBER_CHECK(!__builtin_add_overflow(h.segment_base_offset, h.segment_data_size, &end) &&
                      end <= file_size,
                  Error::InvalidProgram,
                  "extended header: segments end at %" PRIu64 " + %" PRIu64
                  ", past the end of the %zu-byte file (truncated?)",
                  h.segment_base_offset, h.segment_data_size, file_size);
    }
    EMBER_CHECK(h.segment_base_offset == 0 || h.segment_base_offset >= h.program_size,
                Error::InvalidProgram,
                "extended header: segment base %" PRIu64 " lies inside the program data (%" PRIu64
                " bytes)",
                h.segment_base_offset, h.program_size);
    program_size = static_cast<size_t>(h.program_size);
  }

  Result<FreeableBuffer> data = loader->load(0, program_size, SegmentType::Program);
  if (!data.ok()) return data.error();
  EMBER_CHECK(reinterpret_cast<uintptr_t>(data->data()) % alignof(std::max_align_t) == 0,
              Error::InvalidArgument, "program data is not aligned to %zu bytes",
              alignof(std::max_align_t));
  {
    flatbuffers::Verifier verifier(data->bytes(), data->size(), kMaxDepth, kMaxTables);
    EMBER_CHECK(fb::VerifyProgramBuffer(verifier), Error::InvalidProgram,
                "program flatbuffer failed verification: an offset, vector, string or union "
                "points outside the %zu bytes of program data (corrupt or truncated file)",
                data->size());
  }
  program.program_data_ = std::move(*data);
  const fb::Program* root = program.flatbuffer();
  EMBER_CHECK(root->execution_plan() != nullptr, Error::InvalidProgram,
              "program has no execution_plan table");
  for (flatbuffers::uoffset_t i = 0; i < root->execution_plan()->size(); ++i) {
    EMBER_CHECK(root->execution_plan()->Get(i)->name() != nullptr, Error::InvalidProgram,
                "execution plan %u has no name", i);
    EMBER_TRY(check_plan_alignment(root->execution_plan()->Get(i), i));
  }

  // Segments: every one must lie inside the file, relative to the segment base.
  const auto* segments = root->segments();
  if (segments != nullptr && header->present && header->segment_base_offset != 0) {
    for (flatbuffers::uoffset_t i = 0; i < segments->size(); ++i) {
      const fb::DataSegment* s = segments->Get(i);
      uint64_t start = 0, end = 0;
      EMBER_CHECK(!__builtin_add_overflow(header->segment_base_offset, s->offset(), &start) &&
                      !__builtin_add_overflow(start, s->size(), &end) && end <= file_size,
                  Error::InvalidProgram,
                  "segment %u [%" PRIu64 ", +%" PRIu64 ") lies outside the %zu-byte file", i,
                  s->offset(), s->size(), file_size);
    }
  }

  // Constants: the constant segment (current writers) or the deprecated inline buffers.
  const fb::SubsegmentOffsets* cs = root->constant_segment();
  EMBER_CHECK(cs == nullptr || elements_aligned(cs->offsets()), Error::InvalidProgram,
              "constant_segment offsets are misaligned");
  if (cs != nullptr && cs->offsets() != nullptr && cs->offsets()->size() > 0) {
    program.constants_in_segment_ = true;
    if (cs->offsets()->size() > 1) {
      EMBER_CHECK(root->constant_buffer() == nullptr || root->constant_buffer()->size() == 0,
                  Error::InvalidProgram,
                  "program has both a constant segment and inline constant buffers");
      Result<FreeableBuffer> seg = program.load_segment(cs->segment_index(), SegmentType::Constant);
      if (!seg.ok()) return add_error_context(seg.error(), "constant segment");
      program.constant_segment_ = std::move(*seg);
    }
  }

  // Initial values of mutable tensors: only entry 0 is used, as in ExecuTorch.
  const auto* mds = root->mutable_data_segments();
  if (mds != nullptr && mds->size() > 0) {
    const fb::SubsegmentOffsets* m = mds->Get(0);
    EMBER_CHECK(m->offsets() != nullptr && elements_aligned(m->offsets()), Error::InvalidProgram,
                "mutable_data_segments[0] has no offsets or they are misaligned");
    Result<FreeableBuffer> seg = program.load_segment(m->segment_index(), SegmentType::Mutable);
    if (!seg.ok()) return add_error_context(seg.error(), "mutable data segment");
    program.mutable_segment_ = std::move(*seg);
  }

  if (const auto* named = root->named_data()) {
    for (flatbuffers::uoffset_t i = 0; i < named->size(); ++i) {
      const fb::NamedData* nd = named->Get(i);
      EMBER_CHECK(nd->key() != nullptr, Error::InvalidProgram, "named_data[%u] has no key", i);
      EMBER_CHECK(segments != nullptr && nd->segment_index() < segments->size(),
                  Error::InvalidProgram, "named_data '%s' names segment %u, which does not exist",
                  nd->key()->c_str(), nd->segment_index());
    }
    program.has_named_data_ = named->size() > 0;
  }
  program.pte_named_data_.root = root;
  program.pte_named_data_.loader = loader;
  program.pte_named_data_.segment_base = header->present ? header->segment_base_offset : 0;
  return program;
}

const fb::Program* Program::flatbuffer() const { return fb::GetProgram(program_data_.data()); }

size_t Program::num_methods() const { return flatbuffer()->execution_plan()->size(); }

Result<std::string_view> Program::get_method_name(size_t index) const {
  EMBER_CHECK(index < num_methods(), Error::InvalidArgument, "method index %zu of %zu", index,
              num_methods());
  const flatbuffers::String* name =
      flatbuffer()->execution_plan()->Get(static_cast<flatbuffers::uoffset_t>(index))->name();
  return std::string_view(name->c_str(), name->size());
}

Result<const fb::ExecutionPlan*> Program::plan(std::string_view method_name) const {
  const auto* plans = flatbuffer()->execution_plan();
  for (flatbuffers::uoffset_t i = 0; i < plans->size(); ++i) {
    const fb::ExecutionPlan* p = plans->Get(i);
    if (method_name == std::string_view(p->name()->c_str(), p->name()->size())) return p;
  }
  return fail(Error::NotFound, "the program has no method '%.*s'",
              static_cast<int>(method_name.size()), method_name.data());
}

Result<MethodMeta> Program::method_meta(std::string_view method_name) const {
  Result<const fb::ExecutionPlan*> p = plan(method_name);
  if (!p.ok()) return p.error();
  return MethodMeta(*p);
}

Result<Method> Program::load_method(std::string_view method_name, MemoryManager* memory,
                                    const NamedDataMap* external_data) const {
  Result<const fb::ExecutionPlan*> p = plan(method_name);
  if (!p.ok()) return p.error();
  EMBER_CHECK(memory != nullptr && memory->method_allocator != nullptr, Error::InvalidArgument,
              "load_method needs a memory manager with a method allocator");
  Method method(this, *p, memory);
  const Error err = method.init(external_data);
  if (err != Error::Ok) {
    return add_error_context(err, "loading method '%.*s'", static_cast<int>(method_name.size()),
                             method_name.data());
  }
  return method;
}

Result<FreeableBuffer> Program::load_segment(uint32_t index, SegmentType type) const {
  const auto* segments = flatbuffer()->segments();
  EMBER_CHECK(segments != nullptr && index < segments->size(), Error::InvalidProgram,
              "segment %u does not exist (the program has %u)", index,
              segments == nullptr ? 0u : segments->size());
  EMBER_CHECK(header_.present && header_.segment_base_offset != 0, Error::InvalidProgram,
              "segment %u is used but the file has no extended header giving a segment base",
              index);
  const fb::DataSegment* s = segments->Get(index);
  // Range checked against the file size at load.
  return loader_->load(static_cast<size_t>(header_.segment_base_offset + s->offset()),
                       static_cast<size_t>(s->size()), type);
}

Result<const uint8_t*> Program::constant_data(uint32_t index, size_t nbytes) const {
  const fb::Program* root = flatbuffer();
  if (constants_in_segment_) {
    const auto* offsets = root->constant_segment()->offsets();
    EMBER_CHECK(index < offsets->size(), Error::InvalidProgram,
                "constant %u does not exist (the constant table has %u entries)", index,
                offsets->size());
    const uint64_t offset = offsets->Get(index);
    uint64_t end = 0;
    EMBER_CHECK(!__builtin_add_overflow(offset, nbytes, &end) && end <= constant_segment_.size(),
                Error::InvalidProgram,
                "constant %u: %zu bytes at offset %" PRIu64 " leave the %zu-byte constant segment",
                index, nbytes, offset, constant_segment_.size());
    return constant_segment_.bytes() + offset;
  }
  const auto* buffers = root->constant_buffer();
  EMBER_CHECK(buffers != nullptr && index < buffers->size(), Error::InvalidProgram,
              "constant %u does not exist (the constant buffer has %u entries)", index,
              buffers == nullptr ? 0u : buffers->size());
  const auto* storage = buffers->Get(index)->storage();
  EMBER_CHECK(storage != nullptr && nbytes <= storage->size(), Error::InvalidProgram,
              "constant %u holds %u bytes, the tensor needs %zu", index,
              storage == nullptr ? 0u : storage->size(), nbytes);
  return storage->data();
}

Result<const uint8_t*> Program::mutable_data(uint32_t index, size_t nbytes) const {
  // A zero-sized tensor has no initial bytes to read: ExecuTorch's exporter still names an entry
  // for it and may write no mutable data segment at all.
  static constexpr uint8_t kNoBytes = 0;
  if (nbytes == 0) return &kNoBytes;
  const auto* mds = flatbuffer()->mutable_data_segments();
  EMBER_CHECK(mds != nullptr && mds->size() > 0, Error::InvalidProgram,
              "mutable tensor names initial data %u but the program has no mutable data", index);
  const auto* offsets = mds->Get(0)->offsets();
  EMBER_CHECK(index < offsets->size(), Error::InvalidProgram,
              "mutable data %u does not exist (the table has %u entries)", index, offsets->size());
  const uint64_t offset = offsets->Get(index);
  uint64_t end = 0;
  EMBER_CHECK(!__builtin_add_overflow(offset, nbytes, &end) && end <= mutable_segment_.size(),
              Error::InvalidProgram,
              "mutable data %u: %zu bytes at offset %" PRIu64 " leave the %zu-byte segment", index,
              nbytes, offset, mutable_segment_.size());
  return mutable_segment_.bytes() + offset;
}

// PTE-internal named data serves whole segments only, as in ExecuTorch (§4.7).
Result<TensorLayout> Program::PteNamedData::get_tensor_layout(std::string_view key) const {
  return fail(Error::NotImplemented,
              "a program's own named data has no tensor layouts (key '%.*s')",
              static_cast<int>(key.size()), key.data());
}

Result<FreeableBuffer> Program::PteNamedData::get_data(std::string_view key) const {
  const auto* named = root->named_data();
  for (flatbuffers::uoffset_t i = 0; named != nullptr && i < named->size(); ++i) {
    const fb::NamedData* nd = named->Get(i);
    if (key != std::string_view(nd->key()->c_str(), nd->key()->size())) continue;
    EMBER_CHECK(segment_base != 0, Error::InvalidProgram,
                "named data '%s' is in a segment but the file has no extended header",
                nd->key()->c_str());
    const fb::DataSegment* s = root->segments()->Get(nd->segment_index());
    return loader->load(static_cast<size_t>(segment_base + s->offset()),
                        static_cast<size_t>(s->size()), SegmentType::Backend);
  }
  return fail(Error::NotFound, "'%.*s' is missing from named data", static_cast<int>(key.size()),
              key.data());
}

Error Program::PteNamedData::load_data_into(std::string_view key, void* buffer, size_t size) const {
  Result<FreeableBuffer> data = get_data(key);
  if (!data.ok()) return data.error();
  EMBER_CHECK(data->size() >= size, Error::InvalidArgument,
              "named data '%.*s' holds %zu bytes; %zu were asked for", static_cast<int>(key.size()),
              key.data(), data->size(), size);
  if (size > 0) std::memcpy(buffer, data->data(), size);
  return Error::Ok;
}

size_t Program::PteNamedData::num_keys() const {
  return root->named_data() == nullptr ? 0 : root->named_data()->size();
}

Result<std::string_view> Program::PteNamedData::key(size_t index) const {
  EMBER_CHECK(index < num_keys(), Error::InvalidArgument, "key index %zu of %zu", index,
              num_keys());
  const auto* k = root->named_data()->Get(static_cast<flatbuffers::uoffset_t>(index))->key();
  return std::string_view(k->c_str(), k->size());
}

}  // namespace ember
