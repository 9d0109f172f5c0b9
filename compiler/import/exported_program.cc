#include "compiler/import/exported_program.h"

#include "compiler/import/exported_program_internal.h"
#include "compiler/import/json_access.h"
#include "compiler/ir/verifier.h"
#include "runtime/platform/loaders.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace ember::importer {

namespace ep_internal {

namespace {

uint32_t read_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t read_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::unique_ptr<Program> Importer::run() {
  const std::vector<uint8_t>& bytes = *file_;
  if (bytes.size() < kHeaderSize) {
    fail("header",
         "the file has " + std::to_string(bytes.size()) + " bytes, fewer than the 64-byte header");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    fail("header", "not an exported-program file (the magic is not \"EMBEREP\\0\")");
  }
  uint32_t version = read_u32(bytes.data() + 8);
  if (version != kFormatVersion) {
    fail("header", "format version " + std::to_string(version) + ", this importer reads " +
                       std::to_string(kFormatVersion));
  }
  uint32_t header_size = read_u32(bytes.data() + 12);
  uint64_t json_offset = read_u64(bytes.data() + 16);
  uint64_t json_size = read_u64(bytes.data() + 24);
  data_offset_ = read_u64(bytes.data() + 32);
  data_size_ = read_u64(bytes.data() + 40);
  if (header_size < kHeaderSize) fail("header", "header size below 64");
  check_range("header: JSON", json_offset, json_size, header_size);
  check_range("header: data", data_offset_, data_size_, header_size);
  if (data_offset_ % kAlignment != 0) fail("header", "the data offset is not 64-byte aligned");

  const char* text = reinterpret_cast<const char*>(bytes.data() + json_offset);
  json doc = json::parse(text, text + json_size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) fail("JSON", "not valid JSON");
  if (!doc.is_object()) fail("JSON", "the document is not an object");
  if (as_string(field(doc, "format", "document"), "format") != "ember.exported_program") {
    fail("format", "expected \"ember.exported_program\"");
  }
  if (as_int(field(doc, "version", "document"), "version") != kFormatVersion) {
    fail("version", "does not match the header's format version");
  }
  program_ = std::make_unique<Program>();
  read_operators(doc);
  read_symbols(doc);
  read_constant_methods(doc);
  read_tensors(doc);
  read_program_graph(doc);
  check_weights();
  // The checks above are per field; the verifier checks the whole (use before definition,
  // schemas, users) so that nothing inconsistent reaches the passes.
  Status valid = ir::verify(*program_);
  if (!valid.ok()) fail("graph", valid.message());
  return std::move(program_);
}

void Importer::check_range(const std::string& what, uint64_t offset, uint64_t size,
                           uint64_t minimum) {
  uint64_t end = 0;
  if (offset < minimum || __builtin_add_overflow(offset, size, &end) || end > file_->size()) {
    fail(what, "[" + std::to_string(offset) + ", +" + std::to_string(size) +
                   ") lies outside the file (" + std::to_string(file_->size()) + " bytes)");
  }
}

void Importer::read_operators(const json& doc) {
  const json* ops = optional_field(doc, "operators");
  if (ops == nullptr) return;
  if (!ops->is_object()) fail("operators", "expected an object");
  for (auto it = ops->begin(); it != ops->end(); ++it) {
    std::string where = "operators." + it.key();
    std::string text = as_string(it.value(), where);
    StatusOr<ir::OpSchema> schema = ir::OpSchema::parse(text);
    if (!schema.ok()) fail(where, schema.status().message());
    if (schema->qualified_name() != it.key()) fail(where, "the schema names another op");
    // A builtin schema wins: node arguments are checked against it below, so a program from
    // another PyTorch version whose arguments differ is refused there, by node.
    if (ir::OpRegistry::builtin().find(schema->name(), schema->overload()) != nullptr) continue;
    StatusOr<const ir::OpSchema*> added = program_->ops().add(text);
    if (!added.ok()) fail(where, added.status().message());
  }
}

void Importer::read_symbols(const json& doc) {
  const json& symbols = as_array(field(doc, "symbols", "document"), "symbols");
  for (size_t i = 0; i < symbols.size(); ++i) {
    std::string where = at("symbols", i);
    ir::Symbol s;
    s.name = as_string(field(symbols[i], "name", where), where + ".name");
    s.min = as_int(field(symbols[i], "min", where), where + ".min");
    s.max = as_int(field(symbols[i], "max", where), where + ".max");
    if (s.name.empty() || !std::isalpha(static_cast<unsigned char>(s.name[0])) ||
        !std::all_of(s.name.begin(), s.name.end(), is_ident_char)) {
      fail(where, "symbol name '" + s.name + "' is not an identifier");
    }
    if (s.min < 0 || s.max < s.min) fail(where, "bounds need 0 <= min <= max");
    if (program_->find_symbol(s.name)) fail(where, "symbol '" + s.name + "' appears twice");
    program_->symbols.push_back(s);
  }
}

void Importer::read_constant_methods(const json& doc) {
  const json* methods = optional_field(doc, "constant_methods");
  if (methods == nullptr) return;
  const json& list = as_array(*methods, "constant_methods");
  std::set<std::string> names = {"forward"};
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = at("constant_methods", i);
    if (!list[i].is_object()) fail(where, "expected an object");
    ir::ConstantMethod m;
    m.name = as_string(field(list[i], "name", where), where + ".name");
    if (m.name.empty() || !std::all_of(m.name.begin(), m.name.end(), is_ident_char) ||
        std::isdigit(static_cast<unsigned char>(m.name[0]))) {
      fail(where, "method name '" + m.name + "' is not an identifier");
    }
    if (!names.insert(m.name).second) fail(where, "method '" + m.name + "' appears twice");
    const json& value = field(list[i], "value", where);
    m.is_list = value.is_array();
    const json single = json::array({value});
    for (const json& v : m.is_list ? value : single) {
      std::string item = where + ".value";
      if (v.is_boolean()) {
        m.values.emplace_back(v.get<bool>());
      } else if (v.is_number_integer()) {
        m.values.emplace_back(as_int(v, item));
      } else if (v.is_number_float()) {
        m.values.emplace_back(v.get<double>());
      } else if (v.is_string()) {
        m.values.emplace_back(v.get<std::string>());
      } else {
        fail(item, "expected an integer, a float, a bool, a string or a list of them");
      }
    }
    program_->constant_methods.push_back(std::move(m));
  }
}

void Importer::read_tensors(const json& doc) {
  const json& tensors = as_array(field(doc, "tensors", "document"), "tensors");
  std::set<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string where = at("tensors", i);
    const json& t = tensors[i];
    ir::Weight w;
    w.name = as_string(field(t, "name", where), where + ".name");
    if (w.name.empty() || !names.insert(w.name).second) {
      fail(where, "tensor name '" + w.name + "' is empty or appears twice");
    }
    where = "tensor '" + w.name + "'";
    w.type.dtype = dtype(field(t, "dtype", where), where + ".dtype");
    const json& shape = as_array(field(t, "shape", where), where + ".shape");
    for (size_t d = 0; d < shape.size(); ++d) {
      w.type.shape.push_back(Dim(static_cast<int64_t>(as_size(shape[d], at(where + ".shape", d)))));
    }
    uint64_t offset = as_size(field(t, "offset", where), where + ".offset");
    uint64_t nbytes = as_size(field(t, "nbytes", where), where + ".nbytes");
    std::optional<int64_t> numel = w.type.numel_upper_bound();
    uint64_t expected = 0;
    if (!numel ||
        __builtin_mul_overflow(static_cast<uint64_t>(*numel), ir::dtype_size(w.type.dtype),
                               &expected) ||
        expected != nbytes) {
      fail(where, std::to_string(nbytes) + " bytes for a " + ir::to_string(w.type));
    }
    if (offset % kAlignment != 0)
      fail(where, "offset " + std::to_string(offset) + " is not 64-byte aligned");
    uint64_t end = 0;
    if (__builtin_add_overflow(offset, nbytes, &end) || end > data_size_) {
      fail(where, "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + nbytes) +
                      ") lie outside the data region (" + std::to_string(data_size_) + " bytes)");
    }
    if (const json* alias = optional_field(t, "alias_of")) {
      w.alias_of = as_string(*alias, where + ".alias_of");
    }
    w.storage = file_;
    w.offset = static_cast<size_t>(data_offset_ + offset);
    w.nbytes = static_cast<size_t>(nbytes);
    program_->weights.push_back(std::move(w));
  }
  for (const ir::Weight& w : program_->weights) {
    if (w.alias_of.empty()) continue;
    const ir::Weight* target = program_->find_weight(w.alias_of);
    if (target == nullptr || !target->alias_of.empty() || target->offset != w.offset ||
        target->type != w.type) {
      fail("tensor '" + w.name + "'",
           "alias_of '" + w.alias_of + "' does not name a tensor with the same bytes and type");
    }
  }
}

