// The .pt2 reader: graphs, nodes and their arguments, as Ember exported-program JSON.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "compiler/import/pt2.h"
#include "compiler/import/pt2_internal.h"

namespace ember::importer::pt2_internal {

json Translator::tensor_value(const std::string& name, const json& meta, const std::string& where) {
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

std::string Translator::claim(const std::string& base) {
  std::string name;
  for (char c : base) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (name.empty()) name = "v";
  std::string candidate = name;
  for (int k = 1; !names_.insert(candidate).second; ++k) {
    candidate = name + "_" + std::to_string(k);
  }
  return candidate;
}

const json& Translator::meta_of(const Scope& scope, const std::string& name,
                                const std::string& where) {
  for (const json* tv : {scope.tensor_values, top_tensor_values_}) {
    if (const json* m = tv == nullptr ? nullptr : optional_field(*tv, name.c_str())) return *m;
  }
  fail(where, "value '" + name + "' has no entry in tensor_values");
}

std::string Translator::lookup(const Scope& scope, const std::string& name,
                               const std::string& where) {
  auto it = scope.names.find(name);
  if (it == scope.names.end()) fail(where, "unknown value '" + name + "'");
  return it->second;
}

std::vector<std::pair<std::string, std::string>> Translator::output_names(
    const json& outputs, const std::string& where) {
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

json Translator::sym_item(const json& item, const Scope& scope, const std::string& where,
                          const char* constant) {
  auto [kind, v] = union_of(item, where);
  if (kind == "as_name") return {{"value", lookup(scope, as_string(*v, where), where)}};
  if (kind == "as_int" && std::strcmp(constant, "int") == 0) return {{"int", as_int(*v, where)}};
  if (kind == "as_float" && std::strcmp(constant, "float") == 0) return float_arg(*v, where);
  if (kind == "as_bool" && std::strcmp(constant, "bool") == 0 && v->is_boolean())
    return {{"bool", v->get<bool>()}};
  fail(where, "unexpected symbolic item '" + kind + "'");
}

json Translator::argument(const json& a, const Scope& scope, const std::string& where) {
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

json Translator::default_arg(const ir::ArgumentSchema& a, const std::string& where) {
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

std::vector<json> Translator::module_stack(const json& node) {
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

json Translator::translate_node(const json& node, Scope& scope, const std::string& where,
                                int depth) {
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

void Translator::claim_outputs(const json& nodes, Scope& scope, const std::string& where) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string nw = at(where + ".nodes", i);
    for (const auto& [n, type] : output_names(field(nodes[i], "outputs", nw), nw + ".outputs")) {
      if (scope.names.count(n) != 0) fail(nw, "value '" + n + "' is defined twice");
      scope.names[n] = claim(n);
    }
  }
}

void Translator::translate_nodes(const json& nodes, Scope& scope, const std::string& where,
                                 int depth, json& out) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string nw = at(where + ".nodes", i);
    if (inline_wrapper(nodes[i], scope, nw, depth, out)) continue;
    json n = translate_node(nodes[i], scope, nw, depth);
    if (!n.is_null()) out.push_back(std::move(n));
  }
}

bool Translator::inline_wrapper(const json& node, Scope& scope, const std::string& where, int depth,
                                json& nodes) {
  const std::string target = as_string(field(node, "target", where), where + ".target");
  const bool grad = target == "torch.ops.higher_order.wrap_with_set_grad_enabled";
  const bool autocast = target == "torch.ops.higher_order.wrap_with_autocast";
  if (!grad && !autocast) return false;
  std::string name = where;
  if (const json* n = optional_field(node, "name"); n != nullptr && n->is_string())
    name = "node " + n->get<std::string>();
  const std::string w = name + " (" + target + ")";
  // wrap_with_set_grad_enabled(enabled, body, *operands): grad mode changes nothing a program
  // computes. wrap_with_autocast(device_type, dtype, enabled, cache_enabled, body, *operands):
  // an enabled autocast casts its ops' operands, which the body does not show.
  const size_t body_at = grad ? 1 : 4;
  const json& inputs = as_array(field(node, "inputs", w), w + ".inputs");
  if (inputs.size() <= body_at) fail(w, "fewer arguments than the wrapper takes");
  auto arg = [&](size_t i) -> const json& { return field(inputs[i], "arg", at(w + ".inputs", i)); };
  if (autocast) {
    auto [kind, enabled] = union_of(arg(2), at(w + ".inputs", 2));
    if (kind != "as_bool" || !enabled->is_boolean()) fail(w, "autocast's enabled is not a bool");
    if (enabled->get<bool>()) {
      auto [dkind, device] = union_of(arg(0), at(w + ".inputs", 0));
      auto [tkind, dtype] = union_of(arg(1), at(w + ".inputs", 1));
      const std::string d = dkind == "as_string" ? as_string(*device, w) : "?";
      const std::string t = tkind == "as_scalar_type" ? dtype_of_code(as_int(*dtype, w), w)
                                                      : std::string("its default dtype");
      throw ImportError{w + ": a torch.autocast('" + d + "', " + t +
                        ") region; Ember does not apply autocast's casts itself, so the region "
                        "is not inlined" +
                        std::string(kPt2DecomposeHint) +
                        " (it writes autocast's casts into the graph)"};
    }
  }
  auto [gkind, g] = union_of(arg(body_at), at(w + ".inputs", body_at));
  if (gkind != "as_graph") fail(at(w + ".inputs", body_at), "expected a graph");
  if (depth >= kMaxDepth) fail(w, "subgraphs nest too deeply");
  const std::string bw = w + " body";
  const json& body = field(*g, "graph", bw);
  const json& body_inputs = as_array(field(body, "inputs", bw), bw + ".inputs");
  const size_t operands = inputs.size() - body_at - 1;
  if (body_inputs.size() != operands) {
    fail(w, "the body takes " + std::to_string(body_inputs.size()) + " inputs but is given " +
                std::to_string(operands) + " operands");
  }
  Scope inner;
  inner.tensor_values = optional_field(body, "tensor_values");
  for (size_t i = 0; i < operands; ++i) {
    const std::string iw = at(bw + ".inputs", i);
    auto [kind, v] = union_of(body_inputs[i], iw);
    if (kind != "as_tensor") fail(iw, "a body input of kind '" + kind + "'");
    const std::string inner_name = as_string(field(*v, "name", iw), iw + ".name");
    if (inner.names.count(inner_name) != 0) fail(iw, "input '" + inner_name + "' is named twice");
    const std::string aw = at(w + ".inputs", body_at + 1 + i);
    auto [akind, a] = union_of(arg(body_at + 1 + i), aw);
    if (akind != "as_tensor") fail(aw, "an operand of kind '" + akind + "'; expected a tensor");
    inner.names[inner_name] = lookup(scope, as_string(field(*a, "name", aw), aw), aw);
  }
  const json& body_nodes = as_array(field(body, "nodes", bw), bw + ".nodes");
  claim_outputs(body_nodes, inner, bw);
  translate_nodes(body_nodes, inner, bw, depth + 1, nodes);
  const json& body_outputs = as_array(field(body, "outputs", bw), bw + ".outputs");
  const auto outer = output_names(field(node, "outputs", w), w + ".outputs");
  if (outer.size() != body_outputs.size()) {
    fail(w, "the wrapper has " + std::to_string(outer.size()) + " outputs but its body " +
                std::to_string(body_outputs.size()));
  }
  for (size_t i = 0; i < outer.size(); ++i) {
    const std::string ow = at(bw + ".outputs", i);
    auto [kind, v] = union_of(body_outputs[i], ow);
    if (kind != "as_tensor" || outer[i].second != "tensor") fail(ow, "a non-tensor output");
    // The wrapper's output names the body's value from here on.
    scope.names[outer[i].first] = lookup(inner, as_string(field(*v, "name", ow), ow), ow);
  }
  return true;
}

json Translator::translate_graph(const json& graph, const std::string& where, int depth,
                                 json* signature) {
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
  claim_outputs(nodes, scope, where);
  json out;
  json jinputs = json::array();
  for (size_t i = 0; i < input_names.size(); ++i) {
    const std::string& n = input_names[i];
    jinputs.push_back(
        tensor_value(scope.names[n], meta_of(scope, n, where), at(where + ".inputs", i)));
  }
  out["inputs"] = jinputs;
  json jnodes = json::array();
  translate_nodes(nodes, scope, where, depth, jnodes);
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

}  // namespace ember::importer::pt2_internal
