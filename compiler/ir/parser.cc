#include "compiler/ir/parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "compiler/ir/text_reader.h"

namespace ember::ir {
namespace {

using internal::hex_digit;
using internal::is_ident_char;
using internal::is_ident_start;
using internal::ParseError;

// The grammar of the text form; the lexical layer (spaces, names, numbers, strings, positions)
// is TextReader.
class Parser : public internal::TextReader {
 public:
  explicit Parser(std::string_view text) : TextReader(text) {}

  std::unique_ptr<Program> program() {
    auto p = std::make_unique<Program>();
    program_ = p.get();
    while (true) {
      skip_space();
      size_t at = pos_;
      std::string keyword = ident("'sym', 'weight', 'mutated' or 'graph'");
      if (keyword == "sym") {
        symbol();
      } else if (keyword == "weight") {
        weight();
      } else if (keyword == "mutated") {
        mutated();
      } else if (keyword == "graph") {
        graph(program_->graph(), /*top=*/true);
        break;
      } else {
        fail(at, "expected 'sym', 'weight', 'mutated' or 'graph', found '" + keyword + "'");
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail(pos_, "unexpected text after the graph");
    link_aliases();
    return p;
  }

 private:
  using Scope = std::map<std::string, Value*, std::less<>>;

  // Types -----------------------------------------------------------------------------------
  Dim dim() {
    skip_space();
    size_t start = pos_;
    int depth = 0;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') break;
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (depth == 0 && (c == ',' || c == ']')) break;
      ++pos_;
    }
    std::string_view raw = text_.substr(start, pos_ - start);
    while (!raw.empty() && raw.back() == ' ') raw.remove_suffix(1);
    if (raw.empty()) fail(start, "expected a dim");
    size_t le = raw.find("<=");
    if (le == std::string_view::npos) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
      if (ec != std::errc() || end != raw.data() + raw.size() || v < 0) {
        fail(start, "a dim is a size >= 0 or 'expr<=bound', not '" + std::string(raw) + "'");
      }
      return Dim(v);
    }
    std::string_view expr = raw.substr(0, le);
    std::string_view bound = raw.substr(le + 2);
    int balance = 0;
    for (char c : expr) {
      balance += c == '(' ? 1 : c == ')' ? -1 : 0;
      bool allowed =
          is_ident_char(c) || std::string_view("+-*/%(),").find(c) != std::string_view::npos;
      if (balance < 0 || !allowed)
        fail(start, "bad character in dim expression '" + std::string(expr) + "'");
    }
    if (balance != 0)
      fail(start, "unbalanced parentheses in dim expression '" + std::string(expr) + "'");
    int64_t v = 0;
    auto [end, ec] = std::from_chars(bound.data(), bound.data() + bound.size(), v);
    if (expr.empty() || ec != std::errc() || end != bound.data() + bound.size() || v < 0) {
      fail(start, "bad symbolic dim '" + std::string(raw) + "'");
    }
    check_symbols(expr, start);
    return Dim::symbolic(std::string(expr), v);
  }
  // Every name in a dim expression is a declared symbol (names followed by '(' are functions).
  void check_symbols(std::string_view expr, size_t at) {
    for (size_t i = 0; i < expr.size();) {
      if (!is_ident_start(expr[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < expr.size() && is_ident_char(expr[j])) ++j;
      std::string_view name = expr.substr(i, j - i);
      if ((j >= expr.size() || expr[j] != '(') && program_->find_symbol(name) == nullptr) {
        fail(at, "unknown symbol '" + std::string(name) + "' (declare it with 'sym')");
      }
      i = j;
    }
  }
  ValueType value_type() {
    skip_space();
    size_t at = pos_;
    std::string name = ident("a type");
    if (!peek("[")) {
      if (name == "int") return ValueType::scalar(ValueKind::Int);
      if (name == "float") return ValueType::scalar(ValueKind::Float);
      if (name == "bool") return ValueType::scalar(ValueKind::Bool);
      fail(at, "unknown type '" + name + "'");
    }
    return ValueType::of_tensor(tensor_type(name, at));
  }
  TensorType tensor_type(const std::string& dtype_name, size_t at) {
    std::optional<DType> dtype = dtype_from_name(dtype_name);
    if (!dtype) fail(at, "unknown dtype '" + dtype_name + "'");
    TensorType t;
    t.dtype = *dtype;
    expect("[");
    if (!consume("]")) {
      do {
        t.shape.push_back(dim());
      } while (consume(","));
      expect("]");
    }
    if (peek("{")) {
      size_t order_at = pos_;
      expect("{");
      std::vector<bool> seen(t.shape.size(), false);
      if (!consume("}")) {
        do {
          int64_t d = integer();
          if (d < 0 || static_cast<size_t>(d) >= t.shape.size() || seen[static_cast<size_t>(d)]) {
            fail(order_at, "the dim order must be a permutation of 0.." +
                               std::to_string(t.shape.size()) + "-1");
          }
          seen[static_cast<size_t>(d)] = true;
          t.dim_order.push_back(static_cast<int32_t>(d));
        } while (consume(","));
        expect("}");
      }
      if (t.dim_order.size() != t.shape.size()) {
        fail(order_at, "the dim order must name every dim once");
      }
      // The contiguous order is written by leaving it out; keep one spelling.
      if (t.is_contiguous()) t.dim_order.clear();
    }
    return t;
  }

  // Program header --------------------------------------------------------------------------
  void symbol() {
    size_t at = (skip_space(), pos_);
    Symbol s;
    s.name = ident("a symbol name");
    if (program_->find_symbol(s.name)) fail(at, "symbol '" + s.name + "' is declared twice");
    keyword("in");
    expect("[");
    s.min = integer();
    expect(",");
    s.max = integer();
    expect("]");
    if (s.min < 0 || s.max < s.min) fail(at, "symbol bounds need 0 <= min <= max");
    program_->symbols.push_back(s);
  }
  void weight() {
    size_t at = (skip_space(), pos_);
    Weight w;
    w.name = string_literal();
    if (program_->find_weight(w.name)) fail(at, "weight \"" + w.name + "\" is declared twice");
    expect(":");
    size_t type_at = (skip_space(), pos_);
    w.type = tensor_type(ident("a dtype"), type_at);
    if (!w.type.is_static()) fail(type_at, "weights have static shapes");
    if (peek_keyword("alias_of")) {
      keyword("alias_of");
      w.alias_of = string_literal();
    }
    if (consume("=")) {
      keyword("hex");
      size_t data_at = pos_;
      std::string hex = string_literal();
      if (hex.size() % 2) fail(data_at, "hex data needs an even number of digits");
      auto bytes = std::make_shared<std::vector<uint8_t>>();
      for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0) fail(data_at, "bad hex digit");
        bytes->push_back(static_cast<uint8_t>(hi * 16 + lo));
      }
      std::optional<int64_t> numel = w.type.numel_upper_bound();
      if (!numel || static_cast<uint64_t>(*numel) * dtype_size(w.type.dtype) != bytes->size()) {
        fail(data_at, "weight \"" + w.name + "\": " + std::to_string(bytes->size()) +
                          " bytes of data for " + to_string(w.type));
      }
      w.nbytes = bytes->size();
      w.storage = std::move(bytes);
    }
    program_->weights.push_back(std::move(w));
    weight_positions_.push_back(at);
  }
  void mutated() {
    size_t at = (skip_space(), pos_);
    std::string kind = ident("'buffer', 'parameter' or 'user_input'");
    std::string name = string_literal();
    if (kind == "buffer") {
      program_->mutated_buffers.push_back(name);
    } else if (kind == "parameter") {
      program_->mutated_parameters.push_back(name);
    } else if (kind == "user_input") {
      program_->mutated_user_inputs.push_back(name);
    } else {
      fail(at, "expected 'buffer', 'parameter' or 'user_input'");
    }
  }
  void link_aliases() {
    for (size_t i = 0; i < program_->weights.size(); ++i) {
      Weight& w = program_->weights[i];
      if (w.alias_of.empty()) continue;
      const Weight* target = program_->find_weight(w.alias_of);
      if (target == nullptr || !target->alias_of.empty()) {
        fail(weight_positions_[i], "weight \"" + w.name + "\" is an alias of \"" + w.alias_of +
                                       "\", which is not a weight with its own data");
      }
      if (target->type.dtype != w.type.dtype || target->type.shape != w.type.shape) {
        fail(weight_positions_[i], "weight \"" + w.name + "\" has another type than its target");
      }
      if (!w.has_data()) {
        w.storage = target->storage;
        w.offset = target->offset;
        w.nbytes = target->nbytes;
      }
    }
  }

