#include "compiler/ir/printer.h"

#include <charconv>
#include <cmath>

namespace ember::ir {

std::string quote(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string s = "\"";
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      s += '\\';
      s += c;
    } else if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      s += "\\x";
      s += kHex[u >> 4];
      s += kHex[u & 15];
    } else {
      s += c;
    }
  }
  return s + "\"";
}

namespace {

// Shortest text that reads back to the same double, always recognisable as a float.
std::string float_text(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), f);
  std::string s(buffer, ec == std::errc() ? end : buffer);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void print_value_def(const Value* v, std::string& out) {
  out += "%" + v->name() + ": " + to_string(v->type());
}

void print_node(const Node* node, int indent, std::string& out);

void print_graph_body(const Graph& graph, int indent, const Program* program, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  out += "graph(";
  if (!graph.inputs().empty()) {
    out += "\n";
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      out += pad + "    ";
      print_value_def(graph.inputs()[i], out);
      if (program != nullptr) {
        const InputSpec& spec = program->input_spec(i);
        if (spec.kind != InputKind::UserInput) {
          out.append(" ").append(input_kind_name(spec.kind)).append(" ").append(quote(spec.target));
        }
        if (!spec.aliases.empty()) {
          out += " aliases [";
          for (size_t k = 0; k < spec.aliases.size(); ++k) {
            out += (k ? ", " : "") + quote(spec.aliases[k]);
          }
          out += "]";
        }
        if (!spec.persistent) out += " nonpersistent";
      }
      out += i + 1 < graph.inputs().size() ? ",\n" : "\n";
    }
    out += pad;
  }
  out += ") {\n";
  for (const Node* node : graph.nodes()) print_node(node, indent + 2, out);
  out += pad + "  return (";
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    if (i) out += ", ";
    out += "%" + graph.outputs()[i]->name();
    if (program != nullptr) {
      const OutputSpec& spec = program->output_spec(i);
      if (spec.kind != OutputKind::UserOutput) {
        out.append(" ").append(output_kind_name(spec.kind)).append(" ").append(quote(spec.target));
      }
    }
  }
  out += ")\n" + pad + "}";
}

void print_node(const Node* node, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  out += pad;
  if (node->num_outputs() == 1) {
    print_value_def(node->output(0), out);
  } else {
    out += "(";
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      if (i) out += ", ";
      print_value_def(node->output(i), out);
    }
    out += ")";
  }
  out += " = " + node->qualified_op() + "(";
  for (size_t i = 0; i < node->args().size(); ++i) {
    if (i) out += ", ";
    out += node->args()[i].name + "=" + print_arg(node->args()[i].value);
  }
  out += ")";
  if (node->num_outputs() == 0 || node->name() != node->output(0)->name()) {
    out += " named " + quote(node->name());
  }
  if (!node->module_stack().empty()) {
    out += " @[";
    for (size_t i = 0; i < node->module_stack().size(); ++i) {
      if (i) out += ", ";
      out += quote(node->module_stack()[i].path) + ": " + quote(node->module_stack()[i].type);
    }
    out += "]";
  }
  if (node->num_subgraphs() > 0) {
    out += " {\n";
    for (size_t i = 0; i < node->num_subgraphs(); ++i) {
      out += pad + "  ";
      print_graph_body(*node->subgraph(i), indent + 2, nullptr, out);
      out += "\n";
    }
    out += pad + "}";
  }
  out += "\n";
}

}  // namespace

std::string print_arg(const Arg& arg) {
  switch (arg.kind()) {
    case ArgKind::None:
      return "none";
    case ArgKind::Bool:
      return arg.as_bool() ? "true" : "false";
    case ArgKind::Int:
      return std::to_string(arg.as_int());
    case ArgKind::Float:
      return float_text(arg.as_float());
    case ArgKind::String:
      return quote(arg.as_text());
    case ArgKind::DType:
      return "dtype(" + std::string(dtype_short_name(arg.as_dtype())) + ")";
    case ArgKind::Device:
      return "device(" + quote(arg.as_text()) + ")";
    case ArgKind::Layout:
      return "layout(" + quote(arg.as_text()) + ")";
    case ArgKind::MemoryFormat:
      return "memory_format(" + quote(arg.as_text()) + ")";
    case ArgKind::Value:
      return "%" + arg.as_value()->name();
    case ArgKind::List: {
      std::string s = "[";
      for (size_t i = 0; i < arg.as_list().size(); ++i) {
        if (i) s += ", ";
        s += print_arg(arg.as_list()[i]);
      }
      return s + "]";
    }
    case ArgKind::Graph:
      return "^" + std::to_string(arg.as_graph());
  }
  return "?";
}

std::string print_graph(const Graph& graph) {
  std::string out;
  print_graph_body(graph, 0, nullptr, out);
  return out + "\n";
}

std::string print_program(const Program& program, const PrintOptions& options) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (const Symbol& s : program.symbols) {
    out += "sym " + s.name + " in [" + std::to_string(s.min) + ", " + std::to_string(s.max) + "]\n";
  }
  for (const Weight& w : program.weights) {
    out += "weight " + quote(w.name) + ": " + to_string(w.type);
    if (!w.alias_of.empty()) out += " alias_of " + quote(w.alias_of);
    // An alias shares its target's bytes; the parser re-links it.
    if (options.weight_data && w.has_data() && w.alias_of.empty()) {
      out += " = hex\"";
      for (uint8_t b : w.bytes()) {
        out += kHex[b >> 4];
        out += kHex[b & 15];
      }
      out += "\"";
    }
    out += "\n";
  }
  for (const std::string& b : program.mutated_buffers) out += "mutated buffer " + quote(b) + "\n";
  for (const std::string& p : program.mutated_parameters) {
    out += "mutated parameter " + quote(p) + "\n";
  }
  for (const std::string& u : program.mutated_user_inputs) {
    out += "mutated user_input " + quote(u) + "\n";
  }
  print_graph_body(program.graph(), 0, &program, out);
  return out + "\n";
}

}  // namespace ember::ir
