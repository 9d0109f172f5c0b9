#include "compiler/ops/rewrite_util.h"

#include <cstdlib>
#include <string>
#include <utility>

namespace ember::ops {

ir::Arg parse_literal(std::string_view text) {
  if (text == "none") return ir::Arg::none();
  if (text == "true") return ir::Arg::boolean(true);
  if (text == "false") return ir::Arg::boolean(false);
  if (!text.empty() && text.front() == '[') {
    std::vector<ir::Arg> items;
    std::string body(text.substr(1, text.size() - 2));
    size_t pos = 0;
    while (pos < body.size()) {
      size_t comma = body.find(',', pos);
      if (comma == std::string::npos) comma = body.size();
      items.push_back(ir::Arg::integer(std::strtoll(body.c_str() + pos, nullptr, 10)));
      pos = comma + 1;
    }
    return ir::Arg::list(std::move(items));
  }
  const std::string s(text);
  if (s.find('.') != std::string::npos) return ir::Arg::floating(std::strtod(s.c_str(), nullptr));
  return ir::Arg::integer(std::strtoll(s.c_str(), nullptr, 10));
}

// Builds the kernel's arguments from "a,b=literal,c=other_arg".
std::vector<ir::NamedArg> select_args(const ir::Node& node, const char* spec) {
  if (spec == nullptr) return node.args();
  std::vector<ir::NamedArg> out;
  std::string_view rest(spec);
  while (!rest.empty()) {
    // Split at the next comma outside brackets ("dims=[1,0]" is one item).
    size_t comma = 0;
    for (int depth = 0; comma < rest.size(); ++comma) {
      if (rest[comma] == '[') ++depth;
      if (rest[comma] == ']') --depth;
      if (rest[comma] == ',' && depth == 0) break;
    }
    if (comma == rest.size()) comma = std::string_view::npos;
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    std::string name(item.substr(0, eq));
    if (eq == std::string_view::npos) {
      const ir::Arg* a = node.arg(name);
      out.push_back({name, a != nullptr ? *a : ir::Arg::none()});
      continue;
    }
    std::string_view value = item.substr(eq + 1);
    // `fill_value=value` renames an argument of the functional op.
    const ir::Arg* renamed = node.arg(value);
    out.push_back({name, renamed != nullptr ? *renamed : parse_literal(value)});
  }
  return out;
}

std::vector<ir::ValueType> output_types(const ir::Node& node) {
  std::vector<ir::ValueType> types;
  for (size_t i = 0; i < node.num_outputs(); ++i) types.push_back(node.output(i)->type());
  return types;
}

// Replaces every output of `node` with the matching output of `with`, then erases `node`.
ir::Status replace_node(ir::Node* node, const std::vector<ir::Value*>& with) {
  for (size_t i = 0; i < node->num_outputs() && i < with.size(); ++i) {
    node->output(i)->replace_all_uses_with(with[i]);
  }
  return node->owner()->erase_node(node);
}

ir::Value* input_value(const ir::Node& node, const char* name) {
  const ir::Arg* a = node.arg(name);
  return a != nullptr && a->kind() == ir::ArgKind::Value ? a->as_value() : nullptr;
}

int64_t int_arg(const ir::Node& node, const char* name, int64_t otherwise) {
  const ir::Arg* a = node.arg(name);
  return a != nullptr && a->kind() == ir::ArgKind::Int ? a->as_int() : otherwise;
}

ir::Value* add_constant(ir::Program& program, ir::Weight w, const std::string& value_name) {
  ir::Graph& g = program.graph();
  w.name = g.unique_name(w.name);
  const std::string name = value_name.empty() ? w.name : g.unique_name(value_name);
  const ir::ValueType type = ir::ValueType::of_tensor(w.type);
  const std::string fqn = w.name;
  program.weights.push_back(std::move(w));
  return program.add_input(name, type, ir::InputSpec{ir::InputKind::Constant, fqn, {}, true});
}

ir::ValueType with_shape(ir::DType dtype, std::vector<ir::Dim> shape) {
  return ir::ValueType::of_tensor(ir::TensorType{dtype, std::move(shape), {}});
}

}  // namespace ember::ops
