#include "compiler/import/pt2.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "compiler/import/exported_program.h"
#include "compiler/import/json_access.h"
#include "compiler/import/zip.h"
#include "compiler/ir/op_schema.h"
#include "runtime/platform/loaders.h"

namespace ember::importer {
namespace {

using ir::Status;
using ir::StatusOr;

constexpr int kMaxDepth = 64;  // nesting of subgraphs and expressions: bounds the recursion

// Schemas (as torch 2.15 prints them) of ops that torch.export writes and Ember lowers, but that
// the builtin table (compiler/ir/aten_schemas.inc) lacks. A .pt2 carries no schemas: binding
// arguments by name and filling defaults needs one per op.
constexpr const char* kExtraSchemas[] = {
    ("aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, "
     "Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, "
     "Tensor)"),
    "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
    ("aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
     "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> "
     "Tensor"),
    ("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
     "SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"),
    ("aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
     "int[2] dilation=1, bool ceil_mode=False) -> Tensor"),
};

const ir::OpRegistry& extra_registry() {
  static const ir::OpRegistry* registry = [] {
    auto* r = new ir::OpRegistry();
    for (const char* text : kExtraSchemas) (void)r->add(text);
    return r;
  }();
  return *registry;
}

// Python operators on SymInts, as torch serializes their targets, and Ember's sym:: names.
const std::map<std::string, std::string, std::less<>>& sym_ops() {
  static const auto* ops =
      new std::map<std::string, std::string, std::less<>>{{"_operator.add", "add"},
                                                          {"_operator.sub", "sub"},
                                                          {"_operator.mul", "mul"},
                                                          {"_operator.floordiv", "floordiv"},
                                                          {"_operator.truediv", "truediv"},
                                                          {"_operator.mod", "mod"},
                                                          {"_operator.neg", "neg"},
                                                          {"_operator.eq", "eq"},
                                                          {"_operator.ne", "ne"},
                                                          {"_operator.lt", "lt"},
                                                          {"_operator.le", "le"},
                                                          {"_operator.gt", "gt"},
                                                          {"_operator.ge", "ge"},
                                                          {"_operator.and_", "and"},
                                                          {"_operator.or_", "or"},
                                                          {"torch.sym_max", "max"},
                                                          {"torch.sym_min", "min"},
                                                          {"torch.sym_float", "float"},
                                                          {"torch.sym_int", "int"},
                                                          {"torch.sym_not", "not"},
                                                          {"math.ceil", "ceil"},
                                                          {"math.floor", "floor"}};
  return *ops;
}

// torch/_export/serde/schema.py ScalarType codes.
std::string dtype_of_code(int64_t code, const std::string& where) {
  switch (code) {
    case 1:
      return "uint8";
    case 2:
      return "int8";
    case 3:
      return "int16";
    case 4:
      return "int32";
    case 5:
      return "int64";
    case 6:
      return "float16";
    case 7:
      return "float32";
    case 8:
      return "float64";
    case 10:
      return "complex64";
    case 11:
      return "complex128";
    case 12:
      return "bool";
    case 13:
      return "bfloat16";
    default:
      fail(where, "dtype code " + std::to_string(code) + " has no Ember dtype");
  }
}

std::string memory_format_of_code(int64_t code, const std::string& where) {
  switch (code) {
    case 1:
      return "contiguous_format";
    case 2:
      return "channels_last";
    case 3:
      return "channels_last_3d";
    case 4:
      return "preserve_format";
    default:
      fail(where, "unknown memory format code " + std::to_string(code));
  }
}

// A union ({"as_tensor": ...}): its one key and value.
std::pair<std::string, const json*> union_of(const json& j, const std::string& where) {
  if (!j.is_object() || j.size() != 1) fail(where, "expected an object with one key");
  return {j.begin().key(), &j.begin().value()};
}
bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

json float_arg(const json& v, const std::string& where) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (std::isnan(d)) return {{"float", "nan"}};
    if (std::isinf(d)) return {{"float", d > 0 ? "inf" : "-inf"}};
    return {{"float", d}};
  }
  const std::string s = as_string(v, where);
  if (s == "inf" || s == "Infinity") return {{"float", "inf"}};
  if (s == "-inf" || s == "-Infinity") return {{"float", "-inf"}};
  if (s == "nan" || s == "NaN") return {{"float", "nan"}};
  fail(where, "expected a number");
}

// ---------------------------------------------------------------------------------------------
// Symbolic sizes: torch writes sympy's srepr ("Mul(Integer(2), Symbol('s0', integer=True))").
// Ember keeps the infix text sympy's str() gives (as the Python exporter writes it) with the
// bounds at the symbols' lower and upper ends.

struct Expr {
  std::string func;  // "Integer", "Symbol", "Add", ...
  int64_t value = 0;
  std::string name;
  std::vector<Expr> args;
};

