// verify_support / verify_lowerable: one report listing every node whose op Ember cannot run, all
// at once (compiler rule 5), each line naming node, op, module path and reason. Both read the
// lowering table, so what the verifier accepts is exactly what lowering produces (C12).
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

namespace {

ir::Status report(const std::vector<std::string>& lines, const std::map<std::string, int>& ops) {
  if (lines.empty()) return {};
  std::string m = std::to_string(lines.size()) + " node(s) use ops Ember cannot run (" +
                  std::to_string(ops.size()) + " distinct op(s):";
  for (const auto& [op, count] : ops) m += " " + op;
  m += "):";
  for (const std::string& l : lines) m += "\n  " + l;
  return ir::Status::error(m);
}

}  // namespace

ir::Status verify_lowerable(const ir::Program& program) {
  std::vector<std::string> lines;
  std::map<std::string, int> ops;
  ir::for_each_graph(program.graph(), [&](const ir::Graph& g) {
    for (ir::Node* n : g.nodes()) {
      const std::string gap = ops::lowering_gap(*n);
      if (gap.empty()) continue;
      lines.push_back(ir::node_error(*n, gap));
      ++ops[n->qualified_op()];
    }
  });
  return report(lines, ops);
}

ir::Status verify_support(const ir::Program& program) {
  std::vector<std::string> lines;
  std::map<std::string, int> ops;
  ir::for_each_graph(program.graph(), [&](const ir::Graph& g) {
    for (ir::Node* n : g.nodes()) {
      const std::string op = n->qualified_op();
      std::string reason;
      if (n->op() == "higher_order::cond") {
        // Emitted as a JumpFalse chain (emit_program.cc); its branches are checked as graphs.
        if (n->num_subgraphs() != 2) reason = "cond without exactly two branches";
      } else if (ops::is_delegate_call(*n)) {
        continue;  // its backend checked it (compiler/partition/to_backend.h)
      } else if (n->num_subgraphs() > 0) {
        reason = "control flow other than cond is not emitted yet; its subgraphs are checked below";
      } else if (!ops::is_lowered(*n)) {
        const std::string gap = ops::lowering_gap(*n);
        reason = "not lowered to an out variant" +
                 (gap.empty() ? std::string(" (lower_to_out did not run on it)") : ": " + gap);
      } else if (ops::is_prim_op(op)) {
        // C12: the compiler emits only prim ops the runtime registers, with their arguments
        // and then the result once (no repeated out).
        const std::string name = ops::runtime_op_name(op);
        const char* sig = ops::kernel_signature(name);
        if (!ops::kernel_exists(name)) {
          reason = "the runtime has no prim op " + name;
        } else if (sig != nullptr && std::strlen(sig) != n->args().size() + n->num_outputs()) {
          reason = "the prim call has " + std::to_string(n->args().size() + n->num_outputs()) +
                   " arguments, the runtime's " + name + " takes " +
                   std::to_string(std::strlen(sig));
        }
      } else {
        if (!ops::kernel_exists(op)) {
          reason = "no kernel " + op + " in the portable library";
        } else if (const char* sig = ops::kernel_signature(op); sig != nullptr) {
          // Schema args, the outs, and the repeated out (or TensorList of outs).
          const size_t expected = std::strlen(sig);
          const size_t got = n->args().size() + n->num_outputs() + 1;
          if (expected != got) {
            reason = "the lowered call has " + std::to_string(got) +
                     " arguments, the kernel takes " + std::to_string(expected);
          }
        }
      }
      if (reason.empty()) continue;
      lines.push_back(ir::node_error(*n, reason));
      ++ops[op];
    }
  });
  return report(lines, ops);
}

namespace {

ir::Status run_verify_lowerable(ir::Program& program, PassContext&) {
  return verify_lowerable(program);
}
ir::Status run_verify_support(ir::Program& program, PassContext&) {
  return verify_support(program);
}

}  // namespace

EMBER_PASS(verify_lowerable, run_verify_lowerable, "",
           "changes nothing; fails, listing every node at once, when an op has no lowering "
           "(no kernel, decomposition or prim implementation), so a user sees all of them right "
           "after import");
EMBER_PASS(verify_support, run_verify_support, "lower_to_out",
           "changes nothing; fails, listing every node, when a lowered call names a kernel or "
           "prim op the runtime lacks or passes it the wrong number of arguments (C12)");

}  // namespace ember::passes
