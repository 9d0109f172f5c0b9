#include "compiler/emit/pte_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "ember/schema/flat_tensor_generated.h"
#include "ember/schema/program_generated.h"

namespace ember::emit {
namespace fb = executorch_flatbuffer;
namespace ft = flat_tensor_flatbuffer;

namespace {

constexpr size_t kProgramHeaderLength = 32;
constexpr size_t kPtdHeaderLength = 40;
constexpr size_t kPtdPaddedHeaderLength = 48;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

template <typename T>
void put_le(std::vector<uint8_t>& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof(T));
}

// Inserts a header of `padded` bytes after byte 7 of a finished FlatBuffer and moves the root
// offset past it; every other offset in a FlatBuffer is relative, so nothing else changes.
std::vector<uint8_t> insert_header(const uint8_t* buf, size_t size, size_t padded) {
  std::vector<uint8_t> out(size + padded, 0);
  std::memcpy(out.data(), buf, 8);
  std::memcpy(out.data() + 8 + padded, buf + 8, size - 8);
  uint32_t root;
  std::memcpy(&root, buf, 4);
  put_le<uint32_t>(out, 0, root + static_cast<uint32_t>(padded));
  return out;
}

// Concatenates blobs into segment data: each at prev_end rounded up to `alignment`.
struct SegmentTable {
  std::vector<uint8_t> data;
  std::vector<std::pair<uint64_t, uint64_t>> entries;  // offset, size
  uint32_t add(const std::vector<uint8_t>& blob, uint64_t alignment) {
    const uint64_t prev_end = entries.empty() ? 0 : entries.back().first + entries.back().second;
    const uint64_t offset = blob.empty() && entries.empty() ? 0 : align_up(prev_end, alignment);
    data.resize(offset, 0);
    data.insert(data.end(), blob.begin(), blob.end());
    entries.emplace_back(offset, blob.size());
    return static_cast<uint32_t>(entries.size() - 1);
  }
};

struct Packed {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> offsets{0};  // entry 0: the placeholder
  uint32_t add(const std::vector<uint8_t>& data, uint64_t alignment) {
    const uint64_t offset = align_up(bytes.size(), alignment);
    bytes.resize(offset, 0);
    bytes.insert(bytes.end(), data.begin(), data.end());
    offsets.push_back(offset);
    return static_cast<uint32_t>(offsets.size() - 1);
  }
};

std::vector<uint8_t> contiguous_order(size_t rank) {
  std::vector<uint8_t> d(rank);
  for (size_t i = 0; i < rank; ++i) d[i] = static_cast<uint8_t>(i);
  return d;
}

}  // namespace

void MethodSpec::call(const std::string& op_name, const std::string& overload,
                      std::vector<int32_t> args) {
  int32_t op = -1;
  for (size_t i = 0; i < operators.size(); ++i) {
    if (operators[i].name == op_name && operators[i].overload == overload) {
      op = static_cast<int32_t>(i);
    }
  }
  if (op < 0) {
    operators.push_back({op_name, overload});
    op = static_cast<int32_t>(operators.size() - 1);
  }
  append<KernelCallSpec>(op, std::move(args));
}

