#include "compiler/ir/op_schema.h"

#include <algorithm>

namespace ember::ir {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Splits at commas outside (), [] and quotes.
std::vector<std::string_view> split_top_level(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(s.substr(start));
  if (!last.empty() || !parts.empty()) parts.push_back(last);
  return parts;
}

// Position of the parenthesis closing the one at `open`, or npos.
size_t matching_paren(std::string_view s, size_t open) {
  int depth = 0;
  char quote = 0;
  for (size_t i = open; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      if (--depth == 0) return i;
    }
  }
  return std::string_view::npos;
}

// Last space outside brackets: it separates a type from a name.
size_t last_top_level_space(std::string_view s) {
  int depth = 0;
  size_t found = std::string_view::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[') ++depth;
    if (s[i] == ')' || s[i] == ']') --depth;
    if (s[i] == ' ' && depth == 0) found = i;
  }
  return found;
}

TypeKind kind_of(std::string_view base) {
  static const std::pair<std::string_view, TypeKind> kKinds[] = {
      {"Tensor", TypeKind::Tensor},
      {"int", TypeKind::Int},
      {"SymInt", TypeKind::SymInt},
      {"float", TypeKind::Float},
      {"bool", TypeKind::Bool},
      {"Scalar", TypeKind::Scalar},
      {"ScalarType", TypeKind::ScalarType},
      {"Layout", TypeKind::Layout},
      {"Device", TypeKind::Device},
      {"MemoryFormat", TypeKind::MemoryFormat},
      {"str", TypeKind::String},
      {"Generator", TypeKind::Generator},
      {"Graph", TypeKind::Graph},
  };
  for (const auto& [name, kind] : kKinds) {
    if (name == base) return kind;
  }
  return TypeKind::Other;
}

Status parse_type(std::string_view type, ArgumentSchema& out) {
  out.type = std::string(type);
  std::string_view t = type;
  if (!t.empty() && t.back() == '?') {
    out.is_optional = true;
    t.remove_suffix(1);
  }
  if (!t.empty() && t.back() == ']') {
    size_t open = t.rfind('[');
    if (open == std::string_view::npos)
      return Status::error("unbalanced [] in type '" + out.type + "'");
    out.is_list = true;
    t = t.substr(0, open);
    if (!t.empty() && t.back() == '?') t.remove_suffix(1);  // Tensor?[]: elements may be None
  }
  size_t paren = t.find('(');
  if (paren != std::string_view::npos && t.back() == ')') {
    std::string_view annotation = t.substr(paren + 1, t.size() - paren - 2);
    size_t arrow = annotation.find("->");
    if (arrow != std::string_view::npos) annotation = trim(annotation.substr(0, arrow));
    if (!annotation.empty() && annotation.back() == '!') {
      out.is_write = true;
      annotation.remove_suffix(1);
    }
    out.alias_set = std::string(annotation);
    t = t.substr(0, paren);
  }
  out.kind = kind_of(t);
  return Status();
}

Status parse_argument(std::string_view text, bool kwarg_only, bool name_required,
                      ArgumentSchema& out) {
  out.kwarg_only = kwarg_only;
  std::string_view body = text;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(' || text[i] == '[') ++depth;
    if (text[i] == ')' || text[i] == ']') --depth;
    if (text[i] == '=' && depth == 0) {
      out.default_value = std::string(trim(text.substr(i + 1)));
      body = trim(text.substr(0, i));
      break;
    }
  }
  size_t space = last_top_level_space(body);
  std::string_view type = body;
  if (space != std::string_view::npos) {
    type = trim(body.substr(0, space));
    out.name = std::string(trim(body.substr(space + 1)));
  } else if (name_required) {
    return Status::error("argument '" + std::string(text) + "' has no name");
  }
  if (type.empty()) return Status::error("argument '" + std::string(text) + "' has no type");
  return parse_type(type, out);
}

std::string argument_text(const ArgumentSchema& a) {
  std::string s = a.type;
  if (!a.name.empty()) s += " " + a.name;
  if (a.default_value) s += "=" + *a.default_value;
  return s;
}

}  // namespace

StatusOr<OpSchema> OpSchema::parse(std::string_view text) {
  auto fail = [&](const std::string& why) {
    return Status::error("bad op schema '" + std::string(text) + "': " + why);
  };
  text = trim(text);
  size_t open = text.find('(');
  if (open == std::string_view::npos) return fail("no argument list");
  std::string_view head = text.substr(0, open);
  size_t ns = head.find("::");
  if (ns == std::string_view::npos || ns == 0) return fail("the name needs a namespace (aten::)");
  OpSchema schema;
  size_t dot = head.find('.', ns + 2);
  schema.name_ = std::string(head.substr(0, dot));
  schema.overload_ = dot == std::string_view::npos ? "default" : std::string(head.substr(dot + 1));
  if (schema.name_.size() <= ns + 2 || schema.overload_.empty()) return fail("empty name");
  size_t close = matching_paren(text, open);
  if (close == std::string_view::npos) return fail("unbalanced parentheses");
  bool kwarg_only = false;
  for (std::string_view part : split_top_level(text.substr(open + 1, close - open - 1))) {
    if (part == "*") {
      kwarg_only = true;
      continue;
    }
    ArgumentSchema a;
    Status s = parse_argument(part, kwarg_only, /*name_required=*/true, a);
    if (!s.ok()) return fail(s.message());
    schema.arguments_.push_back(std::move(a));
  }
  std::string_view rest = trim(text.substr(close + 1));
  if (rest.substr(0, 2) != "->") return fail("no '->' before the returns");
  rest = trim(rest.substr(2));
  if (rest.empty()) return fail("no returns");
  std::vector<std::string_view> returns;
  if (rest.front() == '(' && matching_paren(rest, 0) == rest.size() - 1) {
    returns = split_top_level(rest.substr(1, rest.size() - 2));
  } else {
    returns.push_back(rest);
  }
  for (std::string_view part : returns) {
    ArgumentSchema r;
    Status s = parse_argument(part, false, /*name_required=*/false, r);
    if (!s.ok()) return fail(s.message());
    schema.returns_.push_back(std::move(r));
  }
  return schema;
}

