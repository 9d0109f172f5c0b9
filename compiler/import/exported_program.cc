#include "compiler/import/exported_program.h"

#include "compiler/import/json_access.h"
#include "compiler/ir/verifier.h"
#include "runtime/platform/loaders.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace ember::importer {
namespace {

using ir::Arg;
using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::Node;
using ir::Program;
using ir::Status;
using ir::StatusOr;
using ir::TensorType;
using ir::Value;
using ir::ValueKind;
using ir::ValueType;

constexpr int kMaxDepth = 64;  // nesting of subgraphs and lists: bounds the recursion

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

bool valid_value_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return true;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Importer {
 public:
  Importer(std::shared_ptr<const std::vector<uint8_t>> file) : file_(std::move(file)) {}

  std::unique_ptr<Program> run() {
    const std::vector<uint8_t>& bytes = *file_;
    if (bytes.size() < kHeaderSize) {
      fail("header", "the file has " + std::to_string(bytes.size()) +
                         " bytes, fewer than the 64-byte header");
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
    read_tensors(doc);
    read_program_graph(doc);
    check_weights();
    // The checks above are per field; the verifier checks the whole (use before definition,
    // schemas, users) so that nothing inconsistent reaches the passes.
    Status valid = ir::verify(*program_);
    if (!valid.ok()) fail("graph", valid.message());
    return std::move(program_);
  }

 private:
  void check_range(const std::string& what, uint64_t offset, uint64_t size, uint64_t minimum) {
    uint64_t end = 0;
    if (offset < minimum || __builtin_add_overflow(offset, size, &end) || end > file_->size()) {
      fail(what, "[" + std::to_string(offset) + ", +" + std::to_string(size) +
                     ") lies outside the file (" + std::to_string(file_->size()) + " bytes)");
    }
  }

  void read_operators(const json& doc) {
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

  void read_symbols(const json& doc) {
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

  void read_tensors(const json& doc) {
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
        w.type.shape.push_back(
            Dim(static_cast<int64_t>(as_size(shape[d], at(where + ".shape", d)))));
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

  DType dtype(const json& j, const std::string& where) {
    std::string name = as_string(j, where);
    std::optional<DType> d = ir::dtype_from_name(name);
    if (!d || name != ir::dtype_name(*d)) fail(where, "unknown dtype '" + name + "'");
    return *d;
  }

  // Dim expressions are kept as text; each name in one must be a declared symbol.
  Dim dim(const json& j, const std::string& where) {
    if (!j.is_object()) return Dim(static_cast<int64_t>(as_size(j, where)));
    std::string expr = as_string(field(j, "expr", where), where + ".expr");
    int64_t max = as_int(field(j, "max", where), where + ".max");
    if (max < 0) fail(where, "negative upper bound");
    if (expr.empty()) fail(where, "empty expression");
    int depth = 0;
    for (size_t i = 0; i < expr.size();) {
      char c = expr[i];
      if (c == '(') ++depth;
      if (c == ')') --depth;
      // The IR's text form reads these characters (and ',' only inside parentheses).
      bool allowed = is_ident_char(c) || std::strchr("+-*/%(),", c) != nullptr;
      if (depth < 0 || !allowed || c == '\0' || (c == ',' && depth == 0)) {
        fail(where, "expression '" + expr + "' has an unexpected character");
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j2 = i;
        while (j2 < expr.size() && is_ident_char(expr[j2])) ++j2;
        std::string name = expr.substr(i, j2 - i);
        if ((j2 >= expr.size() || expr[j2] != '(') && program_->find_symbol(name) == nullptr) {
          fail(where, "expression '" + expr + "' uses '" + name + "', which is not a symbol");
        }
        i = j2;
        continue;
      }
      ++i;
    }
    if (depth != 0) fail(where, "expression '" + expr + "' has unbalanced parentheses");
    return Dim::symbolic(expr, max);
  }

  // {"name", "type", "dtype", "shape", "dim_order"} -> (name, type)
  std::pair<std::string, ValueType> value_def(const json& j, const std::string& where,
                                              const Graph& g) {
    std::string name = as_string(field(j, "name", where), where + ".name");
    if (!valid_value_name(name)) fail(where, "value name '" + name + "' is not [A-Za-z0-9_.]+");
    if (g.is_name_used(name) || pending_.count(name))
      fail(where, "value '" + name + "' is defined twice");
    std::string kind = as_string(field(j, "type", where), where + ".type");
    std::string w = "value '" + name + "'";
    if (kind == "int") return {name, ValueType::scalar(ValueKind::Int)};
    if (kind == "float") return {name, ValueType::scalar(ValueKind::Float)};
    if (kind == "bool") return {name, ValueType::scalar(ValueKind::Bool)};
    if (kind != "tensor") fail(w, "unknown value type '" + kind + "'");
    TensorType t;
    t.dtype = dtype(field(j, "dtype", w), w + ".dtype");
    const json& shape = as_array(field(j, "shape", w), w + ".shape");
    for (size_t d = 0; d < shape.size(); ++d) t.shape.push_back(dim(shape[d], at(w + ".shape", d)));
    const json& order = as_array(field(j, "dim_order", w), w + ".dim_order");
    if (order.size() != t.shape.size())
      fail(w, "dim_order has " + std::to_string(order.size()) + " entries for rank " +
                  std::to_string(t.shape.size()));
    std::vector<bool> seen(t.shape.size(), false);
    for (size_t d = 0; d < order.size(); ++d) {
      uint64_t v = as_size(order[d], at(w + ".dim_order", d));
      if (v >= t.shape.size() || seen[v]) fail(w, "dim_order is not a permutation");
      seen[v] = true;
      t.dim_order.push_back(static_cast<int32_t>(v));
    }
    if (t.is_contiguous()) t.dim_order.clear();
    return {name, ValueType::of_tensor(std::move(t))};
  }

  using Scope = std::map<std::string, Value*, std::less<>>;

  Arg arg(const json& j, const Scope& scope, const std::string& where, int depth) {
    if (depth > kMaxDepth) fail(where, "lists nest too deeply");
    if (j.is_null()) return Arg::none();
    if (!j.is_object() || j.size() != 1) fail(where, "expected null or an object with one key");
    const std::string& key = j.begin().key();
    const json& v = j.begin().value();
    if (key == "value") {
      std::string name = as_string(v, where);
      auto it = scope.find(name);
      if (it == scope.end()) fail(where, "unknown value '" + name + "' (not defined before use)");
      return Arg::value(it->second);
    }
    if (key == "int") return Arg::integer(as_int(v, where));
    if (key == "bool") {
      if (!v.is_boolean()) fail(where, "expected true or false");
      return Arg::boolean(v.get<bool>());
    }
    if (key == "float") {
      if (v.is_number()) return Arg::floating(v.get<double>());
      std::string s = as_string(v, where);
      if (s == "inf") return Arg::floating(std::numeric_limits<double>::infinity());
      if (s == "-inf") return Arg::floating(-std::numeric_limits<double>::infinity());
      if (s == "nan") return Arg::floating(std::numeric_limits<double>::quiet_NaN());
      fail(where, "expected a number, \"inf\", \"-inf\" or \"nan\"");
    }
    if (key == "str") return Arg::string(as_string(v, where));
    if (key == "dtype") return Arg::dtype(dtype(v, where));
    if (key == "device") return Arg::device(as_string(v, where));
    if (key == "layout") return Arg::layout(as_string(v, where));
    if (key == "memory_format") return Arg::memory_format(as_string(v, where));
    if (key == "graph") return Arg::graph(static_cast<size_t>(as_size(v, where)));
    if (key == "list") {
      const json& items = as_array(v, where);
      std::vector<Arg> out;
      for (size_t i = 0; i < items.size(); ++i)
        out.push_back(arg(items[i], scope, at(where, i), depth + 1));
      return Arg::list(std::move(out));
    }
    fail(where, "unknown argument kind '" + key + "'");
  }

  static void check_graph_refs(const Arg& a, const Node* n, const std::string& where) {
    if (a.kind() == ir::ArgKind::Graph && a.as_graph() >= n->num_subgraphs()) {
      fail(where, "refers to subgraph " + std::to_string(a.as_graph()) + ", the node has " +
                      std::to_string(n->num_subgraphs()));
    }
    for (const Arg& item : a.as_list()) check_graph_refs(item, n, where);
  }

  void node(const json& j, Graph& g, Scope& scope, const std::string& where, int depth) {
    std::string name = as_string(field(j, "name", where), where + ".name");
    std::string w = where + " (" + name + ")";
    std::string op = as_string(field(j, "op", w), w + ".op");
    std::string overload = as_string(field(j, "overload", w), w + ".overload");
    size_t ns = op.find("::");
    if (ns == std::string::npos || ns == 0 || ns + 2 >= op.size() ||
        op.find('.') != std::string::npos || overload.empty() ||
        overload.find_first_of(".( ") != std::string::npos) {
      fail(w, "op '" + op + "' overload '" + overload + "' is not namespace::name and overload");
    }
    w = where + " (" + name + ", " + op + "." + overload + ")";
    const json& jargs = as_array(field(j, "args", w), w + ".args");
    std::vector<ir::NamedArg> args;
    for (size_t i = 0; i < jargs.size(); ++i) {
      std::string aw = at(w + ".args", i);
      std::string arg_name = as_string(field(jargs[i], "name", aw), aw + ".name");
      args.push_back({arg_name, arg(field(jargs[i], "value", aw), scope, aw, 0)});
    }
    const json& jouts = as_array(field(j, "outputs", w), w + ".outputs");
    std::vector<std::pair<std::string, ValueType>> outputs;
    for (size_t i = 0; i < jouts.size(); ++i) {
      outputs.push_back(value_def(jouts[i], at(w + ".outputs", i), g));
      pending_.insert(outputs.back().first);
    }
    pending_.clear();
    if (const ir::OpSchema* schema = program_->ops().find(op, overload)) {
      check_against_schema(*schema, args, outputs.size(), w);
      wrap_numbers(*schema, args, g, name);
    }
    std::vector<ir::ModuleFrame> stack;
    if (const json* jstack = optional_field(j, "module_stack")) {
      as_array(*jstack, w + ".module_stack");
      for (size_t i = 0; i < jstack->size(); ++i) {
        std::string fw = at(w + ".module_stack", i);
        stack.push_back({as_string(field((*jstack)[i], "path", fw), fw + ".path"),
                         as_string(field((*jstack)[i], "type", fw), fw + ".type")});
      }
    }
    std::vector<std::string> names;
    for (const auto& o : outputs) names.push_back(o.first);
    Node* n = g.create_node(op, overload, std::move(args), std::move(outputs), nullptr, name);
    n->set_module_stack(std::move(stack));
    if (const json* subgraphs = optional_field(j, "subgraphs")) {
      as_array(*subgraphs, w + ".subgraphs");
      if (depth >= kMaxDepth) fail(w, "subgraphs nest too deeply");
      for (size_t i = 0; i < subgraphs->size(); ++i) {
        graph((*subgraphs)[i], *n->add_subgraph(), at(w + ".subgraphs", i), depth + 1, nullptr);
      }
    }
    for (const ir::NamedArg& a : n->args()) check_graph_refs(a.value, n, w);
    for (size_t i = 0; i < names.size(); ++i) scope[names[i]] = n->output(i);
  }

  // torch's decompositions pass Python numbers where a schema takes a Tensor (reflection_pad2d's
  // `sub.Tensor(4, idx)`); ATen wraps such a number into a 0-d tensor, which takes part in type
  // promotion as a scalar would. The same here: a 0-d scalar_tensor of int64, float32 (torch's
  // default dtype) or bool before the node, so every kernel gets the tensor its schema names.
  static void wrap_numbers(const ir::OpSchema& schema, std::vector<ir::NamedArg>& args, Graph& g,
                           const std::string& node_name) {
    const auto& expected = schema.arguments();
    for (size_t i = 0; i < args.size() && i < expected.size(); ++i) {
      const ir::ArgumentSchema& a = expected[i];
      const ir::ArgKind kind = args[i].value.kind();
      if (a.kind != ir::TypeKind::Tensor || a.is_list ||
          (kind != ir::ArgKind::Int && kind != ir::ArgKind::Float && kind != ir::ArgKind::Bool)) {
        continue;
      }
      const ir::DType dtype = kind == ir::ArgKind::Int     ? ir::DType::Int64
                              : kind == ir::ArgKind::Float ? ir::DType::Float32
                                                           : ir::DType::Bool;
      std::vector<std::pair<std::string, ValueType>> out;
      out.emplace_back(node_name + "_" + a.name + "_number",
                       ValueType::of_tensor(ir::TensorType{dtype, {}, {}}));
      Node* wrap = g.create_node("aten::scalar_tensor", "default",
                                 {{"s", args[i].value},
                                  {"dtype", Arg::dtype(dtype)},
                                  {"layout", Arg::none()},
                                  {"device", Arg::none()},
                                  {"pin_memory", Arg::none()}},
                                 std::move(out), nullptr, node_name + "_" + a.name + "_number");
      args[i].value = Arg::value(wrap->output());
    }
  }

  static void check_against_schema(const ir::OpSchema& schema,
                                   const std::vector<ir::NamedArg>& args, size_t num_outputs,
                                   const std::string& where) {
    const auto& expected = schema.arguments();
    if (args.size() != expected.size()) {
      fail(where, std::to_string(args.size()) + " arguments, the schema '" + schema.to_string() +
                      "' has " + std::to_string(expected.size()));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].name != expected[i].name) {
        fail(where, "argument " + std::to_string(i) + " is '" + args[i].name +
                        "', the schema says '" + expected[i].name + "'");
      }
    }
    const auto& returns = schema.returns();
    bool list_return = returns.size() == 1 && returns[0].is_list;
    if (!list_return && num_outputs != returns.size()) {
      fail(where, std::to_string(num_outputs) + " outputs, the schema returns " +
                      std::to_string(returns.size()));
    }
  }

  // {"inputs": [value defs], "nodes": [...], "outputs": [names]}. For the top-level graph the
  // signature's input kinds come from `specs` (by value name).
  void graph(const json& j, Graph& g, const std::string& where, int depth,
             const std::map<std::string, ir::InputSpec>* specs) {
    Scope scope;
    const json& inputs = as_array(field(j, "inputs", where), where + ".inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto [name, type] = value_def(inputs[i], at(where + ".inputs", i), g);
      if (specs != nullptr) {
        auto it = specs->find(name);
        if (it == specs->end())
          fail(at(where + ".inputs", i), "input '" + name + "' is not in the signature");
        scope[name] = program_->add_input(name, std::move(type), it->second);
      } else {
        scope[name] = g.add_input(name, std::move(type));
      }
    }
    const json& nodes = as_array(field(j, "nodes", where), where + ".nodes");
    for (size_t i = 0; i < nodes.size(); ++i)
      node(nodes[i], g, scope, at(where + ".nodes", i), depth);
    const json& outputs = as_array(field(j, "outputs", where), where + ".outputs");
    std::vector<Value*> outs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string name = as_string(outputs[i], at(where + ".outputs", i));
      auto it = scope.find(name);
      if (it == scope.end()) fail(at(where + ".outputs", i), "unknown value '" + name + "'");
      outs.push_back(it->second);
    }
    if (specs == nullptr)
      g.set_outputs(std::move(outs));
    else
      top_outputs_ = std::move(outs);
  }

  void read_program_graph(const json& doc) {
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
  void check_weights() {
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

  std::shared_ptr<const std::vector<uint8_t>> file_;
  uint64_t data_offset_ = 0;
  uint64_t data_size_ = 0;
  std::unique_ptr<Program> program_;
  std::vector<Value*> top_outputs_;
  std::set<std::string> pending_;  // output names of the node being read
};

}  // namespace

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