class ExprParser {
 public:
  explicit ExprParser(const std::string& text) : s_(text) {}
  Expr parse() {
    Expr e = call(0);
    skip();
    if (pos_ != s_.size()) bad();
    return e;
  }

 private:
  [[noreturn]] void bad() { fail("symbolic size '" + s_ + "'", "not an expression Ember reads"); }
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  std::string ident() {
    skip();
    size_t b = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      ++pos_;
    }
    return s_.substr(b, pos_ - b);
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Expr call(int depth) {
    if (depth > kMaxDepth) bad();
    Expr e;
    e.func = ident();
    if (e.func.empty() || !eat('(')) bad();
    if (e.func == "Integer") {
      skip();
      size_t b = pos_;
      if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      const std::string digits = s_.substr(b, pos_ - b);
      if (digits.empty() || digits == "-" || digits.size() > 18) bad();
      e.value = std::stoll(digits);
      if (!eat(')')) bad();
      return e;
    }
    if (e.func == "Symbol") {
      if (!eat('\'')) bad();
      e.name = ident();
      if (!eat('\'') || !is_identifier(e.name)) bad();
      // Assumptions (positive=True, integer=True) do not change the value.
      while (eat(',')) {
        if (ident().empty() || !eat('=') || ident().empty()) bad();
      }
      if (!eat(')')) bad();
      return e;
    }
    if (!eat(')')) {
      do e.args.push_back(call(depth + 1));
      while (eat(','));
      if (!eat(')')) bad();
    }
    return e;
  }

  std::string s_;
  size_t pos_ = 0;
};

class ExprText {
 public:
  ExprText(const std::string& source, const std::map<std::string, std::pair<int64_t, int64_t>>& s)
      : source_(source), symbols_(s) {}

  std::string text(const Expr& e) {
    if (e.func == "Integer") return std::to_string(e.value);
    if (e.func == "Symbol") {
      if (symbols_.count(e.name) == 0) {
        fail("symbolic size '" + source_ + "'",
             "symbol '" + e.name + "' has no range in the archive's range_constraints");
      }
      return e.name;
    }
    if (e.func == "Add" && !e.args.empty()) {
      std::string out = text(e.args[0]);
      for (size_t i = 1; i < e.args.size(); ++i) {
        std::string t = text(e.args[i]);
        out += (t[0] == '-' ? "" : "+") + t;
      }
      return out;
    }
    if (e.func == "Mul" && !e.args.empty()) {
      std::string out;
      for (size_t i = 0; i < e.args.size(); ++i) {
        std::string t = text(e.args[i]);
        if (e.args[i].func == "Add") t = "(" + t + ")";
        out += (i == 0 ? "" : "*") + t;
      }
      return out;
    }
    if (e.func == "FloorDiv" && e.args.size() == 2) {
      return "(" + text(e.args[0]) + "//" + text(e.args[1]) + ")";
    }
    if (e.func == "Pow" && e.args.size() == 2 && e.args[1].func == "Integer" &&
        e.args[1].value >= 0) {
      return "(" + text(e.args[0]) + ")**" + std::to_string(e.args[1].value);
    }
    if ((e.func == "Mod" || e.func == "PythonMod" || e.func == "Max" || e.func == "Min") &&
        e.args.size() >= 2) {
      std::string out = (e.func == "PythonMod" ? std::string("Mod") : e.func) + "(";
      for (size_t i = 0; i < e.args.size(); ++i) out += (i == 0 ? "" : ",") + text(e.args[i]);
      return out + ")";
    }
    fail("symbolic size '" + source_ + "'", "'" + e.func + "' is not an operation Ember reads");
  }

  // The value with every symbol at its lower (`upper` false) or upper bound.
  int64_t eval(const Expr& e, bool upper) {
    const std::string where = "symbolic size '" + source_ + "'";
    if (e.func == "Integer") return e.value;
    if (e.func == "Symbol") {
      auto it = symbols_.find(e.name);
      return upper ? it->second.second : it->second.first;
    }
    std::vector<int64_t> v;
    for (const Expr& a : e.args) v.push_back(eval(a, upper));
    int64_t r = 0;
    auto overflow = [&] { fail(where, "overflows int64 at the symbols' bounds"); };
    if (e.func == "Add" || e.func == "Mul") {
      r = e.func == "Add" ? 0 : 1;
      for (int64_t x : v) {
        if (e.func == "Add" ? __builtin_add_overflow(r, x, &r) : __builtin_mul_overflow(r, x, &r))
          overflow();
      }
      return r;
    }
    if (e.func == "FloorDiv" || e.func == "Mod" || e.func == "PythonMod") {
      if (v[1] == 0 || (v[0] == std::numeric_limits<int64_t>::min() && v[1] == -1)) overflow();
      int64_t q = v[0] / v[1], m = v[0] % v[1];
      if (m != 0 && ((m < 0) != (v[1] < 0))) {
        --q;
        m += v[1];
      }
      return e.func == "FloorDiv" ? q : m;
    }
    if (e.func == "Pow") {
      r = 1;
      for (int64_t i = 0; i < v[1]; ++i) {
        if (__builtin_mul_overflow(r, v[0], &r)) overflow();
      }
      return r;
    }
    if (e.func == "Max") return *std::max_element(v.begin(), v.end());
    return *std::min_element(v.begin(), v.end());  // Min; text() refused everything else
  }