std::optional<size_t> OpSchema::argument_index(std::string_view name) const {
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (arguments_[i].name == name) return i;
  }
  return std::nullopt;
}

std::vector<size_t> OpSchema::mutated_arguments() const {
  std::vector<size_t> result;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (arguments_[i].is_write) result.push_back(i);
  }
  return result;
}

std::optional<size_t> OpSchema::aliased_argument(size_t return_index) const {
  if (return_index >= returns_.size() || returns_[return_index].alias_set.empty()) {
    return std::nullopt;
  }
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (arguments_[i].alias_set == returns_[return_index].alias_set) return i;
  }
  return std::nullopt;
}

bool OpSchema::is_view() const {
  for (const ArgumentSchema& r : returns_) {
    if (!r.alias_set.empty() && !r.is_write) return true;
  }
  return false;
}

std::string OpSchema::to_string() const {
  std::string s = name_;
  if (overload_ != "default") s += "." + overload_;
  s += "(";
  bool star = false;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (i) s += ", ";
    if (arguments_[i].kwarg_only && !star) {
      s += "*, ";
      star = true;
    }
    s += argument_text(arguments_[i]);
  }
  s += ") -> ";
  bool named = std::any_of(returns_.begin(), returns_.end(),
                           [](const ArgumentSchema& r) { return !r.name.empty(); });
  if (returns_.size() == 1 && !named) {
    s += argument_text(returns_[0]);
  } else {
    s += "(";
    for (size_t i = 0; i < returns_.size(); ++i) {
      if (i) s += ", ";
      s += argument_text(returns_[i]);
    }
    s += ")";
  }
  return s;
}

namespace {

constexpr const char* kBuiltinSchemas[] = {
#include "compiler/ir/aten_schemas.inc"
    // Arithmetic on symbolic sizes, as exporters record Python operators on SymInts.
    "sym::add(Scalar a, Scalar b) -> Scalar",
    "sym::sub(Scalar a, Scalar b) -> Scalar",
    "sym::mul(Scalar a, Scalar b) -> Scalar",
    "sym::floordiv(Scalar a, Scalar b) -> Scalar",
    "sym::truediv(Scalar a, Scalar b) -> Scalar",
    "sym::mod(Scalar a, Scalar b) -> Scalar",
    "sym::max(Scalar a, Scalar b) -> Scalar",
    "sym::min(Scalar a, Scalar b) -> Scalar",
    "sym::eq(Scalar a, Scalar b) -> Scalar",
    "sym::ne(Scalar a, Scalar b) -> Scalar",
    "sym::lt(Scalar a, Scalar b) -> Scalar",
    "sym::le(Scalar a, Scalar b) -> Scalar",
    "sym::gt(Scalar a, Scalar b) -> Scalar",
    "sym::ge(Scalar a, Scalar b) -> Scalar",
    "sym::and(Scalar a, Scalar b) -> Scalar",
    "sym::or(Scalar a, Scalar b) -> Scalar",
    "sym::neg(Scalar a) -> Scalar",
    "sym::not(Scalar a) -> Scalar",
    "sym::float(Scalar a) -> Scalar",
    "sym::int(Scalar a) -> Scalar",
    "sym::ceil(Scalar a) -> Scalar",
    "sym::floor(Scalar a) -> Scalar",
    // Control flow: the branches are subgraphs of the node; operands bind to their inputs by
    // position.
    ("higher_order::cond(Tensor pred, Graph true_graph, Graph false_graph, Tensor[] operands) -> "
     "Tensor[]"),
};

}  // namespace

const OpRegistry& OpRegistry::builtin() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    for (const char* text : kBuiltinSchemas) {
      // The table is tested to parse in full (op_schema_test.cc); a bad entry is skipped here
      // rather than taking the compiler down.
      (void)r->add(text);
    }
    return r;
  }();
  return *registry;
}

const OpSchema* OpRegistry::find(std::string_view name, std::string_view overload) const {
  std::string key;
  key.reserve(name.size() + overload.size() + 1);
  key.append(name).append(".").append(overload);
  auto it = by_name_.find(key);
  if (it != by_name_.end()) return it->second;
  return parent_ ? parent_->find(name, overload) : nullptr;
}

StatusOr<const OpSchema*> OpRegistry::add(std::string_view schema_text) {
  StatusOr<OpSchema> parsed = OpSchema::parse(schema_text);
  if (!parsed.ok()) return parsed.status();
  if (const OpSchema* existing = find(parsed->name(), parsed->overload())) {
    if (existing->to_string() != parsed->to_string()) {
      return Status::error("op " + parsed->qualified_name() + " is already known with schema '" +
                           existing->to_string() + "', not '" + parsed->to_string() + "'");
    }
    return existing;
  }
  schemas_.push_back(std::move(*parsed));
  const OpSchema* schema = &schemas_.back();
  by_name_.emplace(schema->qualified_name(), schema);
  return schema;
}

}  // namespace ember::ir
