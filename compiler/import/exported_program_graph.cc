// The exported-program reader's graphs: value definitions and their types, nodes checked
// against their op schemas, arguments, and nested subgraphs.
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/import/exported_program_internal.h"
#include "compiler/import/json_access.h"

namespace ember::importer::ep_internal {

namespace {

constexpr int kMaxDepth = 64;  // nesting of subgraphs and lists: bounds the recursion

bool valid_value_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return true;
}

void check_graph_refs(const Arg& a, const Node* n, const std::string& where) {
  if (a.kind() == ir::ArgKind::Graph && a.as_graph() >= n->num_subgraphs()) {
    fail(where, "refers to subgraph " + std::to_string(a.as_graph()) + ", the node has " +
                    std::to_string(n->num_subgraphs()));
  }
  for (const Arg& item : a.as_list()) check_graph_refs(item, n, where);
}

// torch's decompositions pass Python numbers where a schema takes a Tensor (reflection_pad2d's
// `sub.Tensor(4, idx)`); ATen wraps such a number into a 0-d tensor, which takes part in type
// promotion as a scalar would. The same here: a 0-d scalar_tensor of int64, float32 (torch's
// default dtype) or bool before the node, so every kernel gets the tensor its schema names.
void wrap_numbers(const ir::OpSchema& schema, std::vector<ir::NamedArg>& args, Graph& g,
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

void check_against_schema(const ir::OpSchema& schema, const std::vector<ir::NamedArg>& args,
                          size_t num_outputs, const std::string& where) {
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

}  // namespace

DType Importer::dtype(const json& j, const std::string& where) {
  std::string name = as_string(j, where);
  std::optional<DType> d = ir::dtype_from_name(name);
  if (!d || name != ir::dtype_name(*d)) fail(where, "unknown dtype '" + name + "'");
  return *d;
}

// Dim expressions are kept as text; each name in one must be a declared symbol.
Dim Importer::dim(const json& j, const std::string& where) {
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
std::pair<std::string, ValueType> Importer::value_def(const json& j, const std::string& where,
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

Arg Importer::arg(const json& j, const Scope& scope, const std::string& where, int depth) {
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

void Importer::node(const json& j, Graph& g, Scope& scope, const std::string& where, int depth) {
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

// {"inputs": [value defs], "nodes": [...], "outputs": [names]}. For the top-level graph the
// signature's input kinds come from `specs` (by value name).
void Importer::graph(const json& j, Graph& g, const std::string& where, int depth,
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

}  // namespace ember::importer::ep_internal