Result<WrittenProgram> write_program(const ProgramSpec& spec) {
  Packed constants, mutables;
  std::vector<NamedTensor> externals;
  std::vector<std::vector<uint8_t>> delegate_blobs;
  // Per method and value: the constant or mutable table index; per delegate: its blob index.
  std::vector<std::vector<uint32_t>> data_index(spec.methods.size());
  std::vector<std::vector<uint32_t>> blob_index(spec.methods.size());

  for (size_t m = 0; m < spec.methods.size(); ++m) {
    const MethodSpec& method = spec.methods[m];
    const size_t n = method.values.size();
    data_index[m].assign(n, 0);
    auto check_index = [&](int32_t idx, const char* what) -> Error {
      EMBER_CHECK(idx >= 0 && static_cast<size_t>(idx) < n, Error::InvalidArgument,
                  "method '%s': %s refers to value %d of %zu", method.name.c_str(), what, idx, n);
      return Error::Ok;
    };
    for (size_t v = 0; v < n; ++v) {
      const ValueSpec& value = method.values[v];
      if (const auto* t = std::get_if<TensorSpec>(&value)) {
        Result<size_t> nbytes = checked_nbytes(t->dtype, t->sizes);
        if (!nbytes.ok()) return nbytes.error();
        const bool has_data = t->storage == TensorSpec::Storage::Constant ||
                              t->storage == TensorSpec::Storage::Mutable ||
                              t->storage == TensorSpec::Storage::External;
        EMBER_CHECK(!has_data || t->data.size() == *nbytes, Error::InvalidArgument,
                    "method '%s': value %zu has %zu bytes of data, its shape needs %zu",
                    method.name.c_str(), v, t->data.size(), *nbytes);
        if (t->storage == TensorSpec::Storage::Constant) {
          data_index[m][v] = constants.add(t->data, spec.constant_alignment);
        } else if (t->storage == TensorSpec::Storage::Mutable) {
          data_index[m][v] = mutables.add(t->data, 1);
        } else if (t->storage == TensorSpec::Storage::External) {
          EMBER_CHECK(!t->fqn.empty(), Error::InvalidArgument,
                      "method '%s': external value %zu has no name", method.name.c_str(), v);
          bool seen = false;
          for (const NamedTensor& e : externals) {
            if (e.key != t->fqn) continue;
            EMBER_CHECK(e.data == t->data && e.sizes == t->sizes && e.dtype == t->dtype,
                        Error::InvalidArgument,
                        "'%s' is stored twice with different contents or layout", t->fqn.c_str());
            seen = true;
          }
          if (!seen) externals.push_back({t->fqn, t->dtype, t->sizes, t->dim_order, t->data});
        }
      } else if (const auto* list = std::get_if<IntListSpec>(&value)) {
        for (int32_t item : list->items) {
          EMBER_TRY(check_index(item, "an IntList item"));
          EMBER_CHECK(std::holds_alternative<int64_t>(method.values[item]), Error::InvalidArgument,
                      "method '%s': IntList value %zu refers to value %d, which is not an Int",
                      method.name.c_str(), v, item);
        }
      } else if (const auto* tl = std::get_if<TensorListSpec>(&value)) {
        for (int32_t item : tl->items) {
          if (tl->optional && item == -1) continue;
          EMBER_CHECK(item >= 0 && static_cast<size_t>(item) < v, Error::InvalidArgument,
                      "method '%s': TensorList value %zu refers to value %d; members must come "
                      "before the list",
                      method.name.c_str(), v, item);
        }
      }
    }
    for (int32_t i : method.inputs) EMBER_TRY(check_index(i, "an input"));
    for (int32_t o : method.outputs) EMBER_TRY(check_index(o, "an output"));
    for (const DelegateSpec& d : method.delegates) {
      uint32_t index = 0;
      while (index < delegate_blobs.size() && delegate_blobs[index] != d.processed) ++index;
      if (index == delegate_blobs.size()) delegate_blobs.push_back(d.processed);
      blob_index[m].push_back(index);
    }
  }

  // Backend named data: the .pte's ones get a segment per distinct byte string; the .ptd's join
  // the external tensors (one entry per key there too).
  std::vector<std::pair<std::string, uint32_t>> pte_named;  // key, index into named_blobs
  std::vector<const std::vector<uint8_t>*> named_blobs;
  for (size_t i = 0; i < spec.named_data.size(); ++i) {
    const NamedDataSpec& nd = spec.named_data[i];
    EMBER_CHECK(!nd.key.empty(), Error::InvalidArgument, "named data %zu has no key", i);
    bool seen = false;
    for (size_t j = 0; j < i; ++j) {
      const NamedDataSpec& other = spec.named_data[j];
      if (other.key != nd.key) continue;
      EMBER_CHECK(other.data == nd.data && other.external == nd.external, Error::InvalidArgument,
                  "named data '%s' is stored twice with different contents", nd.key.c_str());
      seen = true;
    }
    if (seen) continue;
    if (nd.external) {
      std::vector<int32_t> sizes = nd.sizes;
      if (sizes.empty() && nd.dtype == ScalarType::Byte) {
        sizes.push_back(static_cast<int32_t>(nd.data.size()));
      }
      Result<size_t> nbytes = checked_nbytes(nd.dtype, sizes);
      if (!nbytes.ok()) return nbytes.error();
      EMBER_CHECK(*nbytes == nd.data.size(), Error::InvalidArgument,
                  "named data '%s' holds %zu bytes, its layout needs %zu", nd.key.c_str(),
                  nd.data.size(), *nbytes);
      bool stored = false;
      for (const NamedTensor& e : externals) {
        if (e.key != nd.key) continue;
        EMBER_CHECK(e.data == nd.data && e.sizes == sizes && e.dtype == nd.dtype,
                    Error::InvalidArgument,
                    "'%s' is stored twice with different contents or layout", nd.key.c_str());
        stored = true;
      }
      if (!stored) externals.push_back({nd.key, nd.dtype, sizes, {}, nd.data});
      continue;
    }
    uint32_t blob = 0;
    while (blob < named_blobs.size() && *named_blobs[blob] != nd.data) ++blob;
    if (blob == named_blobs.size()) named_blobs.push_back(&nd.data);
    pte_named.emplace_back(nd.key, blob);
  }

  // Segments in EXIR's order: constants, mutable data, delegate blobs, then named data.
  SegmentTable segments;
  const uint32_t constant_segment = segments.add(constants.bytes, spec.segment_alignment);
  const bool has_mutable = mutables.offsets.size() > 1;
  const uint32_t mutable_segment =
      has_mutable ? segments.add(mutables.bytes, spec.segment_alignment) : 0;
  std::vector<uint32_t> blob_segment;
  for (const auto& blob : delegate_blobs)
    blob_segment.push_back(segments.add(blob, spec.segment_alignment));
  std::vector<uint32_t> named_segment;
  for (const std::vector<uint8_t>* blob : named_blobs)
    named_segment.push_back(segments.add(*blob, spec.segment_alignment));

  flatbuffers::FlatBufferBuilder fbb(4096);
  std::vector<flatbuffers::Offset<fb::ExecutionPlan>> plans;
  for (size_t m = 0; m < spec.methods.size(); ++m) {
    const MethodSpec& method = spec.methods[m];
    std::vector<flatbuffers::Offset<fb::EValue>> values;
    for (size_t v = 0; v < method.values.size(); ++v) {
      const ValueSpec& value = method.values[v];
      fb::KernelTypes type = fb::KernelTypes::Null;
      flatbuffers::Offset<void> payload;
      if (std::holds_alternative<NoneSpec>(value)) {
        payload = fb::CreateNull(fbb).Union();
      } else if (const auto* i = std::get_if<int64_t>(&value)) {
        type = fb::KernelTypes::Int;
        payload = fb::CreateInt(fbb, *i).Union();
      } else if (const auto* d = std::get_if<double>(&value)) {
        type = fb::KernelTypes::Double;
        payload = fb::CreateDouble(fbb, *d).Union();
      } else if (const auto* b = std::get_if<bool>(&value)) {
        type = fb::KernelTypes::Bool;
        payload = fb::CreateBool(fbb, *b).Union();
      } else if (const auto* s = std::get_if<std::string>(&value)) {
        type = fb::KernelTypes::String;
        payload = fb::CreateString(fbb, fbb.CreateString(*s)).Union();
      } else if (const auto* t = std::get_if<TensorSpec>(&value)) {
        type = fb::KernelTypes::Tensor;
        const auto sizes = fbb.CreateVector(t->sizes);
        const auto dim_order = fbb.CreateVector(
            t->dim_order.empty() ? contiguous_order(t->sizes.size()) : t->dim_order);
        flatbuffers::Offset<fb::AllocationDetails> alloc;
        if (t->storage == TensorSpec::Storage::Planned ||
            t->storage == TensorSpec::Storage::Mutable) {
          alloc = fb::CreateAllocationDetails(fbb, t->memory_id,
                                              static_cast<uint32_t>(t->offset & 0xffffffffu),
                                              static_cast<uint32_t>(t->offset >> 32));
        }
        flatbuffers::Offset<fb::ExtraTensorInfo> extra;
        if (!t->fqn.empty()) {
          extra = fb::CreateExtraTensorInfo(fbb, 0, fbb.CreateString(t->fqn),
                                            t->storage == TensorSpec::Storage::External
                                                ? fb::TensorDataLocation::EXTERNAL
                                                : fb::TensorDataLocation::SEGMENT);
        }
        payload = fb::CreateTensor(fbb, static_cast<fb::ScalarType>(t->dtype), 0, sizes, dim_order,
                                   false, data_index[m][v], alloc, 0,
                                   static_cast<fb::TensorShapeDynamism>(t->dynamism), extra)
                      .Union();
      } else if (const auto* il = std::get_if<IntListSpec>(&value)) {
        type = fb::KernelTypes::IntList;
        std::vector<int64_t> items(il->items.begin(), il->items.end());
        payload = fb::CreateIntList(fbb, fbb.CreateVector(items)).Union();
      } else if (const auto* dl = std::get_if<std::vector<double>>(&value)) {
        type = fb::KernelTypes::DoubleList;
        payload = fb::CreateDoubleList(fbb, fbb.CreateVector(*dl)).Union();
      } else if (const auto* bl = std::get_if<std::vector<bool>>(&value)) {
        type = fb::KernelTypes::BoolList;
        std::vector<uint8_t> items(bl->begin(), bl->end());
        payload = fb::CreateBoolList(fbb, fbb.CreateVector(items)).Union();
      } else if (const auto* tl = std::get_if<TensorListSpec>(&value)) {
        type = tl->optional ? fb::KernelTypes::OptionalTensorList : fb::KernelTypes::TensorList;
        const auto items = fbb.CreateVector(tl->items);
        payload = tl->optional ? fb::CreateOptionalTensorList(fbb, items).Union()
                               : fb::CreateTensorList(fbb, items).Union();
      }
      values.push_back(fb::CreateEValue(fbb, type, payload));
    }

    std::vector<flatbuffers::Offset<fb::Instruction>> instructions;
    for (const InstructionSpec& ins : method.instructions) {
      if (const auto* k = std::get_if<KernelCallSpec>(&ins)) {
        instructions.push_back(fb::CreateInstruction(
            fbb, fb::InstructionArguments::KernelCall,
            fb::CreateKernelCall(fbb, k->op_index, fbb.CreateVector(k->args)).Union()));
      } else if (const auto* d = std::get_if<DelegateCallSpec>(&ins)) {
        instructions.push_back(fb::CreateInstruction(
            fbb, fb::InstructionArguments::DelegateCall,
            fb::CreateDelegateCall(fbb, d->delegate_index, fbb.CreateVector(d->args)).Union()));
      } else if (const auto* mv = std::get_if<MoveSpec>(&ins)) {
        instructions.push_back(
            fb::CreateInstruction(fbb, fb::InstructionArguments::MoveCall,
                                  fb::CreateMoveCall(fbb, mv->from, mv->to).Union()));
      } else if (const auto* j = std::get_if<JumpFalseSpec>(&ins)) {
        instructions.push_back(
            fb::CreateInstruction(fbb, fb::InstructionArguments::JumpFalseCall,
                                  fb::CreateJumpFalseCall(fbb, j->cond, j->destination).Union()));
      } else if (const auto* f = std::get_if<FreeSpec>(&ins)) {
        instructions.push_back(fb::CreateInstruction(fbb, fb::InstructionArguments::FreeCall,
                                                     fb::CreateFreeCall(fbb, f->value).Union()));
      }
    }
    const std::vector<int32_t> empty;
    const auto chain = fb::CreateChain(fbb, fbb.CreateVector(empty), fbb.CreateVector(empty),
                                       fbb.CreateVector(instructions));
    std::vector<flatbuffers::Offset<fb::Operator>> operators;
    for (const OperatorSpec& op : method.operators) {
      operators.push_back(
          fb::CreateOperator(fbb, fbb.CreateString(op.name), fbb.CreateString(op.overload)));
    }
    std::vector<flatbuffers::Offset<fb::BackendDelegate>> delegates;
    for (size_t d = 0; d < method.delegates.size(); ++d) {
      const DelegateSpec& del = method.delegates[d];
      std::vector<flatbuffers::Offset<fb::CompileSpec>> specs;
      for (const auto& [key, val] : del.compile_specs) {
        specs.push_back(fb::CreateCompileSpec(fbb, fbb.CreateString(key), fbb.CreateVector(val)));
      }
      delegates.push_back(fb::CreateBackendDelegate(
          fbb, fbb.CreateString(del.id),
          fb::CreateBackendDelegateDataReference(fbb, fb::DataLocation::SEGMENT,
                                                 blob_segment[blob_index[m][d]]),
          fbb.CreateVector(specs)));
    }
    std::vector<int64_t> arenas{0};
    arenas.insert(arenas.end(), method.arena_sizes.begin(), method.arena_sizes.end());
    const std::vector<flatbuffers::Offset<fb::Chain>> chains{chain};
    flatbuffers::Offset<fb::ContainerMetadata> containers;
    if (!method.input_spec.empty() || !method.output_spec.empty()) {
      containers = fb::CreateContainerMetadata(fbb, fbb.CreateString(method.input_spec),
                                               fbb.CreateString(method.output_spec));
    }
    plans.push_back(fb::CreateExecutionPlan(
        fbb, fbb.CreateString(method.name), containers, fbb.CreateVector(values),
        fbb.CreateVector(method.inputs), fbb.CreateVector(method.outputs), fbb.CreateVector(chains),
        fbb.CreateVector(operators), fbb.CreateVector(delegates), fbb.CreateVector(arenas)));
  }

  std::vector<flatbuffers::Offset<fb::DataSegment>> segment_tables;
  for (const auto& [offset, size] : segments.entries) {
    segment_tables.push_back(fb::CreateDataSegment(fbb, offset, size));
  }
  const auto constant_table =
      fb::CreateSubsegmentOffsets(fbb, constant_segment, fbb.CreateVector(constants.offsets));
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::SubsegmentOffsets>>>
      mutable_tables;
  if (has_mutable) {
    const std::vector<flatbuffers::Offset<fb::SubsegmentOffsets>> m{
        fb::CreateSubsegmentOffsets(fbb, mutable_segment, fbb.CreateVector(mutables.offsets))};
    mutable_tables = fbb.CreateVector(m);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::NamedData>>> named_table;
  if (!pte_named.empty()) {
    std::vector<flatbuffers::Offset<fb::NamedData>> named;
    for (const auto& [key, blob] : pte_named) {
      named.push_back(fb::CreateNamedData(fbb, fbb.CreateString(key), named_segment[blob]));
    }
    named_table = fbb.CreateVector(named);
  }
  const std::vector<flatbuffers::Offset<fb::Buffer>> no_buffers;
  const std::vector<flatbuffers::Offset<fb::BackendDelegateInlineData>> no_inline;
  const auto root = fb::CreateProgram(fbb, 0, fbb.CreateVector(plans), fbb.CreateVector(no_buffers),
                                      fbb.CreateVector(no_inline), fbb.CreateVector(segment_tables),
                                      constant_table, mutable_tables, named_table);
  fb::FinishProgramBuffer(fbb, root);

  WrittenProgram out;
  // The runtime loads every segment the program refers to through the extended header's segment
  // base, even an empty one (the initial values of zero-sized mutable tensors, zero-sized
  // constants): without the header such a program would be refused at load.
  const bool uses_segments = !segments.data.empty() || constants.offsets.size() > 1 ||
                             has_mutable || !delegate_blobs.empty() || !named_blobs.empty();
  if (!uses_segments) {
    out.pte.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  } else {
    out.pte = insert_header(fbb.GetBufferPointer(), fbb.GetSize(), kProgramHeaderLength);
    const uint64_t program_size = out.pte.size();
    const uint64_t base = align_up(program_size, spec.segment_alignment);
    std::memcpy(out.pte.data() + 8, "eh00", 4);
    put_le<uint32_t>(out.pte, 12, kProgramHeaderLength);
    put_le<uint64_t>(out.pte, 16, program_size);
    put_le<uint64_t>(out.pte, 24, base);
    put_le<uint64_t>(out.pte, 32, segments.data.size());
    out.pte.resize(base, 0);
    out.pte.insert(out.pte.end(), segments.data.begin(), segments.data.end());
  }
  if (!externals.empty()) out.ptd = write_ptd(externals);
  return out;
}

std::vector<uint8_t> write_ptd(const std::vector<NamedTensor>& tensors) {
  constexpr uint64_t kSegmentAlignment = 128;
  SegmentTable segments;
  std::vector<uint32_t> segment_of;
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t same = 0;
    while (same < i && tensors[same].data != tensors[i].data) ++same;
    segment_of.push_back(same < i ? segment_of[same]
                                  : segments.add(tensors[i].data, kSegmentAlignment));
  }
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<ft::NamedData>> named;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const NamedTensor& t = tensors[i];
    const auto layout = ft::CreateTensorLayout(
        fbb, static_cast<fb::ScalarType>(t.dtype), fbb.CreateVector(t.sizes),
        fbb.CreateVector(t.dim_order.empty() ? contiguous_order(t.sizes.size()) : t.dim_order));
    named.push_back(ft::CreateNamedData(fbb, fbb.CreateString(t.key), segment_of[i], layout));
  }
  std::vector<flatbuffers::Offset<ft::DataSegment>> segment_tables;
  for (const auto& [offset, size] : segments.entries) {
    segment_tables.push_back(ft::CreateDataSegment(fbb, offset, size));
  }
  const auto root =
      ft::CreateFlatTensor(fbb, 0, fbb.CreateVector(segment_tables), fbb.CreateVector(named));
  ft::FinishFlatTensorBuffer(fbb, root);

  std::vector<uint8_t> out =
      insert_header(fbb.GetBufferPointer(), fbb.GetSize(), kPtdPaddedHeaderLength);
  const uint64_t base = align_up(out.size(), kSegmentAlignment);
  std::memcpy(out.data() + 8, "FH01", 4);
  put_le<uint32_t>(out, 12, kPtdHeaderLength);
  put_le<uint64_t>(out, 16, kPtdPaddedHeaderLength);
  put_le<uint64_t>(out, 24, fbb.GetSize());
  put_le<uint64_t>(out, 32, base);
  put_le<uint64_t>(out, 40, segments.data.size());
  out.resize(base, 0);
  out.insert(out.end(), segments.data.begin(), segments.data.end());
  return out;
}

Error write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  EMBER_CHECK(f != nullptr, Error::AccessFailed, "cannot write '%s': %s", path.c_str(),
              std::strerror(errno));
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const bool closed = std::fclose(f) == 0;
  EMBER_CHECK(written == bytes.size() && closed, Error::AccessFailed, "writing '%s' failed",
              path.c_str());
  return Error::Ok;
}

}  // namespace ember::emit
