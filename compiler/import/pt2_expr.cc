// torch's serialized codes (dtypes, memory formats, SymInt operators, schemas the builtin table
// lacks) and symbolic sizes, read from sympy's srepr.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "compiler/import/pt2_internal.h"

namespace ember::importer::pt2_internal {

constexpr const char* kExtraSchemas[] = {
    ("aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, "
     "Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, "
     "Tensor)"),
    "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
    "aten::matmul(Tensor self, Tensor other) -> Tensor",
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

namespace {

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

}  // namespace

json Translator::dim(const json& size, const std::string& where) {
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

}  // namespace ember::importer::pt2_internal