void Importer::read_program_graph(const json& doc) {
  const json& sig = field(doc, "signature", "document");
  const json& jinputs = as_array(field(sig, "inputs", "signature"), "signature.inputs");
  std::map<std::string, ir::InputSpec> specs;
  for (size_t i = 0; i < jinputs.size(); ++i) {
    std::string where = at("signature.inputs", i);
    const json& s = jinputs[i];
    std::string kind = as_string(field(s, "kind", where), where + ".kind");
    ir::InputSpec spec;
    if (kind == "user_input")
      spec.kind = ir::InputKind::UserInput;
    else if (kind == "parameter")
      spec.kind = ir::InputKind::Parameter;
    else if (kind == "buffer")
      spec.kind = ir::InputKind::Buffer;
    else if (kind == "constant")
      spec.kind = ir::InputKind::Constant;
    else
      fail(where, "unknown input kind '" + kind + "'");
    if (spec.kind != ir::InputKind::UserInput) {
      spec.target = as_string(field(s, "target", where), where + ".target");
      if (spec.target.empty()) fail(where, "empty target");
    }
    if (const json* aliases = optional_field(s, "aliases")) {
      as_array(*aliases, where + ".aliases");
      for (size_t k = 0; k < aliases->size(); ++k)
        spec.aliases.push_back(as_string((*aliases)[k], at(where + ".aliases", k)));
    }
    if (const json* persistent = optional_field(s, "persistent")) {
      if (!persistent->is_boolean()) fail(where + ".persistent", "expected true or false");
      spec.persistent = persistent->get<bool>();
    }
    std::string value = as_string(field(s, "value", where), where + ".value");
    if (!specs.emplace(value, spec).second) fail(where, "value '" + value + "' appears twice");
  }
  const json& g = field(doc, "graph", "document");
  graph(g, program_->graph(), "graph", 0, &specs);
  if (program_->graph().inputs().size() != specs.size()) {
    fail("signature.inputs", std::to_string(specs.size()) + " entries for " +
                                 std::to_string(program_->graph().inputs().size()) +
                                 " graph inputs");
  }
  const json& joutputs = as_array(field(sig, "outputs", "signature"), "signature.outputs");
  if (joutputs.size() != top_outputs_.size()) {
    fail("signature.outputs", std::to_string(joutputs.size()) + " entries for " +
                                  std::to_string(top_outputs_.size()) + " graph outputs");
  }
  for (size_t i = 0; i < joutputs.size(); ++i) {
    std::string where = at("signature.outputs", i);
    const json& s = joutputs[i];
    std::string kind = as_string(field(s, "kind", where), where + ".kind");
    ir::OutputSpec spec;
    if (kind == "user_output")
      spec.kind = ir::OutputKind::UserOutput;
    else if (kind == "buffer_mutation")
      spec.kind = ir::OutputKind::BufferMutation;
    else if (kind == "user_input_mutation")
      spec.kind = ir::OutputKind::UserInputMutation;
    else
      fail(where, "unknown output kind '" + kind + "'");
    if (spec.kind != ir::OutputKind::UserOutput) {
      spec.target = as_string(field(s, "target", where), where + ".target");
    }
    if (as_string(field(s, "value", where), where + ".value") != top_outputs_[i]->name()) {
      fail(where, "names another value than graph.outputs[" + std::to_string(i) + "]");
    }
    program_->add_output(top_outputs_[i], spec);
  }
  auto names = [&](const char* key, std::vector<std::string>& out) {
    const json* list = optional_field(sig, key);
    if (list == nullptr) return;
    std::string where = std::string("signature.") + key;
    as_array(*list, where);
    for (size_t i = 0; i < list->size(); ++i) out.push_back(as_string((*list)[i], at(where, i)));
  };
  names("mutated_buffers", program_->mutated_buffers);
  names("mutated_parameters", program_->mutated_parameters);
  names("mutated_user_inputs", program_->mutated_user_inputs);
}

