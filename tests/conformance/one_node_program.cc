#include "tests/conformance/one_node_program.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "compiler/ir/op_schema.h"
#include "compiler/ir/verifier.h"
#include "compiler/ops/kernel_eval.h"
#include "compiler/ops/op_table.h"

namespace ember::conformance {

namespace {

// Every builtin schema string: the candidates for a kernel's functional op are found by name.
constexpr const char* kSchemas[] = {
#include "compiler/ir/aten_schemas.inc"
};

std::optional<ir::DType> ir_dtype(ScalarType t) {
  for (int d = 0; d <= static_cast<int>(ir::DType::Complex128); ++d) {
    const auto dtype = static_cast<ir::DType>(d);
    if (ops::to_scalar_type(dtype) == t) return dtype;
  }
  return std::nullopt;
}

std::optional<std::string> memory_format_name(int64_t code) {
  for (const char* name :
       {"contiguous_format", "preserve_format", "channels_last", "channels_last_3d"}) {
    if (ops::memory_format_code(name) == code) return name;
  }
  return std::nullopt;
}

ir::StatusOr<ir::TensorType> type_of(const Tensor& t) {
  std::optional<ir::DType> dtype = ir_dtype(t.dtype());
  if (!dtype) return ir::Status::error("a tensor of a dtype the IR lacks");
  ir::TensorType type{*dtype, {}, {}};
  for (int32_t s : t.sizes()) type.shape.emplace_back(s);
  bool identity = true;
  for (size_t i = 0; i < t.dim_order().size(); ++i) identity = identity && t.dim_order()[i] == i;
  if (!identity) type.dim_order.assign(t.dim_order().begin(), t.dim_order().end());
  return type;
}

bool is_tensor(const ir::ArgumentSchema& a) { return a.kind == ir::TypeKind::Tensor; }

// The qualified op and overload of "ns::op.overload".
std::pair<std::string, std::string> split(std::string_view qualified) {
  const size_t dot = qualified.find('.', qualified.find("::") + 2);
  if (dot == std::string_view::npos) return {std::string(qualified), "default"};
  return {std::string(qualified.substr(0, dot)), std::string(qualified.substr(dot + 1))};
}

// Schemas ATen has and the builtin table lacks (from `source`), kept for the process.
ir::OpRegistry& extra_schemas() {
  static ir::OpRegistry registry(&ir::OpRegistry::builtin());
  return registry;
}

// Every schema of `op` ("aten::prod"): builtin ones, then the other overloads `source` knows.
std::vector<const ir::OpSchema*> overloads(const std::string& op, const SchemaSource& source) {
  std::vector<const ir::OpSchema*> out;
  const auto add = [&](const ir::OpSchema* s) {
    if (s != nullptr && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const char* text : kSchemas) {
    const std::string_view t(text);
    if (!t.starts_with(op) || t.size() <= op.size()) continue;
    if (t[op.size()] != '(' && t[op.size()] != '.') continue;
    const auto [name, overload] = split(t.substr(0, t.find('(')));
    add(ir::OpRegistry::builtin().find(name, overload));
  }
  if (source) {
    for (const std::string& text : source(op)) {
      ir::StatusOr<const ir::OpSchema*> s = extra_schemas().add(text);
      if (s.ok()) add(*s);  // a builtin schema of the same name wins
    }
  }
  return out;
}

bool functional(const ir::OpSchema& s) {
  if (s.is_mutating() || s.returns().empty()) return false;
  for (const ir::ArgumentSchema& r : s.returns()) {
    if (!is_tensor(r)) return false;
  }
  return true;
}

// Functional schemas that may lower to `kernel`, the naming convention's first: `op.default` and
// `op.Tensor` for `op.out`, `op.X` for `op.X_out`; then every other overload of the op, and of the
// view op a `_copy` kernel copies (`view_copy.out` from `view.default`).
std::vector<const ir::OpSchema*> candidates(std::string_view kernel, const SchemaSource& source) {
  const auto [op, overload] = split(kernel);
  std::vector<std::string> first;
  if (overload == "out") {
    first = {"default", "Tensor"};
  } else if (overload.size() > 4 && overload.ends_with("_out")) {
    first = {overload.substr(0, overload.size() - 4)};
  }
  std::vector<const ir::OpSchema*> all = overloads(op, source);
  if (op.ends_with("_copy")) {
    for (const ir::OpSchema* s : overloads(op.substr(0, op.size() - 5), source)) all.push_back(s);
  }
  std::vector<const ir::OpSchema*> out;
  for (const std::string& o : first) {
    for (const ir::OpSchema* s : all) {
      if (s->name() == op && s->overload() == o && functional(*s)) out.push_back(s);
    }
  }
  for (const ir::OpSchema* s : all) {
    if (functional(*s) && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

// ATen's functional op of out-variant `kernel`: the overload of its op whose arguments are the
// kernel's without the outs (by name and type); null when `source` does not know the kernel.
const ir::OpSchema* aten_functional(std::string_view kernel, const SchemaSource& source) {
  const auto [op, overload] = split(kernel);
  const ir::OpSchema* k = nullptr;
  std::vector<const ir::OpSchema*> all = overloads(op, source);
  for (const ir::OpSchema* s : all) {
    if (s->overload() == overload) k = s;
  }
  if (k == nullptr) return nullptr;
  std::vector<const ir::ArgumentSchema*> inputs;
  for (const ir::ArgumentSchema& a : k->arguments()) {
    if (!a.is_write) inputs.push_back(&a);
  }
  for (const ir::OpSchema* s : all) {
    if (!functional(*s) || s->arguments().size() != inputs.size()) continue;
    bool same = true;
    for (size_t i = 0; i < inputs.size() && same; ++i) {
      same = s->arguments()[i].name == inputs[i]->name && s->arguments()[i].type == inputs[i]->type;
    }
    if (same) return s;
  }
  return nullptr;
}

// Where an argument of the lowered kernel call comes from: an argument of the functional node (its
// index in the schema), or a literal the lowering writes.
struct KernelArg {
  int functional = -1;
  ir::Arg literal;
};

ir::Node* add_node(ir::Program& p, const ir::OpSchema& s, std::vector<ir::NamedArg> args,
                   const std::vector<ir::ValueType>& outs) {
  std::vector<std::pair<std::string, ir::ValueType>> outputs;
  for (size_t i = 0; i < outs.size(); ++i) outputs.emplace_back("out" + std::to_string(i), outs[i]);
  return p.graph().create_node(s.name(), s.overload(), std::move(args), std::move(outputs));
}

size_t num_results(const ir::OpSchema& s, size_t outs) {
  return s.returns().size() == 1 && s.returns()[0].is_list ? outs : s.returns().size();
}

// The kernel call `s`'s node lowers to, argument by argument, found by lowering a node whose
// arguments are all distinct (tensors: graph inputs; the rest: marker strings); nullopt when it
// does not lower to `kernel`.
std::optional<std::vector<KernelArg>> lowering_of(const ir::OpSchema& s, std::string_view kernel,
                                                  size_t outs) {
  ir::Program p;
  if (ir::OpRegistry::builtin().find(s.name(), s.overload()) == nullptr &&
      !p.ops().add(s.to_string()).ok()) {
    return std::nullopt;
  }
  const ir::ValueType any = ir::ValueType::of_tensor({ir::DType::Float32, {1}, {}});
  std::vector<ir::NamedArg> args;
  for (size_t j = 0; j < s.arguments().size(); ++j) {
    const ir::ArgumentSchema& a = s.arguments()[j];
    ir::Arg marker = ir::Arg::string("\x01" + std::to_string(j));
    if (a.kind == ir::TypeKind::Tensor) {
      marker = ir::Arg::value(p.add_input("in" + std::to_string(j), any, {}));
      if (a.is_list) marker = ir::Arg::list({marker});
    }
    args.push_back({a.name, marker});
  }
  ir::Node* node = add_node(p, s, args, std::vector<ir::ValueType>(num_results(s, outs), any));
  std::optional<ops::KernelForm> form = ops::direct_kernel_form(*node);
  if (!form || form->op + "." + form->overload != kernel) return std::nullopt;
  std::vector<KernelArg> result;
  for (const ir::NamedArg& k : form->args) {
    KernelArg ka;
    for (size_t j = 0; j < args.size() && ka.functional < 0; ++j) {
      if (node->args()[j].value == k.value) ka.functional = static_cast<int>(j);
    }
    if (ka.functional < 0) ka.literal = k.value;
    result.push_back(std::move(ka));
  }
  return result;
}

// Turns the call's arguments into IR arguments, adding a graph input per tensor.
class ArgConverter {
 public:
  explicit ArgConverter(OneNodeProgram& out) : out_(out) {}

  // `v` as an argument of type `a` (null: by the value's own kind).
  ir::StatusOr<ir::Arg> convert(const EValue& v, const ir::ArgumentSchema* a) {
    const ir::TypeKind kind = a != nullptr ? a->kind : ir::TypeKind::Other;
    switch (v.tag()) {
      case Tag::None:
        return ir::Arg::none();
      case Tag::Int:
        if (kind == ir::TypeKind::ScalarType) {
          std::optional<ir::DType> d = ir_dtype(static_cast<ScalarType>(v.to_int()));
          if (!d) return ir::Status::error("an unknown dtype code");
          return ir::Arg::dtype(*d);
        }
        if (kind == ir::TypeKind::MemoryFormat) {
          std::optional<std::string> name = memory_format_name(v.to_int());
          if (!name) return ir::Status::error("an unknown memory format code");
          return ir::Arg::memory_format(*name);
        }
        if (kind == ir::TypeKind::Float) return ir::Arg::floating(static_cast<double>(v.to_int()));
        return ir::Arg::integer(v.to_int());
      case Tag::Double:
        return ir::Arg::floating(v.to_double());
      case Tag::Bool:
        return ir::Arg::boolean(v.to_bool());
      case Tag::String:
        return ir::Arg::string(std::string(v.to_string()));
      case Tag::Tensor:
        return tensor(&v.to_tensor());
      case Tag::ListInt: {
        std::vector<ir::Arg> items;
        for (int64_t i : v.to_int_list()) items.push_back(ir::Arg::integer(i));
        return ir::Arg::list(std::move(items));
      }
      case Tag::ListDouble: {
        std::vector<ir::Arg> items;
        for (double d : v.to_double_list()) items.push_back(ir::Arg::floating(d));
        return ir::Arg::list(std::move(items));
      }
      case Tag::ListBool: {
        std::vector<ir::Arg> items;
        for (bool b : v.to_bool_list()) items.push_back(ir::Arg::boolean(b));
        return ir::Arg::list(std::move(items));
      }
      case Tag::ListTensor:
      case Tag::ListOptionalTensor: {
        std::vector<ir::Arg> items;
        const auto list =
            v.tag() == Tag::ListTensor ? v.to_tensor_list() : v.to_optional_tensor_list();
        for (Tensor* t : list) {
          if (t == nullptr) {
            items.push_back(ir::Arg::none());
            continue;
          }
          ir::StatusOr<ir::Arg> item = tensor(t);
          if (!item.ok()) return item.status();
          items.push_back(*item);
        }
        return ir::Arg::list(std::move(items));
      }
    }
    return ir::Status::error("an argument of an unknown kind");
  }

 private:
  ir::StatusOr<ir::Arg> tensor(const Tensor* t) {
    ir::StatusOr<ir::TensorType> type = type_of(*t);
    if (!type.ok()) return type.status();
    ir::Value* v = out_.program->add_input("x" + std::to_string(out_.inputs.size()),
                                           ir::ValueType::of_tensor(*type), {});
    out_.inputs.push_back(t);
    return ir::Arg::value(v);
  }
  OneNodeProgram& out_;
};

// Numbers equal across int and float, lists item by item.
bool same_literal(const ir::Arg& a, const ir::Arg& b) {
  const auto number = [](const ir::Arg& x) {
    return x.kind() == ir::ArgKind::Int || x.kind() == ir::ArgKind::Float;
  };
  const auto value = [](const ir::Arg& x) {
    return x.kind() == ir::ArgKind::Int ? static_cast<double>(x.as_int()) : x.as_float();
  };
  if (number(a) && number(b)) return value(a) == value(b);
  if (a.kind() == ir::ArgKind::List && b.kind() == ir::ArgKind::List) {
    if (a.as_list().size() != b.as_list().size()) return false;
    for (size_t i = 0; i < a.as_list().size(); ++i) {
      if (!same_literal(a.as_list()[i], b.as_list()[i])) return false;
    }
    return true;
  }
  return a == b;
}

// A schema default as written ("None", "False", "1", "0.5", "[0, 0]"); None for anything else.
ir::Arg default_arg(const std::string& text) {
  if (text == "True" || text == "False") return ir::Arg::boolean(text == "True");
  if (!text.empty() && text.front() == '[') {
    std::vector<ir::Arg> items;
    const char* p = text.c_str() + 1;
    while (*p != '\0' && *p != ']') {
      char* end = nullptr;
      const long long v = std::strtoll(p, &end, 10);
      if (end == p) break;
      items.push_back(ir::Arg::integer(v));
      p = end;
      while (*p == ',' || *p == ' ') ++p;
    }
    return ir::Arg::list(std::move(items));
  }
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0') return ir::Arg::integer(i);
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return ir::Arg::floating(d);
  return ir::Arg::none();
}

}  // namespace

ir::StatusOr<OneNodeProgram> build_one_node_program(std::string_view kernel,
                                                    std::span<EValue* const> args,
                                                    std::span<const Tensor* const> outs,
                                                    const SchemaSource& source) {
  std::vector<ir::ValueType> out_types;
  for (const Tensor* t : outs) {
    ir::StatusOr<ir::TensorType> type = type_of(*t);
    if (!type.ok()) return type.status();
    out_types.push_back(ir::ValueType::of_tensor(*type));
  }
  // The program of `s` with the call's arguments placed by `lowering` (null: position by
  // position); nullopt when the call does not pass the lowering's literals.
  const auto build =
      [&](const ir::OpSchema& s,
          const std::vector<KernelArg>* lowering) -> ir::StatusOr<std::optional<OneNodeProgram>> {
    OneNodeProgram out;
    out.program = std::make_unique<ir::Program>();
    out.functional = s.qualified_name();
    if (ir::OpRegistry::builtin().find(s.name(), s.overload()) == nullptr) {
      ir::StatusOr<const ir::OpSchema*> added = out.program->ops().add(s.to_string());
      if (!added.ok()) return added.status();
    }
    ArgConverter converter(out);
    std::vector<ir::NamedArg> node_args;
    for (const ir::ArgumentSchema& a : s.arguments()) node_args.push_back({a.name, {}});
    std::vector<bool> given(node_args.size(), false);
    for (size_t i = 0; i < args.size(); ++i) {
      const int j = lowering != nullptr ? (*lowering)[i].functional : static_cast<int>(i);
      if (j < 0) {  // a literal of the lowering: the call must pass that value
        ir::StatusOr<ir::Arg> v = converter.convert(*args[i], nullptr);
        if (!v.ok() || !same_literal(*v, (*lowering)[i].literal)) {
          return std::optional<OneNodeProgram>();
        }
        continue;
      }
      const auto index = static_cast<size_t>(j);
      ir::StatusOr<ir::Arg> v = converter.convert(*args[i], &s.arguments()[index]);
      if (!v.ok()) return v.status();
      node_args[index].value = *v;
      given[index] = true;
    }
    // Arguments the kernel does not take: their defaults, and for a `dtype` the results' dtype
    // (what torch.export writes for a factory or a conversion).
    for (size_t j = 0; j < node_args.size(); ++j) {
      if (given[j]) continue;
      const ir::ArgumentSchema& a = s.arguments()[j];
      if (a.kind == ir::TypeKind::ScalarType && a.name == "dtype" && !out_types.empty()) {
        node_args[j].value = ir::Arg::dtype(out_types[0].tensor.dtype);
      } else if (a.default_value) {
        node_args[j].value = default_arg(*a.default_value);
      }
    }
    ir::Node* node = add_node(*out.program, s, node_args, out_types);
    for (size_t i = 0; i < node->num_outputs(); ++i) out.program->add_output(node->output(i), {});
    // Whether lowering this node gives the very call the sweep case makes.
    std::optional<ops::KernelForm> form = ops::direct_kernel_form(*node);
    out.lowered_as_called =
        form && form->op + "." + form->overload == kernel && form->args.size() == args.size();
    if (!out.lowered_as_called) {
      out.note = "the compiler lowers " + out.functional + " to " +
                 (form ? form->op + "." + form->overload + " with " +
                             std::to_string(form->args.size()) + " arguments"
                       : "no direct kernel call") +
                 ", ATen to " + std::string(kernel) + " with " + std::to_string(args.size());
    }
    ir::Status verified = ir::verify(*out.program);
    if (!verified.ok()) return verified;
    return std::optional<OneNodeProgram>(std::move(out));
  };
  std::string tried;
  for (const ir::OpSchema* s : candidates(kernel, source)) {
    tried += (tried.empty() ? "" : ", ") + s->qualified_name();
    if (num_results(*s, outs.size()) != outs.size()) continue;
    std::optional<std::vector<KernelArg>> lowering = lowering_of(*s, kernel, outs.size());
    if (!lowering || lowering->size() != args.size()) continue;
    ir::StatusOr<std::optional<OneNodeProgram>> p = build(*s, &*lowering);
    if (!p.ok()) return p.status().with_context(std::string(kernel) + ": ");
    if (*p && (*p)->lowered_as_called) return std::move(**p);
  }
  // No overload lowers to this call: ATen's own functional op of the kernel, if any, which the
  // compiler lowers another way or refuses.
  if (const ir::OpSchema* s = aten_functional(kernel, source)) {
    if (num_results(*s, outs.size()) == outs.size()) {
      ir::StatusOr<std::optional<OneNodeProgram>> p = build(*s, nullptr);
      if (!p.ok()) return p.status().with_context(std::string(kernel) + ": ");
      if (*p) return std::move(**p);
    }
  }
  if (split(kernel).first.ends_with("_")) {
    return ir::Status::error("an in-place kernel: no functional form");
  }
  if (tried.empty()) return ir::Status::error("no functional op of that name");
  return ir::Status::error("no overload lowers to this call (tried " + tried + ")");
}

Error ProgramRunner::run(const std::vector<uint8_t>& pte, std::span<const Tensor* const> inputs) {
  module_.reset();  // the last run's method, arenas and program copy
  // Copied: delegates keep pointers into the program until its method is destroyed.
  module_ =
      std::make_unique<Module>(std::span<const uint8_t>(pte), ModuleOptions{}, BufferMode::Copy);
  Result<Method*> method = module_->method("forward");
  if (!method.ok()) return method.error();
  Method& m = **method;
  if (inputs.size() != m.num_inputs()) {
    return fail(Error::InvalidProgram, "the program takes %zu inputs, the call has %zu tensors",
                m.num_inputs(), inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) EMBER_TRY(m.set_input(*inputs[i], i));
  return m.execute();
}

Result<EValue> ProgramRunner::output(size_t index) const {
  if (module_ == nullptr) return Error::InvalidState;
  Result<Method*> method = module_->method("forward");
  if (!method.ok()) return method.error();
  return (*method)->get_output(index);
}

}  // namespace ember::conformance
