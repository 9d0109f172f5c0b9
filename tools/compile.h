// `ember compile`: exported program (.ep, or torch.export.save's .pt2) → .pte (+ .ptd), printing
// the memory plan.
//
//   CompileCommand c; c.model = "mlp.ep"; c.output = "mlp.pte"; c.ptd = "mlp.ptd";
//   int status = compile_command(c);   // 0 on success; errors on stderr, one per line
//   // stdout: "planned N bytes (activations M, lower bound L) ..."; with backends, the
//   // partition report: each delegate's nodes, and every node left portable with its reason
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ember::tools {

// How much `ember compile` and `ember inspect MODEL.ep` print: Quiet, nothing but errors;
// Normal, a summary (a line per partition and per kind of portable node, notes summarized);
// Verbose, every partition node, every portable node and every note item.
enum class Verbosity { Quiet, Normal, Verbose };

struct CompileCommand {
  std::string model;
  std::string output;
  std::string ptd;       // empty: weights stay in the .pte
  std::string print_ir;  // "-": print the lowered IR to stdout; a path: write it there
  // --backend NAME, in priority order, each with its --backend-spec KEY=VALUE compile specs.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> backends;
  Verbosity verbosity = Verbosity::Normal;
  // --verify[=fallback]: check every delegate against the portable kernels (tools/verify.h)
  // before writing; beyond the tolerance, fail, or with fallback recompile those partitions on
  // the portable kernels.
  bool verify = false;
  bool verify_fallback = false;
  double verify_tolerance = 1e-4;
  std::vector<std::string> verify_inputs;  // .npy files; empty: random inputs
  unsigned verify_seed = 0;
};

// Registers the compiler backends `ember compile --backend` knows (loopback; cpu when built with
// oneDNN). Idempotent.
int register_compiler_backends();

int compile_command(const CompileCommand& command);

// `ember inspect MODEL.ep|MODEL.pt2|MODEL.ir [--backend NAME...]`: the graph summary (inputs with
// names and dynamic ranges, outputs, weights, operators), then compiles in memory and prints
// whether Ember compiles it, with the partition report for each backend; writes no file. Returns
// 1 when the program does not compile, with the reason.
int inspect_exported_command(const CompileCommand& command);

}  // namespace ember::tools
