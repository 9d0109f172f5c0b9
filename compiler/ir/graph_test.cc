#include "compiler/ir/graph.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"

namespace ember::ir {
namespace {

ValueType f32(std::vector<Dim> shape) {
  return ValueType::of_tensor(TensorType{DType::Float32, std::move(shape), {}});
}

TEST(Graph, UsersFollowArguments) {
  Program p;
  Graph& g = p.graph();
  Value* x = p.add_input("x", f32({2}), {});
  Node* add =
      g.create_node("aten::add", "Tensor",
                    {{"self", Arg::value(x)}, {"other", Arg::value(x)}, {"alpha", Arg::integer(1)}},
                    {{"y", f32({2})}});
  ASSERT_NE(add->schema(), nullptr);
  EXPECT_EQ(x->users().size(), 2u);
  EXPECT_EQ(add->output()->producer(), add);
  p.add_output(add->output(), {});
  EXPECT_TRUE(add->output()->is_graph_output());

  Node* relu = g.create_node("aten::relu", "default", {{"self", Arg::value(x)}}, {{"r", f32({2})}},
                             /*before=*/add);
  EXPECT_EQ(*g.nodes().begin(), relu);  // inserted before `add`
  add->set_arg(1, Arg::value(relu->output()));
  EXPECT_EQ(x->users().size(), 2u);  // relu.self and add.self
  EXPECT_EQ(relu->output()->users(), std::vector<Node*>{add});

  EXPECT_FALSE(g.erase_node(relu).ok());  // still used
  relu->output()->replace_all_uses_with(x);
  EXPECT_TRUE(relu->output()->users().empty());
  EXPECT_TRUE(g.erase_node(relu).ok());
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(x->users().size(), 2u);
}

TEST(Graph, ReplaceAllUsesReachesListsAndOutputs) {
  Program p;
  Graph& g = p.graph();
  Value* a = p.add_input("a", f32({2}), {});
  Value* b = p.add_input("b", f32({2}), {});
  Node* cat = g.create_node(
      "aten::cat", "default",
      {{"tensors", Arg::list({Arg::value(a), Arg::value(a)})}, {"dim", Arg::integer(0)}},
      {{"c", f32({4})}});
  p.add_output(a, {});
  a->replace_all_uses_with(b);
  EXPECT_EQ(cat->operands(), (std::vector<Value*>{b, b}));
  EXPECT_EQ(g.outputs()[0], b);
  EXPECT_TRUE(a->users().empty());
  EXPECT_EQ(b->users().size(), 2u);
}

TEST(Program, EraseInputsAndOutputsKeepsTheSignatureParallel) {
  Program p;
  Value* w = p.add_input("w", f32({2}), {InputKind::Parameter, "w", {}, true});
  Value* b = p.add_input("b", f32({2}), {InputKind::Buffer, "b", {}, true});
  Value* x = p.add_input("x", f32({2}), {});
  Node* n =
      p.graph().create_node("aten::neg", "default", {{"self", Arg::value(b)}}, {{"n", f32({2})}});
  p.add_output(x, {});
  p.add_output(n->output(), {OutputKind::BufferMutation, "b"});
  EXPECT_FALSE(p.erase_input(1).ok());  // %b is used
  ASSERT_TRUE(p.erase_input(0).ok());   // %w is dead
  EXPECT_EQ(p.graph().inputs(), (std::vector<Value*>{b, x}));
  EXPECT_EQ(b->output_index(), 0u);
  EXPECT_EQ(p.input_spec(0).target, "b");
  EXPECT_EQ(p.input_spec(1).kind, InputKind::UserInput);
  (void)w;
  ASSERT_TRUE(p.erase_output(0).ok());
  EXPECT_EQ(p.graph().outputs(), std::vector<Value*>{n->output()});
  EXPECT_EQ(p.output_spec(0).kind, OutputKind::BufferMutation);
  EXPECT_FALSE(p.erase_output(1).ok());
}

TEST(Graph, NamesAreUniqueAcrossSubgraphs) {
  Program p;
  Graph& g = p.graph();
  Value* x = p.add_input("x", f32({2}), {});
  Node* cond = g.create_node("higher_order::cond", "default",
                             {{"pred", Arg::value(x)},
                              {"true_graph", Arg::graph(0)},
                              {"false_graph", Arg::graph(1)},
                              {"operands", Arg::list({})}},
                             {{"r", f32({2})}});
  Graph* branch = cond->add_subgraph();
  branch->add_input("t", f32({2}));
  EXPECT_TRUE(g.is_name_used("t"));
  EXPECT_EQ(branch->unique_name("x"), "x_1");
  Node* again = branch->create_node("aten::neg", "default", {}, {{"t", f32({2})}});
  EXPECT_EQ(again->output()->name(), "t_1");  // a pass reusing a name gets a fresh one
  EXPECT_EQ(again->name(), "t_1");
  EXPECT_EQ(cond->subgraph(0)->parent_node(), cond);
}

TEST(Node, DescribeNamesOpAndModule) {
  Program p;
  Value* x = p.add_input("x", f32({2}), {});
  Node* n =
      p.graph().create_node("aten::relu", "default", {{"self", Arg::value(x)}}, {{"r", f32({2})}});
  n->set_module_stack({{"layer1", "Sequential"}, {"layer1.0", "BasicBlock"}});
  EXPECT_EQ(n->describe(), "node r (aten::relu.default) in module layer1.0 (BasicBlock)");
  EXPECT_EQ(n->module_path(), "layer1.0");
}

TEST(Node, BatchNormInTrainingWritesItsRunningStatistics) {
  Program p;
  std::vector<NamedArg> args;
  for (const char* name : {"input", "weight", "bias", "running_mean", "running_var"}) {
    args.push_back({name, Arg::value(p.add_input(name, f32({3}), {}))});
  }
  args.push_back({"training", Arg::boolean(true)});
  args.push_back({"momentum", Arg::floating(0.1)});
  args.push_back({"eps", Arg::floating(1e-5)});
  Node* train = p.graph().create_node("aten::native_batch_norm", "default", args,
                                      {{"o0", f32({3})}, {"o1", f32({3})}, {"o2", f32({3})}});
  EXPECT_TRUE(train->schema()->mutated_arguments().empty());  // PyTorch's schema says nothing
  EXPECT_EQ(mutated_arguments(*train), (std::vector<size_t>{3, 4}));
  args[5].value = Arg::boolean(false);
  Node* eval = p.graph().create_node("aten::native_batch_norm", "default", args,
                                     {{"e0", f32({3})}, {"e1", f32({3})}, {"e2", f32({3})}});
  EXPECT_TRUE(mutated_arguments(*eval).empty());
}

TEST(Types, TensorTypeText) {
  TensorType t{DType::BFloat16, {Dim::symbolic("2*batch", 16), Dim(3)}, {1, 0}};
  EXPECT_EQ(to_string(t), "bf16[2*batch<=16, 3]{1, 0}");
  EXPECT_FALSE(t.is_static());
  EXPECT_EQ(t.numel_upper_bound(), 48);
  TensorType huge{DType::Float32, {Dim(int64_t{1} << 40), Dim(int64_t{1} << 40)}, {}};
  EXPECT_EQ(huge.numel_upper_bound(), std::nullopt);
}

}  // namespace
}  // namespace ember::ir