 private:
  const std::string& source_;
  const std::map<std::string, std::pair<int64_t, int64_t>>& symbols_;
};

// ---------------------------------------------------------------------------------------------

struct Blob {
  uint64_t offset = 0;
  std::span<const uint8_t> bytes;
};

class Translator {
 public:
  explicit Translator(const ZipArchive& zip) : zip_(zip) {}

  json run() {
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

  const std::vector<Blob>& blobs() const { return blobs_; }
  uint64_t data_size() const { return data_size_; }

 private:
  // Entries sit under one top folder named after the file's stem ("m/models/model.json").
  void find_prefix() {
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

  std::string entry_text(const std::string& name, bool required) {
    const ZipEntry* e = zip_.find(prefix_ + name);
    if (e == nullptr) {
      if (required) fail("archive", "missing entry '" + prefix_ + name + "'");
      return {};
    }
    std::string s(reinterpret_cast<const char*>(e->data.data()), e->data.size());
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
  }

  void check_versions() {
    const std::string version = entry_text("archive_version", true);
    if (version != kPt2ArchiveVersion) {
      fail(prefix_ + "archive_version", "archive version '" + version.substr(0, 32) +
                                            "'; Ember reads archive version '" +
                                            kPt2ArchiveVersion + "' (torch 2.15's)");
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

  void read_symbols(const json& doc) {
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

  void read_tensor_configs() {
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

  // ---- values -------------------------------------------------------------------------------

  json dim(const json& size, const std::string& where) {
    auto [kind, v] = union_of(size, where);
    if (kind == "as_int") return as_int(*v, where);
    if (kind != "as_expr") fail(where, "unknown size kind '" + kind + "'");
    const std::string source = as_string(field(*v, "expr_str", where), where + ".expr_str");
    Expr e = ExprParser(source).parse();
    ExprText t(source, symbols_);
    if (e.func == "Integer") return e.value;
    std::string text = t.text(e);
    int64_t a = t.eval(e, false), b = t.eval(e, true);
    if (std::max(a, b) < 0) fail(where, "symbolic size '" + source + "' is negative");
    return {{"expr", text}, {"min", std::max<int64_t>(0, std::min(a, b))}, {"max", std::max(a, b)}};
  }

  // A tensor's VALUE (docs/exported-program.md) from torch's TensorMeta.
  json tensor_value(const std::string& name, const json& meta, const std::string& where) {
    json out;
    out["name"] = name;
    out["type"] = "tensor";
    out["dtype"] = dtype_of_code(as_int(field(meta, "dtype", where), where + ".dtype"), where);
    if (const json* layout = optional_field(meta, "layout");
        layout != nullptr && as_int(*layout, where + ".layout") != 7) {
      fail(where, "layout " + std::to_string(as_int(*layout, where)) +
                      " is not strided (dense); not supported");
    }
    const json& sizes = as_array(field(meta, "sizes", where), where + ".sizes");
    const json& strides = as_array(field(meta, "strides", where), where + ".strides");
    if (strides.size() != sizes.size()) fail(where, "strides and sizes differ in rank");
    json shape = json::array();
    bool is_static = true;
    std::vector<int64_t> concrete;
    json static_strides = json::array();
    for (size_t d = 0; d < sizes.size(); ++d) {
      shape.push_back(dim(sizes[d], at(where + ".sizes", d)));
      is_static = is_static && shape.back().is_number();
      auto [kind, v] = union_of(strides[d], at(where + ".strides", d));
      // Symbolic strides order as 0, as the Python exporter orders them.
      concrete.push_back(kind == "as_int" ? as_int(*v, at(where + ".strides", d)) : 0);
      is_static = is_static && kind == "as_int";
      static_strides.push_back(concrete.back());
    }
    std::vector<int> order(sizes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return concrete[a] > concrete[b]; });
    out["shape"] = shape;
    out["dim_order"] = order;
    if (is_static) out["strides"] = static_strides;
    return out;
  }

  // Torch's names are unique per graph; Ember's across the program, subgraphs included.
  std::string claim(const std::string& base) {
    std::string name;
    for (char c : base) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (name.empty()) name = "v";
    std::string candidate = name;
    for (int k = 1; !names_.insert(candidate).second; ++k) {
      candidate = name + "_" + std::to_string(k);
    }
    return candidate;
  }

  struct Scope {
    const json* tensor_values = nullptr;
    std::map<std::string, std::string> names;  // torch name -> Ember value name
  };

  const json& meta_of(const Scope& scope, const std::string& name, const std::string& where) {
    for (const json* tv : {scope.tensor_values, top_tensor_values_}) {
      if (const json* m = tv == nullptr ? nullptr : optional_field(*tv, name.c_str())) return *m;
    }
    fail(where, "value '" + name + "' has no entry in tensor_values");
  }

  std::string lookup(const Scope& scope, const std::string& name, const std::string& where) {
    auto it = scope.names.find(name);
    if (it == scope.names.end()) fail(where, "unknown value '" + name + "'");
    return it->second;
  }

  // The names a node's outputs define, with their VALUE kinds.
  static std::vector<std::pair<std::string, std::string>> output_names(const json& outputs,
                                                                       const std::string& where) {
    std::vector<std::pair<std::string, std::string>> names;
    const json& list = as_array(outputs, where);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string w = at(where, i);
      auto [kind, v] = union_of(list[i], w);
      if (kind == "as_tensor") {
        names.push_back({as_string(field(*v, "name", w), w), "tensor"});
      } else if (kind == "as_tensors") {
        for (size_t k = 0; k < as_array(*v, w).size(); ++k)
          names.push_back({as_string(field((*v)[k], "name", at(w, k)), at(w, k)), "tensor"});
      } else if (kind == "as_sym_int" || kind == "as_sym_bool" || kind == "as_sym_float") {
        const std::string type = kind == "as_sym_int"    ? "int"
                                 : kind == "as_sym_bool" ? "bool"
                                                         : "float";
        names.push_back({as_string(field(*v, "as_name", w), w), type});
      } else if (kind != "as_none") {
        fail(w, "output of kind '" + kind + "' is not supported");
      }
    }
    return names;
  }

  // ---- arguments ----------------------------------------------------------------------------

  json sym_item(const json& item, const Scope& scope, const std::string& where,
                const char* constant) {
    auto [kind, v] = union_of(item, where);
    if (kind == "as_name") return {{"value", lookup(scope, as_string(*v, where), where)}};
    if (kind == "as_int" && std::strcmp(constant, "int") == 0) return {{"int", as_int(*v, where)}};
    if (kind == "as_float" && std::strcmp(constant, "float") == 0) return float_arg(*v, where);
    if (kind == "as_bool" && std::strcmp(constant, "bool") == 0 && v->is_boolean())
      return {{"bool", v->get<bool>()}};
    fail(where, "unexpected symbolic item '" + kind + "'");
  }

  json argument(const json& a, const Scope& scope, const std::string& where) {
    // Not a structured binding: the lambdas below capture `v` (clang 14 refuses captured
    // bindings, and the fuzz build uses clang).
    const std::pair<std::string, const json*> kind_value = union_of(a, where);
    const std::string& kind = kind_value.first;
    const json* v = kind_value.second;
    auto list = [&](auto&& each) {
      json items = json::array();
      const json& arr = as_array(*v, where);
      for (size_t i = 0; i < arr.size(); ++i) items.push_back(each(arr[i], at(where, i)));
      return json{{"list", items}};
    };
    auto tensor = [&](const json& t, const std::string& w) {
      return json{{"value", lookup(scope, as_string(field(t, "name", w), w), w)}};
    };
    if (kind == "as_none") return nullptr;
    if (kind == "as_tensor") return tensor(*v, where);
    if (kind == "as_tensors") return list(tensor);
    if (kind == "as_optional_tensor" || kind == "as_optional_tensors") {
      auto optional = [&](const json& o, const std::string& w) -> json {
        auto [k, t] = union_of(o, w);
        if (k == "as_none") return nullptr;
        if (k == "as_tensor") return tensor(*t, w);
        fail(w, "unexpected optional-tensor kind '" + k + "'");
      };
      return kind == "as_optional_tensor" ? optional(*v, where) : list(optional);
    }
    if (kind == "as_int") return {{"int", as_int(*v, where)}};
    if (kind == "as_ints")
      return list([&](const json& x, const std::string& w) { return json{{"int", as_int(x, w)}}; });
    if (kind == "as_float") return float_arg(*v, where);
    if (kind == "as_floats") return list(float_arg);
    if (kind == "as_bool" || kind == "as_bools") {
      auto boolean = [](const json& x, const std::string& w) {
        if (!x.is_boolean()) fail(w, "expected true or false");
        return json{{"bool", x.get<bool>()}};
      };
      return kind == "as_bool" ? boolean(*v, where) : list(boolean);
    }
    if (kind == "as_string") return {{"str", as_string(*v, where)}};
    if (kind == "as_strings")
      return list([&](const json& x, const std::string& w) {
        return json{{"str", as_string(x, w)}};
      });
    if (kind == "as_sym_int") return sym_item(*v, scope, where, "int");
    if (kind == "as_sym_float") return sym_item(*v, scope, where, "float");
    if (kind == "as_sym_bool") return sym_item(*v, scope, where, "bool");
    if (kind == "as_sym_ints" || kind == "as_sym_floats" || kind == "as_sym_bools") {
      const char* c = kind == "as_sym_ints" ? "int" : kind == "as_sym_floats" ? "float" : "bool";
      return list([&](const json& x, const std::string& w) { return sym_item(x, scope, w, c); });
    }
    if (kind == "as_scalar_type") return {{"dtype", dtype_of_code(as_int(*v, where), where)}};
    if (kind == "as_memory_format")
      return {{"memory_format", memory_format_of_code(as_int(*v, where), where)}};
    if (kind == "as_layout") {
      if (as_int(*v, where) != 7) fail(where, "only the strided layout is supported");
      return {{"layout", "strided"}};
    }
    if (kind == "as_device") {
      std::string device = as_string(field(*v, "type", where), where + ".type");
      if (const json* index = optional_field(*v, "index"))
        device += ":" + std::to_string(as_int(*index, where + ".index"));
      return {{"device", device}};
    }
    fail(where, "argument kind '" + kind + "' is not supported by Ember");
  }

  // A schema default, as the Python exporter records it (docs/exported-program.md).
  static json default_arg(const ir::ArgumentSchema& a, const std::string& where) {
    std::string text = *a.default_value;
    auto number = [&](const std::string& s) -> json {
      if (s == "True" || s == "False") return {{"bool", s == "True"}};
      char* end = nullptr;
      const bool is_float = s.find_first_of(".eE") != std::string::npos || s == "inf" ||
                            s == "-inf" || s == "nan" || a.kind == ir::TypeKind::Float;
      if (is_float) {
        const double d = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || *end != '\0') fail(where, "default '" + text + "' is not a number");
        return float_arg(d, where);
      }
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (end == s.c_str() || *end != '\0') fail(where, "cannot read the default '" + text + "'");
      return {{"int", static_cast<int64_t>(v)}};
    };
    if (text == "None") return nullptr;
    if (a.is_list) {
      json items = json::array();
      if (!text.empty() && text.front() == '[') {
        if (text.back() != ']') fail(where, "cannot read the default '" + text + "'");
        std::string body = text.substr(1, text.size() - 2);
        size_t pos = 0;
        while (pos < body.size()) {
          size_t comma = body.find(',', pos);
          if (comma == std::string::npos) comma = body.size();
          std::string item = body.substr(pos, comma - pos);
          item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
          if (!item.empty()) items.push_back(number(item));
          pos = comma + 1;
        }
      } else {
        // `int[2] padding=0` is [0, 0].
        const size_t open = a.type.find('[');
        const long n =
            open == std::string::npos ? 1 : std::strtol(a.type.c_str() + open + 1, nullptr, 10);
        for (long i = 0; i < std::max(1L, n); ++i) items.push_back(number(text));
      }
      return {{"list", items}};
    }
    if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') &&
        text.back() == text.front()) {
      return {{"str", text.substr(1, text.size() - 2)}};
    }
    if (text == "contiguous_format" || text == "preserve_format" || text == "channels_last") {
      return {{"memory_format", text}};
    }
    return number(text);
  }

  // ---- nodes --------------------------------------------------------------------------------

  std::vector<json> module_stack(const json& node) {
    std::vector<json> frames;
    const json* meta = optional_field(node, "metadata");
    const json* stack = meta == nullptr ? nullptr : optional_field(*meta, "nn_module_stack");
    if (stack == nullptr || !stack->is_string()) return frames;
    // "key,path,type;key,path,type": the root module has an empty path.
    const std::string s = stack->get<std::string>();
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t end = s.find(';', pos);
      if (end == std::string::npos) end = s.size();
      const std::string frame = s.substr(pos, end - pos);
      const size_t first = frame.find(','), last = frame.rfind(',');
      if (first != std::string::npos && last > first) {
        const std::string path = frame.substr(first + 1, last - first - 1);
        std::string type = frame.substr(last + 1);
        type = type.substr(type.rfind('.') == std::string::npos ? 0 : type.rfind('.') + 1);
        if (!path.empty()) frames.push_back({{"path", path}, {"type", type}});
      }
      pos = end + 1;
    }
    return frames;
  }

  json translate_node(const json& node, Scope& scope, const std::string& where, int depth) {
    const std::string target = as_string(field(node, "target", where), where + ".target");
    std::string name = where;
    if (const json* n = optional_field(node, "name"); n != nullptr && n->is_string())
      name = n->get<std::string>();
    const std::string w = "node " + name + " (" + target + ")";
    const json& inputs = as_array(field(node, "inputs", w), w + ".inputs");
    json out;
    std::vector<json> subgraphs;
    json args = json::array();
    std::string op, overload = "default";
    const ir::OpSchema* schema = nullptr;
    constexpr std::string_view kAten = "torch.ops.aten.";
    auto sym = sym_ops().find(target);
    if (target.rfind(kAten, 0) == 0) {
      const std::string rest = target.substr(kAten.size());
      const size_t dot = rest.rfind('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size()) {
        fail(w, "target is not torch.ops.aten.<op>.<overload>");
      }
      op = "aten::" + rest.substr(0, dot);
      overload = rest.substr(dot + 1);
      schema = ir::OpRegistry::builtin().find(op, overload);
      if (schema == nullptr) {
        schema = extra_registry().find(op, overload);
        if (schema != nullptr) extra_used_.insert(schema);
      }
    } else if (target == "torch.ops.higher_order.cond") {
      op = "higher_order::cond";
      schema = ir::OpRegistry::builtin().find(op, overload);
    } else if (sym != sym_ops().end()) {
      op = "sym::" + sym->second;
      schema = ir::OpRegistry::builtin().find(op, overload);
    }
    if (schema == nullptr) {
      unsupported_.push_back(w);
      unsupported_ops_.insert(op.empty() ? target : op + "." + overload);
      return nullptr;
    }
    const bool positional = op.rfind("aten::", 0) != 0;
    std::map<std::string, const json*> by_name;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string iw = at(w + ".inputs", i);
      const std::string arg_name = as_string(field(inputs[i], "name", iw), iw + ".name");
      const json& value = field(inputs[i], "arg", iw);
      if (positional) {
        if (i >= schema->arguments().size()) fail(w, "more arguments than " + schema->to_string());
        by_name[schema->arguments()[i].name] = &value;
      } else if (!schema->argument_index(arg_name)) {
        fail(w, "argument '" + arg_name + "' is not in Ember's schema " + schema->to_string());
      } else {
        by_name[arg_name] = &value;
      }
    }
    for (const ir::ArgumentSchema& a : schema->arguments()) {
      const std::string aw = w + " argument '" + a.name + "'";
      json value;
      auto it = by_name.find(a.name);
      if (it == by_name.end()) {
        if (a.default_value) {
          value = default_arg(a, aw);
        } else if (a.is_optional) {
          value = nullptr;
        } else {
          fail(aw, "missing, and the schema has no default");
        }
      } else if (a.kind == ir::TypeKind::Graph) {
        auto [kind, g] = union_of(*it->second, aw);
        if (kind != "as_graph") fail(aw, "expected a graph");
        if (depth >= kMaxDepth) fail(w, "subgraphs nest too deeply");
        value = {{"graph", subgraphs.size()}};
        subgraphs.push_back(translate_graph(field(*g, "graph", aw), aw, depth + 1, nullptr));
      } else {
        value = argument(*it->second, scope, aw);
      }
      args.push_back({{"name", a.name}, {"value", value}});
    }
    out["name"] = claim(name);
    out["op"] = op;
    out["overload"] = overload;
    out["args"] = args;
    json outputs = json::array();
    for (const auto& [torch_name, type] : output_names(field(node, "outputs", w), w + ".outputs")) {
      const std::string& ember = lookup(scope, torch_name, w);
      if (type == "tensor") {
        outputs.push_back(tensor_value(ember, meta_of(scope, torch_name, w), w + " " + torch_name));
      } else {
        outputs.push_back({{"name", ember}, {"type", type}});
      }
    }
    out["outputs"] = outputs;
    out["module_stack"] = module_stack(node);
    if (!subgraphs.empty()) out["subgraphs"] = subgraphs;
    return out;
  }

