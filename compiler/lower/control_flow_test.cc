// Contract C4 over the whole pipeline: every pass reaches the branches of a cond (aliases removed,
// assertions dropped, in-place ops on temporaries made functional, dead nodes removed, every op
// lowered), and the cond is emitted as a JumpFalse chain with both branches inline.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <variant>

#include "compiler/ir/graph_util.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/emit_program.h"
#include "compiler/lower/pipeline.h"
#include "compiler/ops/op_table.h"
#include "runtime/kernels/portable/portable.h"

namespace ember::lower {
namespace {

// Each branch holds what each pass must rewrite: a detach / alias (remove_aliases), a tensor
// assertion (drop_assertions), an in-place op on a temporary (functionalize), an unused node
// (eliminate_dead_code) and functional ops (lower_to_out_variants).
constexpr char kProgram[] = R"(graph(
    %p: bool[],
    %x: f32[4]
) {
  %detach: f32[4] = aten::detach.default(self=%x)
  %cond: f32[4] = higher_order::cond.default(pred=%p, true_graph=^0, false_graph=^1, operands=[%detach]) {
    graph(
        %t: f32[4]
    ) {
      %d: f32[4] = aten::detach.default(self=%t)
      %gt: bool[4] = aten::gt.Scalar(self=%d, other=0)
      () = aten::_check_tensor_all.default(self=%gt, msg="positive") named "check"
      %c: f32[4] = aten::clone.default(self=%d, memory_format=none)
      %r: f32[4] = aten::relu_.default(self=%c)
      %unused: f32[4] = aten::exp.default(self=%t)
      %m: f32[4] = aten::mul.Scalar(self=%r, other=2)
      return (%m)
    }
    graph(
        %f: f32[4]
    ) {
      %a: f32[4] = aten::alias.default(self=%f)
      %c_1: f32[4] = aten::clone.default(self=%a, memory_format=none)
      %s: f32[4] = aten::add_.Scalar(self=%c_1, other=1, alpha=1)
      %unused_1: f32[4] = aten::neg.default(self=%f)
      %n: f32[4] = aten::tanh.default(self=%s)
      return (%n)
    }
  }
  return (%cond)
}
)";

TEST(ControlFlow, C4_EveryPassReachesBothBranches) {
  auto parsed = ir::parse_program(kProgram);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ir::Program& program = **parsed;
  // Constant folding runs registered kernels (compiler/ops/kernel_eval.h).
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_TRUE(run_passes(program, nullptr).ok()) << ir::print_program(program);
  const std::string text = ir::print_program(program);
  int graphs = 0;
  ir::for_each_graph(program.graph(), [&](const ir::Graph& g) {
    ++graphs;
    for (const ir::Node* n : g.nodes()) {
      const std::string op = n->qualified_op();
      EXPECT_TRUE(op == "higher_order::cond.default" || ops::is_prim_op(op) || ops::is_lowered(*n))
          << op << " is not lowered\n"
          << text;
      for (const char* gone : {"aten::detach", "aten::alias", "aten::_check_tensor_all",
                               "aten::relu_", "aten::add_", "aten::exp", "aten::neg", "aten::gt"}) {
        EXPECT_NE(n->op(), gone) << text;
      }
    }
  });
  EXPECT_EQ(graphs, 3) << text;  // the top level and both branches

  // Emission: JumpFalse(p, else); then; move; JumpFalse(false, end); else; move.
  std::map<std::string, std::string> keys;
  ir::StatusOr<EmittedMethod> m = emit_method(program, EmitOptions{}, &keys);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto& ins = m->method.instructions;
  std::vector<size_t> jumps, moves;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (std::holds_alternative<emit::JumpFalseSpec>(ins[i])) jumps.push_back(i);
    if (std::holds_alternative<emit::MoveSpec>(ins[i])) moves.push_back(i);
  }
  ASSERT_EQ(jumps.size(), 2u);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(jumps[0], 0u);
  EXPECT_EQ(moves[0] + 1, jumps[1]);  // the then-branch ends with its move, then skips the else
  EXPECT_EQ(std::get<emit::JumpFalseSpec>(ins[jumps[0]]).destination,
            static_cast<int32_t>(jumps[1] + 1));
  EXPECT_EQ(std::get<emit::JumpFalseSpec>(ins[jumps[1]]).destination,
            static_cast<int32_t>(ins.size()));
  EXPECT_EQ(moves[1], ins.size() - 1);
  // Both moves write the one result value, the method's output.
  const int32_t result = m->method.outputs.at(0);
  EXPECT_EQ(std::get<emit::MoveSpec>(ins[moves[0]]).to, result);
  EXPECT_EQ(std::get<emit::MoveSpec>(ins[moves[1]]).to, result);
  // The branch outputs live to the end (they are the output), so neither overlaps the other.
  const auto& values = m->method.values;
  const auto& then_out =
      std::get<emit::TensorSpec>(values.at(std::get<emit::MoveSpec>(ins[moves[0]]).from));
  const auto& else_out =
      std::get<emit::TensorSpec>(values.at(std::get<emit::MoveSpec>(ins[moves[1]]).from));
  EXPECT_NE(then_out.offset, else_out.offset);
}

// A branch returning its operand: the result is copied in both branches (never a move that
// would make the result alias the operand).
TEST(ControlFlow, PassThroughBranchIsCopied) {
  const char* text = R"(graph(
    %p: bool[],
    %x: f32[4]
) {
  %cond: f32[4] = higher_order::cond.default(pred=%p, true_graph=^0, false_graph=^1, operands=[%x]) {
    graph(
        %t: f32[4]
    ) {
      return (%t)
    }
    graph(
        %f: f32[4]
    ) {
      %n: f32[4] = aten::neg.default(self=%f)
      return (%n)
    }
  }
  return (%cond)
}
)";
  auto parsed = ir::parse_program(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_TRUE(run_passes(**parsed, nullptr).ok());
  std::map<std::string, std::string> keys;
  ir::StatusOr<EmittedMethod> m = emit_method(**parsed, EmitOptions{}, &keys);
  ASSERT_TRUE(m.ok()) << m.status().message();
  int clones = 0, moves = 0;
  for (const emit::InstructionSpec& i : m->method.instructions) {
    if (std::holds_alternative<emit::MoveSpec>(i)) ++moves;
    if (const auto* k = std::get_if<emit::KernelCallSpec>(&i)) {
      const emit::OperatorSpec& op = m->method.operators.at(static_cast<size_t>(k->op_index));
      if (op.name == "aten::clone") {
        ++clones;
        EXPECT_EQ(k->args.at(2), m->method.outputs.at(0));  // into the result
      }
    }
  }
  EXPECT_EQ(moves, 0);
  EXPECT_EQ(clones, 2);
}

// C12: the op set of the compiler's prim lowering and of the runtime's prim ops is one.
TEST(PrimOps, C12_EveryPrimOpTheCompilerEmitsIsARuntimeKernel) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_FALSE(ops::prim_ops().empty());
  for (std::string_view op : ops::prim_ops()) {
    EXPECT_NE(find_kernel(op), nullptr) << op;
  }
  EXPECT_TRUE(ops::is_prim_op("aten::sym_numel.default"));
  EXPECT_EQ(ops::runtime_op_name("aten::sym_numel.default"), "aten::sym_numel");
  EXPECT_EQ(ops::runtime_op_name("executorch_prim::gt.Scalar"), "executorch_prim::gt.Scalar");
}

}  // namespace
}  // namespace ember::lower