  // Graphs ----------------------------------------------------------------------------------
  Value* lookup(const Scope& scope, size_t at, const std::string& name) {
    auto it = scope.find(name);
    if (it == scope.end()) fail(at, "unknown value %" + name + " (values must be defined first)");
    return it->second;
  }
  void check_new_name(const Graph& g, size_t at, const std::string& name) {
    if (g.is_name_used(name)) fail(at, "value %" + name + " is defined twice");
  }

  void graph(Graph& g, bool top) {
    Scope scope;
    expect("(");
    if (!consume(")")) {
      do {
        size_t at = (skip_space(), pos_);
        std::string name = value_name();
        check_new_name(g, at, name);
        expect(":");
        ValueType type = value_type();
        if (top) {
          InputSpec spec = input_spec();
          scope[name] = program_->add_input(name, std::move(type), std::move(spec));
        } else {
          scope[name] = g.add_input(name, std::move(type));
        }
      } while (consume(","));
      expect(")");
    }
    expect("{");
    while (!peek_keyword("return")) {
      if (at_end()) fail(pos_, "expected 'return' before the end of the graph");
      node(g, scope);
    }
    keyword("return");
    expect("(");
    if (!consume(")")) {
      do {
        size_t at = (skip_space(), pos_);
        Value* v = lookup(scope, at, value_name());
        if (top) {
          program_->add_output(v, output_spec());
        } else {
          std::vector<Value*> outs = g.outputs();
          outs.push_back(v);
          g.set_outputs(std::move(outs));
        }
      } while (consume(","));
      expect(")");
    }
    expect("}");
  }