// Every parameter, buffer and constant the graph reads has stored data of its type (C2: static).
void Importer::check_weights() {
  for (size_t i = 0; i < program_->graph().inputs().size(); ++i) {
    const ir::InputSpec& spec = program_->input_spec(i);
    if (spec.kind == ir::InputKind::UserInput) continue;
    const Value* v = program_->graph().inputs()[i];
    std::string where = std::string(ir::input_kind_name(spec.kind)) + " '" + spec.target + "'";
    if (!v->is_tensor()) fail(where, "is not a tensor");
    std::vector<std::string> fqns = spec.aliases;
    fqns.insert(fqns.begin(), spec.target);
    for (const std::string& fqn : fqns) {
      const ir::Weight* w = program_->find_weight(fqn);
      if (w == nullptr) fail(where, "has no data in the file (no tensor '" + fqn + "')");
      if (w->type.dtype != v->tensor_type().dtype || w->type.shape != v->tensor_type().shape) {
        fail(where, "input %" + v->name() + " is " + ir::to_string(v->type()) +
                        " but the stored tensor '" + fqn + "' is " + ir::to_string(w->type));
      }
    }
  }
  for (const std::string& b : program_->mutated_buffers) {
    if (program_->find_weight(b) == nullptr)
      fail("signature.mutated_buffers", "no tensor '" + b + "'");
  }
}

}  // namespace ep_internal

