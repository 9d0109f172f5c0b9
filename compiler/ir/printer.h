// The IR's text form (printer). parse_program (parser.h) reads what this writes, and
// print(parse(print(p))) == print(p) for every program.
//
//   std::string text = print_program(program);                  // signature, symbols, graph
//   std::string with_bytes = print_program(program, {.weight_data = true});
//
// Grammar by example (docs/compiler-ir.md has the full description):
//   sym batch in [1, 8]
//   weight "fc.weight": f32[3, 4]
//   mutated buffer "buf"
//   graph(
//       %p_fc_weight: f32[3, 4] parameter "fc.weight",
//       %x: f32[batch<=8, 4]
//   ) {
//     %t: f32[4, 3]{1, 0} = aten::t.default(self=%p_fc_weight) @["fc": "Linear"]
//     (%m_0: f32[batch<=8], %m_1: i64[batch<=8]) = aten::max.dim(self=%x, dim=1, keepdim=false)
//     return (%m_0)
//   }
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace ember::ir {

struct PrintOptions {
  bool weight_data = false;  // print weight bytes as hex"..." (exact, but long)
};

std::string print_program(const Program& program, const PrintOptions& options = {});
// A graph alone, without a program's signature annotations.
std::string print_graph(const Graph& graph);
// One argument value, as it appears in the text form.
std::string print_arg(const Arg& arg);
// A string literal with escapes, as the text form writes it.
std::string quote(std::string_view text);

}  // namespace ember::ir
