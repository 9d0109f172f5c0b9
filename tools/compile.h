// `ember compile`: exported program (.ep) → .pte (+ .ptd), printing the memory plan.
//
//   CompileCommand c; c.model = "mlp.ep"; c.output = "mlp.pte"; c.ptd = "mlp.ptd";
//   int status = compile_command(c);   // 0 on success; errors on stderr, one per line
//   // stdout: "planned N bytes (activations M, lower bound L) ..."
#pragma once

#include <string>

namespace ember::tools {

struct CompileCommand {
  std::string model;
  std::string output;
  std::string ptd;       // empty: weights stay in the .pte
  std::string print_ir;  // "-": print the lowered IR to stdout; a path: write it there
};

int compile_command(const CompileCommand& command);

}  // namespace ember::tools