using ep_internal::Importer;
using ir::Program;
using ir::Status;
using ir::StatusOr;

ir::StatusOr<std::unique_ptr<ir::Program>> import_exported_program(
    std::shared_ptr<const std::vector<uint8_t>> file) {
  if (file == nullptr) return Status::error("import_exported_program: no file");
  try {
    Importer importer(std::move(file));
    return importer.run();
  } catch (const ImportError& e) {
    return Status::error(e.message);
  } catch (const json::exception& e) {
    // The accessors above check every type, so this is a safety net, not a path.
    return Status::error(std::string("JSON: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status::error("out of memory while importing");
  }
}

ir::StatusOr<std::shared_ptr<std::vector<uint8_t>>> read_whole_file(const std::string& path) {
  Result<size_t> size = regular_file_size(path.c_str());  // no directory, FIFO or device
  if (!size.ok()) return Status::error(last_error_message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open: " + std::strerror(errno));
  try {
    auto bytes = std::make_shared<std::vector<uint8_t>>(*size);
    if (*size > 0 &&
        !in.read(reinterpret_cast<char*>(bytes->data()), static_cast<std::streamsize>(*size))) {
      return Status::error(path + ": cannot read");
    }
    return bytes;
  } catch (const std::bad_alloc&) {
    return Status::error(path + ": out of memory for " + std::to_string(*size) + " bytes");
  }
}

ir::StatusOr<std::unique_ptr<ir::Program>> import_exported_program_file(const std::string& path) {
  StatusOr<std::shared_ptr<std::vector<uint8_t>>> bytes = read_whole_file(path);
  if (!bytes.ok()) return bytes.status();
  StatusOr<std::unique_ptr<Program>> program = import_exported_program(std::move(*bytes));
  if (!program.ok()) return program.status().with_context(path + ": ");
  return program;
}

}  // namespace ember::importer
