#include "compiler/import/pt2.h"

#include <cctype>
#include <cstring>
#include <fstream>

#include "compiler/import/exported_program.h"
#include "compiler/import/pt2_internal.h"
#include "runtime/platform/loaders.h"

namespace ember::importer {

using ir::Status;
using ir::StatusOr;

namespace pt2_internal {

json Translator::run() {
  find_prefix();
  check_versions();
  const ZipEntry* model = zip_.find(prefix_ + "models/model.json");
  const char* text = reinterpret_cast<const char*>(model->data.data());
  json doc = json::parse(text, text + model->data.size(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) fail(model->name, "not a valid JSON object");
  const json& version = field(doc, "schema_version", "model.json");
  const int64_t major = as_int(field(version, "major", "schema_version"), "schema_version.major");
  const int64_t minor = as_int(field(version, "minor", "schema_version"), "schema_version.minor");
  if (major != kPt2SchemaMajor) {
    fail("model.json", "serialized-program schema version " + std::to_string(major) + "." +
                           std::to_string(minor) + "; Ember reads schema major version " +
                           std::to_string(kPt2SchemaMajor) +
                           " (torch 2.15's); save the program with that torch");
  }
  read_symbols(doc);
  read_tensor_configs();
  const json& gm = field(doc, "graph_module", "model.json");
  const json& graph = field(gm, "graph", "graph_module");
  const json& sig = field(gm, "signature", "graph_module");

  json out_doc;
  out_doc["format"] = "ember.exported_program";
  out_doc["version"] = 1;
  std::string torch_version = "unknown";
  if (const json* tv = optional_field(doc, "torch_version"); tv != nullptr && tv->is_string()) {
    torch_version = tv->get<std::string>();
  }
  out_doc["producer"] = {{"ember", "0.1.0"},
                         {"torch", torch_version},
                         {"capture", "torch.export.save/schema " + std::to_string(major) + "." +
                                         std::to_string(minor)}};
  json symbols = json::array();
  for (const auto& [name, range] : symbols_) {
    symbols.push_back({{"name", name}, {"min", range.first}, {"max", range.second}});
  }
  out_doc["symbols"] = symbols;
  json signature = read_signature(sig);
  out_doc["graph"] = translate_graph(graph, "graph", 0, &signature);
  if (!unsupported_.empty()) {
    std::string m = std::to_string(unsupported_.size()) +
                    " node(s) call ops Ember has no schema for (" +
                    std::to_string(unsupported_ops_.size()) + " distinct:";
    for (const std::string& op : unsupported_ops_) m += " " + op;
    m += "):";
    for (const std::string& l : unsupported_) m += "\n  " + l;
    m += kPt2DecomposeHint;
    throw ImportError{m};
  }
  out_doc["signature"] = signature;
  json operators = json::object();
  for (const ir::OpSchema* s : extra_used_) operators[s->qualified_name()] = s->to_string();
  out_doc["operators"] = operators;
  out_doc["tensors"] = tensors_;
  return out_doc;
}

void Translator::find_prefix() {
  std::vector<std::string> found;
  for (const ZipEntry& e : zip_.entries()) {
    constexpr std::string_view kModel = "models/model.json";
    if (e.name.size() >= kModel.size() &&
        e.name.compare(e.name.size() - kModel.size(), kModel.size(), kModel) == 0) {
      const std::string prefix = e.name.substr(0, e.name.size() - kModel.size());
      if (prefix.empty() || (prefix.back() == '/' && prefix.find('/') == prefix.size() - 1)) {
        found.push_back(prefix);
      }
    }
  }
  if (found.size() != 1) {
    fail("archive", found.empty()
                        ? "no <name>/models/model.json: not an archive of torch.export.save"
                        : "holds " + std::to_string(found.size()) +
                              " models/model.json; Ember reads archives of one program");
  }
  prefix_ = found[0];
}

std::string Translator::entry_text(const std::string& name, bool required) {
  const ZipEntry* e = zip_.find(prefix_ + name);
  if (e == nullptr) {
    if (required) fail("archive", "missing entry '" + prefix_ + name + "'");
    return {};
  }
  std::string s(reinterpret_cast<const char*>(e->data.data()), e->data.size());
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

void Translator::check_versions() {
  const std::string version = entry_text("archive_version", true);
  if (version != kPt2ArchiveVersion) {
    fail(prefix_ + "archive_version", "archive version '" + version.substr(0, 32) +
                                          "'; Ember reads archive version '" + kPt2ArchiveVersion +
                                          "' (torch 2.15's)");
  }
  const std::string format = entry_text("archive_format", false);
  if (!format.empty() && format != "pt2") {
    fail(prefix_ + "archive_format", "format '" + format.substr(0, 32) + "', expected 'pt2'");
  }
  const std::string order = entry_text("byteorder", false);
  if (!order.empty() && order != "little") {
    fail(prefix_ + "byteorder", "'" + order.substr(0, 32) + "'; Ember reads little-endian data");
  }
}

void Translator::read_symbols(const json& doc) {
  const json* ranges = optional_field(doc, "range_constraints");
  if (ranges == nullptr) return;
  if (!ranges->is_object()) fail("range_constraints", "expected an object");
  for (auto it = ranges->begin(); it != ranges->end(); ++it) {
    // Keys are sympy's str(); derived expressions ("2*s0") carry no symbol of their own.
    if (!is_identifier(it.key())) continue;
    const std::string where = "range_constraints." + it.key();
    const json* lo = optional_field(it.value(), "min_val");
    const json* hi = optional_field(it.value(), "max_val");
    if (hi == nullptr) {
      fail(where, "the dynamic size '" + it.key() +
                      "' has no upper bound; give its torch.export.Dim a max");
    }
    const int64_t min = lo == nullptr ? 0 : as_int(*lo, where + ".min_val");
    const int64_t max = as_int(*hi, where + ".max_val");
    if (min < 0 || max < min) fail(where, "bounds need 0 <= min <= max");
    symbols_[it.key()] = {min, max};
  }
}

void Translator::read_tensor_configs() {
  for (const char* folder : {"weights", "constants"}) {
    const std::string dir = std::string("data/") + folder + "/";
    const std::string name = dir + "model_" + folder + "_config.json";
    const ZipEntry* e = zip_.find(prefix_ + name);
    if (e == nullptr) continue;
    const char* text = reinterpret_cast<const char*>(e->data.data());
    json config = json::parse(text, text + e->data.size(), nullptr, false);
    if (config.is_discarded()) fail(e->name, "not valid JSON");
    const json& entries = field(config, "config", e->name);
    if (!entries.is_object()) fail(e->name, "config is not an object");
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      configs_[it.key()] = {prefix_ + dir, it.value()};
    }
  }
}

}  // namespace pt2_internal

namespace {

using pt2_internal::Blob;
using pt2_internal::Translator;

void put_le(std::vector<uint8_t>& out, size_t at, uint64_t v, int width) {
  for (int i = 0; i < width; ++i)
    out[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

ir::StatusOr<std::shared_ptr<std::vector<uint8_t>>> pt2_to_exported_program(
    std::shared_ptr<const std::vector<uint8_t>> archive) {
  StatusOr<ZipArchive> zip = ZipArchive::open(std::move(archive));
  if (!zip.ok()) return zip.status();
  try {
    Translator t(*zip);
    const std::string text = t.run().dump();
    const uint64_t data_offset =
        (kHeaderSize + text.size() + kAlignment - 1) / kAlignment * kAlignment;
    auto file = std::make_shared<std::vector<uint8_t>>(data_offset + t.data_size(), 0);
    std::memcpy(file->data(), kMagic, sizeof(kMagic));
    put_le(*file, 8, kFormatVersion, 4);
    put_le(*file, 12, kHeaderSize, 4);
    put_le(*file, 16, kHeaderSize, 8);
    put_le(*file, 24, text.size(), 8);
    put_le(*file, 32, data_offset, 8);
    put_le(*file, 40, t.data_size(), 8);
    std::memcpy(file->data() + kHeaderSize, text.data(), text.size());
    for (const Blob& b : t.blobs()) {
      if (!b.bytes.empty())
        std::memcpy(file->data() + data_offset + b.offset, b.bytes.data(), b.bytes.size());
    }
    return file;
  } catch (const ImportError& e) {
    return Status::error(e.message);
  } catch (const json::exception& e) {
    // The accessors check every type, so this is a safety net, not a path.
    return Status::error(std::string("model.json: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status::error("out of memory while reading the archive");
  } catch (const std::exception& e) {
    return Status::error(std::string("reading the archive: ") + e.what());
  }
}

ir::StatusOr<std::unique_ptr<ir::Program>> import_pt2(
    std::shared_ptr<const std::vector<uint8_t>> archive) {
  StatusOr<std::shared_ptr<std::vector<uint8_t>>> ep = pt2_to_exported_program(std::move(archive));
  if (!ep.ok()) return ep.status();
  StatusOr<std::unique_ptr<ir::Program>> p = import_exported_program(std::move(*ep));
  // The document is the archive's translation: its errors name the translated program's nodes.
  if (!p.ok()) return p.status().with_context("translated program: ");
  return p;
}

ir::StatusOr<std::unique_ptr<ir::Program>> import_pt2_file(const std::string& path) {
  StatusOr<std::shared_ptr<std::vector<uint8_t>>> bytes = read_whole_file(path);
  if (!bytes.ok()) return bytes.status();
  StatusOr<std::unique_ptr<ir::Program>> program = import_pt2(std::move(*bytes));
  if (!program.ok()) return program.status().with_context(path + ": ");
  return program;
}

bool is_pt2_file(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".pt2") == 0) return true;
  if (!regular_file_size(path.c_str()).ok()) return false;  // a FIFO's read would block
  std::ifstream in(path, std::ios::binary);
  uint8_t magic[4] = {};
  if (!in.read(reinterpret_cast<char*>(magic), sizeof(magic))) return false;
  return is_zip_archive(magic);
}

ir::StatusOr<std::unique_ptr<ir::Program>> import_program_file(const std::string& path) {
  return is_pt2_file(path) ? import_pt2_file(path) : import_exported_program_file(path);
}

}  // namespace ember::importer