  InputSpec input_spec() {
    InputSpec spec;
    if (peek_keyword("parameter") || peek_keyword("buffer") || peek_keyword("constant")) {
      std::string kind = ident("an input kind");
      spec.kind = kind == "parameter" ? InputKind::Parameter
                  : kind == "buffer"  ? InputKind::Buffer
                                      : InputKind::Constant;
      spec.target = string_literal();
    }
    if (peek_keyword("aliases")) {
      keyword("aliases");
      expect("[");
      do {
        spec.aliases.push_back(string_literal());
      } while (consume(","));
      expect("]");
    }
    if (peek_keyword("nonpersistent")) {
      keyword("nonpersistent");
      spec.persistent = false;
    }
    return spec;
  }

  OutputSpec output_spec() {
    OutputSpec spec;
    if (peek_keyword("buffer_mutation") || peek_keyword("user_input_mutation")) {
      std::string kind = ident("an output kind");
      spec.kind =
          kind == "buffer_mutation" ? OutputKind::BufferMutation : OutputKind::UserInputMutation;
      spec.target = string_literal();
    }
    return spec;
  }

  std::pair<std::string, ValueType> value_def(const Graph& g, std::vector<std::string>& seen) {
    size_t at = (skip_space(), pos_);
    std::string name = value_name();
    check_new_name(g, at, name);
    for (const std::string& s : seen) {
      if (s == name) fail(at, "value %" + name + " is defined twice");
    }
    seen.push_back(name);
    expect(":");
    return {name, value_type()};
  }

  void node(Graph& g, Scope& scope) {
    skip_space();
    size_t line_at = pos_;
    std::vector<std::pair<std::string, ValueType>> outputs;
    std::vector<std::string> seen;
    if (consume("(")) {
      if (!consume(")")) {
        do {
          outputs.push_back(value_def(g, seen));
        } while (consume(","));
        expect(")");
      }
    } else if (peek("%")) {
      outputs.push_back(value_def(g, seen));
    } else {
      fail(pos_, "expected a node ('%name: type = op(...)') or 'return'" + found());
    }
    expect("=");
    skip_space();
    size_t op_at = pos_;
    while (pos_ < text_.size() &&
           (is_ident_char(text_[pos_]) || text_[pos_] == ':' || text_[pos_] == '.')) {
      ++pos_;
    }
    std::string_view qualified = text_.substr(op_at, pos_ - op_at);
    size_t ns = qualified.find("::");
    size_t dot = ns == std::string_view::npos ? ns : qualified.find('.', ns + 2);
    if (ns == std::string_view::npos || dot == std::string_view::npos ||
        dot + 1 == qualified.size()) {
      fail(op_at, "expected an op as namespace::name.overload" + (pos_ = op_at, found()));
    }
    std::string op(qualified.substr(0, dot));
    std::string overload(qualified.substr(dot + 1));
    expect("(");
    std::vector<NamedArg> args;
    std::vector<std::pair<size_t, size_t>> graph_refs;  // (position, index) to check later
    if (!consume(")")) {
      do {
        std::string name = ident("an argument name");
        expect("=");
        args.push_back({name, arg(scope, graph_refs)});
      } while (consume(","));
      expect(")");
    }
    std::string name;
    if (peek_keyword("named")) {
      keyword("named");
      name = string_literal();
    } else if (outputs.empty()) {
      fail(line_at, "a node without outputs needs a name: add 'named \"...\"'");
    }
    std::vector<ModuleFrame> stack;
    if (consume("@[")) {
      do {
        ModuleFrame f;
        f.path = string_literal();
        expect(":");
        f.type = string_literal();
        stack.push_back(std::move(f));
      } while (consume(","));
      expect("]");
    }
    std::vector<std::string> names;
    for (const auto& o : outputs) names.push_back(o.first);
    Node* n = g.create_node(std::move(op), std::move(overload), std::move(args), std::move(outputs),
                            nullptr, std::move(name));
    n->set_module_stack(std::move(stack));
    if (consume("{")) {
      while (!consume("}")) {
        keyword("graph");
        graph(*n->add_subgraph(), /*top=*/false);
      }
    }
    for (const auto& [at, index] : graph_refs) {
      if (index >= n->num_subgraphs()) {
        fail(at, "^" + std::to_string(index) + " names a subgraph the node does not have");
      }
    }
    for (size_t i = 0; i < names.size(); ++i) scope[names[i]] = n->output(i);
  }

