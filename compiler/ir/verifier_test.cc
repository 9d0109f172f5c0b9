#include "compiler/ir/verifier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/ir/parser.h"

namespace ember::ir {
namespace {

ValueType f32(std::vector<Dim> shape) {
  return ValueType::of_tensor(TensorType{DType::Float32, std::move(shape), {}});
}

bool contains(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

TEST(Verifier, GoldenProgramsAreValid) {
  for (const char* name : {"mlp.ir", "inplace_view.ir", "cond.ir", "constants.ir"}) {
    std::ifstream in(std::filesystem::path(EMBER_IR_TESTDATA) / name);
    std::stringstream text;
    text << in.rdbuf();
    auto p = parse_program(text.str());
    ASSERT_TRUE(p.ok()) << p.status().message();
    Status s = verify(**p);
    EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  }
}

// A pass that inserts a node before its operand's definition (contract C6) is caught, with the
// node, its op and its module named.
TEST(Verifier, UseBeforeDefinition) {
  Program p;
  Graph& g = p.graph();
  Value* x = p.add_input("x", f32({2}), {});
  Node* relu = g.create_node("aten::relu", "default", {{"self", Arg::value(x)}}, {{"r", f32({2})}});
  Node* cast = g.create_node("aten::neg", "default", {{"self", Arg::value(relu->output())}},
                             {{"n", f32({2})}}, /*before=*/relu);
  cast->set_module_stack({{"head", "Linear"}});
  p.add_output(cast->output(), {});
  Status s = verify(p);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s,
                       "node n (aten::neg.default) in module head (Linear): operand %r is used "
                       "before its definition"))
      << s.message();
}

TEST(Verifier, ReportsEveryProblemAtOnce) {
  Program p;
  Graph& g = p.graph();
  Value* w =
      p.add_input("w", f32({Dim::symbolic("b", 4)}), {InputKind::Parameter, "fc.weight", {}, true});
  Node* bad_args =
      g.create_node("aten::relu", "default", {{"input", Arg::value(w)}}, {{"r", f32({2})}});
  g.create_node(
      "aten::max", "dim",
      {{"self", Arg::value(w)}, {"dim", Arg::integer(0)}, {"keepdim", Arg::boolean(false)}},
      {{"m", f32({})}});
  p.add_output(bad_args->output(), {});
  Status s = verify(p);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s, "4 problem(s)")) << s.message();
  EXPECT_TRUE(contains(s, "arguments (input) do not match the schema aten::relu(Tensor self)"));
  EXPECT_TRUE(contains(s, "1 outputs, the schema returns 2"));
  EXPECT_TRUE(contains(s, "parameter \"fc.weight\" (%w) has no weight"));
  EXPECT_TRUE(contains(s, "has a symbolic shape; constants are static"));
}

TEST(Verifier, SubgraphsAreClosed) {
  Program p;
  Graph& g = p.graph();
  Value* x = p.add_input("x", f32({2}), {});
  Node* cond = g.create_node("higher_order::cond", "default",
                             {{"pred", Arg::value(x)},
                              {"true_graph", Arg::graph(0)},
                              {"false_graph", Arg::graph(1)},
                              {"operands", Arg::list({})}},
                             {{"c", f32({2})}});
  for (int i = 0; i < 2; ++i) {
    Graph* branch = cond->add_subgraph();
    // Reads the outer %x instead of taking it as an operand.
    Node* n = branch->create_node("aten::neg", "default", {{"self", Arg::value(x)}},
                                  {{branch->unique_name("n"), f32({2})}});
    branch->set_outputs({n->output()});
  }
  p.add_output(cond->output(), {});
  Status s = verify(p);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s, "operand %x belongs to another graph")) << s.message();
}

}  // namespace
}  // namespace ember::ir
