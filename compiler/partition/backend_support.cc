#include "compiler/partition/backend_support.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace ember::partition {

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

// Symbols named in a dim expression ("2*n" -> n); names followed by '(' are functions.
void add_symbols(const ir::Dim& dim, std::set<std::string>& out) {
  const std::string& e = dim.expr;
  for (size_t i = 0; i < e.size();) {
    if (!is_ident_start(e[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < e.size() && is_ident_char(e[j])) ++j;
    if (j >= e.size() || e[j] != '(') out.insert(e.substr(i, j - i));
    i = j;
  }
}

void add_symbols(const ir::Value& v, std::set<std::string>& out) {
  if (!v.is_tensor()) return;
  for (const ir::Dim& d : v.tensor_type().shape) add_symbols(d, out);
}

const ir::Graph& root_graph(const ir::Graph& g) {
  const ir::Graph* cur = &g;
  while (cur->parent_node() != nullptr) cur = cur->parent_node()->owner();
  return *cur;
}

bool contains(const std::vector<ir::DType>& v, ir::DType d) {
  return std::find(v.begin(), v.end(), d) != v.end();
}

std::string dtype_reason(ir::DType d, const std::string& where) {
  return "dtype " + std::string(ir::dtype_name(d)) + " not supported (" + where + ")";
}

std::optional<double> as_number(const ir::Arg& a) {
  switch (a.kind()) {
    case ir::ArgKind::Bool:
      return a.as_bool() ? 1.0 : 0.0;
    case ir::ArgKind::Int:
      return static_cast<double>(a.as_int());
    case ir::ArgKind::Float:
      return a.as_float();
    default:
      return std::nullopt;
  }
}

std::optional<double> parse_default(const std::string& text) {
  if (text == "True" || text == "true") return 1.0;
  if (text == "False" || text == "false") return 0.0;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string format_number(double v) {
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::optional<std::string> data_dependent_shape_reason(const ir::Node& node) {
  static constexpr std::string_view kDataDependentOps[] = {"aten::nonzero",
                                                           "aten::masked_select",
                                                           "aten::unique",
                                                           "aten::_unique",
                                                           "aten::_unique2",
                                                           "aten::unique_dim",
                                                           "aten::unique_consecutive",
                                                           "aten::argwhere"};
  if (std::find(std::begin(kDataDependentOps), std::end(kDataDependentOps), node.op()) !=
      std::end(kDataDependentOps)) {
    return "data-dependent output shape (" + node.op() + " sizes its result by the values read)";
  }
  // Indexing with a bool (or uint8) mask selects as many elements as the mask has set.
  if (node.op() == "aten::index" || node.op() == "aten::index_put" ||
      node.op() == "aten::index_put_") {
    if (const ir::Arg* indices = node.arg("indices")) {
      bool mask = false;
      indices->for_each_value([&](ir::Value* v) {
        mask = mask || (v->is_tensor() && (v->tensor_type().dtype == ir::DType::Bool ||
                                           v->tensor_type().dtype == ir::DType::UInt8));
      });
      if (mask && node.op() == "aten::index") {
        return std::string("data-dependent output shape (index with a bool mask)");
      }
    }
  }
  // A size symbol first appearing on this node's result is unbacked: computed from data.
  std::set<std::string> out_symbols;
  for (size_t i = 0; i < node.num_outputs(); ++i) add_symbols(*node.output(i), out_symbols);
  if (out_symbols.empty()) return std::nullopt;
  std::set<std::string> known;
  for (const ir::Value* in : root_graph(*node.owner()).inputs()) add_symbols(*in, known);
  for (const ir::Value* v : node.operands()) add_symbols(*v, known);
  for (const std::string& s : out_symbols) {
    if (!known.contains(s)) {
      return "data-dependent output shape (size " + s + " is computed from the data)";
    }
  }
  return std::nullopt;
}

OpSupportTable::OpSupportTable(std::string backend_name, std::vector<ir::DType> default_dtypes,
                               size_t default_max_rank)
    : name_(std::move(backend_name)),
      default_dtypes_(std::move(default_dtypes)),
      default_max_rank_(default_max_rank) {}

OpSupportTable& OpSupportTable::add(OpRule rule) {
  for (OpRule& r : rules_) {
    if (r.op == rule.op && r.overload == rule.overload) {
      r = std::move(rule);
      return *this;
    }
  }
  rules_.push_back(std::move(rule));
  return *this;
}

const OpRule* OpSupportTable::find(const ir::Node& node) const {
  const OpRule* any_overload = nullptr;
  for (const OpRule& r : rules_) {
    if (r.op != node.op()) continue;
    if (r.overload == node.overload()) return &r;
    if (r.overload.empty()) any_overload = &r;
  }
  return any_overload;
}

Support OpSupportTable::check(const ir::Node& node) const {
  const OpRule* rule = find(node);
  if (rule == nullptr) {
    return Support::no("op " + node.qualified_op() + " not supported by backend " + name_);
  }
  const std::vector<ir::DType>& dtypes = rule->dtypes.empty() ? default_dtypes_ : rule->dtypes;
  const std::vector<ir::DType>& out_dtypes =
      rule->output_dtypes.empty() ? dtypes : rule->output_dtypes;
  size_t max_rank = rule->max_rank.value_or(default_max_rank_);

  auto check_tensor = [&](const ir::Value& v, const std::vector<ir::DType>& allowed,
                          const std::string& where) -> std::optional<std::string> {
    if (!v.is_tensor()) return std::nullopt;
    const ir::TensorType& t = v.tensor_type();
    if (!contains(allowed, t.dtype)) return dtype_reason(t.dtype, where);
    if (t.rank() > max_rank) {
      return "rank " + std::to_string(t.rank()) + " above the limit of " +
             std::to_string(max_rank) + " (" + where + ")";
    }
    return std::nullopt;
  };

  // Every element of a tensor list is checked, not only the first (C15).
  for (const ir::NamedArg& a : node.args()) {
    auto it = rule->arg_dtypes.find(a.name);
    const std::vector<ir::DType>& allowed = it == rule->arg_dtypes.end() ? dtypes : it->second;
    if (a.value.kind() == ir::ArgKind::Value) {
      if (auto r = check_tensor(*a.value.as_value(), allowed,
                                "argument '" + a.name + "' %" + a.value.as_value()->name())) {
        return Support::no(*r);
      }
    } else if (a.value.kind() == ir::ArgKind::List) {
      const std::vector<ir::Arg>& items = a.value.as_list();
      for (size_t i = 0; i < items.size(); ++i) {
        std::optional<std::string> r;
        items[i].for_each_value([&](ir::Value* v) {
          if (!r) {
            r = check_tensor(
                *v, allowed,
                "argument '" + a.name + "' element " + std::to_string(i) + " %" + v->name());
          }
        });
        if (r) return Support::no(*r);
      }
    }
  }
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const ir::Value& v = *node.output(i);
    if (auto r = check_tensor(v, out_dtypes, "result %" + v.name())) return Support::no(*r);
  }

  for (const AttrRule& attr : rule->attrs) {
    std::optional<double> value;
    if (const ir::Arg* a = node.arg(attr.name)) {
      value = as_number(*a);
      if (!value) return Support::no("attribute " + attr.name + " is not a number");
    } else if (node.schema() != nullptr) {
      if (auto index = node.schema()->argument_index(attr.name)) {
        const auto& def = node.schema()->arguments()[*index].default_value;
        if (def) value = parse_default(*def);
      }
    }
    if (!value) return Support::no("attribute " + attr.name + " missing");
    if (std::find(attr.allowed.begin(), attr.allowed.end(), *value) == attr.allowed.end()) {
      std::string allowed;
      for (double d : attr.allowed) allowed += (allowed.empty() ? "" : " or ") + format_number(d);
      return Support::no("attribute " + attr.name + "=" + format_number(*value) +
                         " not supported (needs " + allowed + ")");
    }
  }

  if (!rule->allow_data_dependent_shapes) {
    if (auto r = data_dependent_shape_reason(node)) return Support::no(*r);
  }
  if (rule->extra) {
    if (auto r = rule->extra(node)) return Support::no(*r);
  }
  return Support::yes();
}

}  // namespace ember::partition