  Arg arg(const Scope& scope, std::vector<std::pair<size_t, size_t>>& graph_refs) {
    skip_space();
    size_t at = pos_;
    if (at >= text_.size()) fail(at, "expected an argument" + found());
    char c = text_[at];
    if (c == '%') return Arg::value(lookup(scope, at, value_name()));
    if (c == '"') return Arg::string(string_literal());
    if (c == '^') {
      ++pos_;
      int64_t index = integer();
      if (index < 0) fail(at, "a subgraph index is >= 0");
      graph_refs.emplace_back(at, static_cast<size_t>(index));
      return Arg::graph(static_cast<size_t>(index));
    }
    if (c == '[') {
      ++pos_;
      std::vector<Arg> items;
      if (!consume("]")) {
        do {
          items.push_back(arg(scope, graph_refs));
        } while (consume(","));
        expect("]");
      }
      return Arg::list(std::move(items));
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
    std::string word = ident("an argument");
    if (word == "none") return Arg::none();
    if (word == "true") return Arg::boolean(true);
    if (word == "false") return Arg::boolean(false);
    if (word == "inf") return Arg::floating(std::numeric_limits<double>::infinity());
    if (word == "nan") return Arg::floating(std::numeric_limits<double>::quiet_NaN());
    if (word == "dtype") {
      expect("(");
      size_t dtype_at = (skip_space(), pos_);
      std::string name = ident("a dtype");
      std::optional<DType> d = dtype_from_name(name);
      if (!d) fail(dtype_at, "unknown dtype '" + name + "'");
      expect(")");
      return Arg::dtype(*d);
    }
    if (word == "device" || word == "layout" || word == "memory_format") {
      expect("(");
      std::string text = string_literal();
      expect(")");
      if (word == "device") return Arg::device(std::move(text));
      if (word == "layout") return Arg::layout(std::move(text));
      return Arg::memory_format(std::move(text));
    }
    fail(at, "unknown argument '" + word + "'");
  }

  Arg number() {
    size_t start = pos_;
    if (text_.substr(pos_, 4) == "-inf") {
      pos_ += 4;
      return Arg::floating(-std::numeric_limits<double>::infinity());
    }
    size_t end = pos_;
    if (end < text_.size() && text_[end] == '-') ++end;
    bool is_float = false;
    while (end < text_.size()) {
      char c = text_[end];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++end;
      } else if (c == '.' || c == 'e' || c == 'E' ||
                 ((c == '+' || c == '-') && (text_[end - 1] == 'e' || text_[end - 1] == 'E'))) {
        is_float = true;
        ++end;
      } else {
        break;
      }
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + end;
    pos_ = end;
    if (is_float) {
      double d = 0;
      auto [p, ec] = std::from_chars(first, last, d);
      if (ec != std::errc() || p != last)
        fail(start, "bad float '" + std::string(first, last) + "'");
      return Arg::floating(d);
    }
    int64_t i = 0;
    auto [p, ec] = std::from_chars(first, last, i);
    if (ec != std::errc() || p != last) {
      fail(start, "bad integer '" + std::string(first, last) + "' (out of the int64 range?)");
    }
    return Arg::integer(i);
  }

  Program* program_ = nullptr;
  std::vector<size_t> weight_positions_;
};

}  // namespace

StatusOr<std::unique_ptr<Program>> parse_program(std::string_view text) {
  Parser parser(text);
  try {
    return parser.program();
  } catch (const ParseError& e) {
    return parser.status_of(e);
  }
}

}  // namespace ember::ir
