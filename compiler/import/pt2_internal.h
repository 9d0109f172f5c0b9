// Internal to the .pt2 reader: the Translator (a torch.export.save archive -> an Ember exported
// program document) and the helpers its parts share. pt2.cc reads the archive and its JSON,
// pt2_graph.cc translates graphs, nodes and arguments, pt2_weights.cc the signature and the
// stored tensors, pt2_expr.cc torch's codes and symbolic sizes. Not a public header; see pt2.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/import/json_access.h"
#include "compiler/import/zip.h"
#include "compiler/ir/op_schema.h"

namespace ember::importer::pt2_internal {

constexpr int kMaxDepth = 64;  // nesting of subgraphs and expressions: bounds the recursion

// Schemas (as torch 2.15 prints them) of ops that torch.export writes and Ember lowers, but that
// the builtin table (compiler/ir/aten_schemas.inc) lacks. A .pt2 carries no schemas: binding
// arguments by name and filling defaults needs one per op.
const ir::OpRegistry& extra_registry();

// Python operators on SymInts, as torch serializes their targets, and Ember's sym:: names.
const std::map<std::string, std::string, std::less<>>& sym_ops();

// torch/_export/serde/schema.py ScalarType codes.
std::string dtype_of_code(int64_t code, const std::string& where);
std::string memory_format_of_code(int64_t code, const std::string& where);

// A union ({"as_tensor": ...}): its one key and value.
std::pair<std::string, const json*> union_of(const json& j, const std::string& where);
bool is_identifier(std::string_view s);
json float_arg(const json& v, const std::string& where);

struct Blob {
  uint64_t offset = 0;
  std::span<const uint8_t> bytes;
};

// Reads one archive into an exported-program document (run) and the tensor bytes it stores
// (blobs, at their offsets in a data section of data_size bytes). Fails by throwing ImportError.
class Translator {
 public:
  explicit Translator(const ZipArchive& zip) : zip_(zip) {}

  json run();

  const std::vector<Blob>& blobs() const { return blobs_; }
  uint64_t data_size() const { return data_size_; }

 private:
  // Entries sit under one top folder named after the file's stem ("m/models/model.json").
  void find_prefix();
  std::string entry_text(const std::string& name, bool required);
  void check_versions();
  void read_symbols(const json& doc);
  void read_tensor_configs();

  // ---- values -------------------------------------------------------------------------------

  // A size: an int, or a symbolic one as {"expr", "min", "max"} (pt2_expr.cc).
  json dim(const json& size, const std::string& where);

  // A tensor's VALUE (docs/exported-program.md) from torch's TensorMeta.
  json tensor_value(const std::string& name, const json& meta, const std::string& where);

  // Torch's names are unique per graph; Ember's across the program, subgraphs included.
  std::string claim(const std::string& base);

  struct Scope {
    const json* tensor_values = nullptr;
    std::map<std::string, std::string> names;  // torch name -> Ember value name
  };

  const json& meta_of(const Scope& scope, const std::string& name, const std::string& where);
  std::string lookup(const Scope& scope, const std::string& name, const std::string& where);

  // The names a node's outputs define, with their VALUE kinds.
  static std::vector<std::pair<std::string, std::string>> output_names(const json& outputs,
                                                                       const std::string& where);

  // ---- arguments ----------------------------------------------------------------------------

  json sym_item(const json& item, const Scope& scope, const std::string& where,
                const char* constant);
  json argument(const json& a, const Scope& scope, const std::string& where);

  // A schema default, as the Python exporter records it (docs/exported-program.md).
  static json default_arg(const ir::ArgumentSchema& a, const std::string& where);

  // ---- nodes --------------------------------------------------------------------------------

  std::vector<json> module_stack(const json& node);
  json translate_node(const json& node, Scope& scope, const std::string& where, int depth);

  // torch.export's wrapper higher-order ops (`wrap_with_set_grad_enabled`, and
  // `wrap_with_autocast` where the autocast is disabled) are inlined: their body's nodes are
  // appended to `nodes`, the n-th body input bound to the n-th operand and the wrapper's n-th
  // output to the body's n-th output, never by name (contract C5). False for any other node.
  bool inline_wrapper(const json& node, Scope& scope, const std::string& where, int depth,
                      json& nodes);

  // {"inputs", "nodes", "outputs"}; for the top-level graph, `signature` gets each input's kind.
  json translate_graph(const json& graph, const std::string& where, int depth, json* signature);
  // Claims a name for every value `nodes` define, in `scope`.
  void claim_outputs(const json& nodes, Scope& scope, const std::string& where);
  // Translates `nodes` in `scope` (wrappers inlined) onto `out`.
  void translate_nodes(const json& nodes, Scope& scope, const std::string& where, int depth,
                       json& out);

  // ---- signature and weights ----------------------------------------------------------------

  // Input specs by torch value name; the graph translation maps them to Ember names.
  json read_signature(const json& sig);
  void finish_signature(const Scope& scope, const json& outputs, json* signature);

  // The tensor `fqn`, dense and row-major, from its file under data/weights or data/constants.
  void add_tensor(const std::string& fqn);

  struct InputSpec {
    std::string kind, value, target;
    bool persistent = true;
  };

  const ZipArchive& zip_;
  std::string prefix_;
  std::map<std::string, std::pair<int64_t, int64_t>> symbols_;
  std::map<std::string, std::pair<std::string, json>> configs_;  // fqn -> (folder, entry)
  std::map<std::string, InputSpec> input_specs_;
  std::vector<std::string> order_;
  const json* output_specs_ = nullptr;
  const json* top_tensor_values_ = nullptr;
  std::set<std::string> names_;
  std::set<const ir::OpSchema*> extra_used_;
  std::vector<std::string> unsupported_;
  std::set<std::string> unsupported_ops_;
  json tensors_ = json::array();
  std::vector<Blob> blobs_;
  std::vector<std::vector<uint8_t>> owned_;
  uint64_t data_size_ = 0;
};

}  // namespace ember::importer::pt2_internal