  // {"inputs", "nodes", "outputs"}; for the top-level graph, `signature` gets each input's kind.
  json translate_graph(const json& graph, const std::string& where, int depth, json* signature) {
    Scope scope;
    scope.tensor_values = optional_field(graph, "tensor_values");
    if (signature != nullptr) top_tensor_values_ = scope.tensor_values;
    const json& inputs = as_array(field(graph, "inputs", where), where + ".inputs");
    const json& nodes = as_array(field(graph, "nodes", where), where + ".nodes");
    std::vector<std::string> input_names;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string iw = at(where + ".inputs", i);
      auto [kind, v] = union_of(inputs[i], iw);
      if (kind != "as_tensor") {
        fail(iw, "a graph input of kind '" + kind + "'; Ember's programs take tensors only");
      }
      input_names.push_back(as_string(field(*v, "name", iw), iw + ".name"));
      scope.names[input_names.back()] = claim(input_names.back());
    }
    // Every name this graph defines is claimed before any subgraph claims its own.
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string nw = at(where + ".nodes", i);
      for (const auto& [n, type] : output_names(field(nodes[i], "outputs", nw), nw + ".outputs")) {
        if (scope.names.count(n) != 0) fail(nw, "value '" + n + "' is defined twice");
        scope.names[n] = claim(n);
      }
    }
    json out;
    json jinputs = json::array();
    for (size_t i = 0; i < input_names.size(); ++i) {
      const std::string& n = input_names[i];
      jinputs.push_back(
          tensor_value(scope.names[n], meta_of(scope, n, where), at(where + ".inputs", i)));
    }
    out["inputs"] = jinputs;
    json jnodes = json::array();
    for (size_t i = 0; i < nodes.size(); ++i) {
      json n = translate_node(nodes[i], scope, at(where + ".nodes", i), depth);
      if (!n.is_null()) jnodes.push_back(std::move(n));
    }
    out["nodes"] = jnodes;
    const json& outputs = as_array(field(graph, "outputs", where), where + ".outputs");
    json jout = json::array();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string ow = at(where + ".outputs", i);
      auto [kind, v] = union_of(outputs[i], ow);
      if (kind != "as_tensor") fail(ow, "an output of kind '" + kind + "'; return tensors");
      jout.push_back(lookup(scope, as_string(field(*v, "name", ow), ow), ow));
    }
    out["outputs"] = jout;
    if (signature != nullptr) finish_signature(scope, jout, signature);
    return out;
  }

  // ---- signature and weights ----------------------------------------------------------------

  // Input specs by torch value name; the graph translation maps them to Ember names.
  json read_signature(const json& sig) {
    const json& specs = as_array(field(sig, "input_specs", "signature"), "signature.input_specs");
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::string w = at("signature.input_specs", i);
      auto [kind, v] = union_of(specs[i], w);
      InputSpec s;
      if (kind == "user_input") {
        auto [k, a] = union_of(field(*v, "arg", w), w + ".arg");
        if (k != "as_tensor") fail(w, "a user input of kind '" + k + "'; Ember takes tensors only");
        s.value = as_string(field(*a, "name", w), w);
        s.kind = "user_input";
      } else if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant") {
        s.value = as_string(field(field(*v, "arg", w), "name", w), w);
        s.kind = kind == "tensor_constant" ? "constant" : kind;
        const char* key = kind == "parameter" ? "parameter_name"
                          : kind == "buffer"  ? "buffer_name"
                                              : "tensor_constant_name";
        s.target = as_string(field(*v, key, w), w + "." + key);
        if (kind == "buffer") {
          const json* p = optional_field(*v, "persistent");
          s.persistent = p == nullptr || !p->is_boolean() || p->get<bool>();
        }
      } else {
        fail(w, "input of kind '" + kind +
                    "' is not supported (Ember reads parameters, "
                    "buffers, tensor constants and tensor user inputs)");
      }
      if (input_specs_.count(s.value) != 0) fail(w, "value '" + s.value + "' appears twice");
      order_.push_back(s.value);
      input_specs_[s.value] = s;
    }
    output_specs_ = &as_array(field(sig, "output_specs", "signature"), "signature.output_specs");
    return json::object();
  }

  void finish_signature(const Scope& scope, const json& outputs, json* signature) {
    json inputs = json::array();
    std::set<std::string> stored;
    for (const std::string& torch_name : order_) {
      const InputSpec& s = input_specs_[torch_name];
      json spec = {{"kind", s.kind}, {"value", lookup(scope, torch_name, "signature")}};
      if (s.kind != "user_input") {
        spec["target"] = s.target;
        if (stored.insert(s.target).second) add_tensor(s.target);
      }
      if (s.kind == "buffer") spec["persistent"] = s.persistent;
      inputs.push_back(spec);
    }
    const json& specs = *output_specs_;
    if (specs.size() != outputs.size()) {
      fail("signature.output_specs", std::to_string(specs.size()) + " entries for " +
                                         std::to_string(outputs.size()) + " graph outputs");
    }
    json jout = json::array();
    json mutated_buffers = json::array(), mutated_inputs = json::array();
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::string w = at("signature.output_specs", i);
      auto [kind, v] = union_of(specs[i], w);
      json spec = {{"value", outputs[i]}};
      if (kind == "user_output") {
        spec["kind"] = "user_output";
      } else if (kind == "buffer_mutation") {
        spec["kind"] = "buffer_mutation";
        spec["target"] = as_string(field(*v, "buffer_name", w), w + ".buffer_name");
        mutated_buffers.push_back(spec["target"]);
      } else if (kind == "user_input_mutation") {
        spec["kind"] = "user_input_mutation";
        const std::string input = as_string(field(*v, "user_input_name", w), w);
        spec["target"] = lookup(scope, input, w);
        mutated_inputs.push_back(spec["target"]);
      } else if (kind == "parameter_mutation") {
        fail(w,
             "the program writes a parameter; Ember's programs cannot update parameters "
             "(register the tensor as a buffer)");
      } else {
        fail(w, "output of kind '" + kind + "' is not supported (training outputs, tokens)");
      }
      jout.push_back(spec);
    }
    *signature = {{"inputs", inputs},
                  {"outputs", jout},
                  {"mutated_buffers", mutated_buffers},
                  {"mutated_parameters", json::array()},
                  {"mutated_user_inputs", mutated_inputs}};
  }

  // The tensor `fqn`, dense and row-major, from its file under data/weights or data/constants.
  void add_tensor(const std::string& fqn) {
    const std::string w = "tensor '" + fqn + "'";
    auto it = configs_.find(fqn);
    if (it == configs_.end()) {
      fail(w,
           "not in data/weights/model_weights_config.json nor in "
           "data/constants/model_constants_config.json");
    }
    const json& entry = it->second.second;
    const std::string path = it->second.first + as_string(field(entry, "path_name", w), w);
    if (const json* pickle = optional_field(entry, "use_pickle");
        pickle != nullptr && pickle->is_boolean() && pickle->get<bool>()) {
      fail(w, "stored with pickle; Ember reads raw tensor files only");
    }
    const json& meta = field(entry, "tensor_meta", w);
    const std::string dtype =
        dtype_of_code(as_int(field(meta, "dtype", w), w + ".dtype"), w + ".dtype");
    const size_t element = ir::dtype_size(*ir::dtype_from_name(dtype));
    const json& sizes = as_array(field(meta, "sizes", w), w + ".sizes");
    const json& strides = as_array(field(meta, "strides", w), w + ".strides");
    if (sizes.size() != strides.size()) fail(w, "strides and sizes differ in rank");
    std::vector<int64_t> shape, stride;
    uint64_t numel = 1;
    uint64_t last = 0;  // the largest element index the tensor reads, from storage_offset
    for (size_t d = 0; d < sizes.size(); ++d) {
      auto [sk, sv] = union_of(sizes[d], at(w + ".sizes", d));
      auto [tk, tv] = union_of(strides[d], at(w + ".strides", d));
      if (sk != "as_int" || tk != "as_int") fail(w, "a stored tensor with a symbolic size");
      shape.push_back(as_int(*sv, w));
      stride.push_back(as_int(*tv, w));
      if (shape.back() < 0 || stride.back() < 0) fail(w, "negative size or stride");
      uint64_t span = 0;
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(shape.back()), &numel) ||
          (shape.back() > 0 &&
           (__builtin_mul_overflow(static_cast<uint64_t>(shape.back() - 1),
                                   static_cast<uint64_t>(stride.back()), &span) ||
            __builtin_add_overflow(last, span, &last)))) {
        fail(w, "sizes overflow");
      }
    }
    uint64_t offset = 0;
    if (const json* so = optional_field(meta, "storage_offset")) {
      auto [k, v] = union_of(*so, w + ".storage_offset");
      if (k != "as_int") fail(w, "a symbolic storage offset");
      const int64_t o = as_int(*v, w);
      if (o < 0) fail(w, "negative storage offset");
      offset = static_cast<uint64_t>(o);
    }
    const ZipEntry* file = zip_.find(path);
    if (file == nullptr) fail(w, "its data file '" + path + "' is missing from the archive");
    uint64_t nbytes = 0, needed = 0;
    if (__builtin_mul_overflow(numel, element, &nbytes) ||
        __builtin_add_overflow(offset, last, &needed) ||
        __builtin_add_overflow(needed, 1, &needed) ||
        __builtin_mul_overflow(needed, element, &needed)) {
      fail(w, "sizes overflow");
    }
    if (numel > 0 && needed > file->data.size()) {
      fail(w, "its data file '" + path + "' has " + std::to_string(file->data.size()) +
                  " bytes; the tensor reads " + std::to_string(needed));
    }
    bool dense = true;
    int64_t expected = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      if (shape[d] != 1 && stride[d] != expected) dense = false;
      expected *= shape[d];
    }
    Blob blob;
    blob.offset = data_size_;
    if (numel == 0) {
      blob.bytes = {};
    } else if (dense) {
      blob.bytes = file->data.subspan(offset * element, nbytes);
    } else {
      // A view of a larger storage, or a non-contiguous layout: gather it row-major.
      owned_.emplace_back(nbytes);
      std::vector<uint8_t>& dst = owned_.back();
      std::vector<int64_t> index(shape.size(), 0);
      for (uint64_t i = 0; i < numel; ++i) {
        uint64_t src = offset;
        for (size_t d = 0; d < shape.size(); ++d) src += index[d] * stride[d];
        std::memcpy(dst.data() + i * element, file->data.data() + src * element, element);
        for (size_t d = shape.size(); d-- > 0;) {
          if (++index[d] < shape[d]) break;
          index[d] = 0;
        }
      }
      blob.bytes = dst;
    }
    blobs_.push_back(blob);
    data_size_ = (data_size_ + nbytes + kAlignment - 1) / kAlignment * kAlignment;
    tensors_.push_back({{"name", fqn},
                        {"dtype", dtype},
                        {"shape", shape},
                        {"offset", blob.offset},
                        {"nbytes", nbytes}});
  }

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
