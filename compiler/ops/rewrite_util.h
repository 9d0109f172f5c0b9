// Building blocks of the rules that rewrite a node into kernel calls (lower_node and the
// decompositions): reading the node's arguments, typing the new nodes, replacing the node.
//
//   ir::Value* self = input_value(*node, "self");           // null when not a tensor argument
//   ir::Node* k = add_kernel_node(g, "aten::elu.out", select_args(*node, "self,alpha"),
//                                 output_types(*node), node->name(), node);   // op_table.h
//   return replace_node(node, {k->output()});
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::ops {

// A constant of a rule's argument spec: "none", "true", "false", "[1,0]" (integers), a number.
ir::Arg parse_literal(std::string_view text);
// The kernel's arguments from a rule's spec (LoweringRule::args), "a,b=literal,c=other_arg":
// `node`'s argument a, the constant `literal` as b, `node`'s argument other_arg as c. A null
// spec: every argument of `node`, in order.
std::vector<ir::NamedArg> select_args(const ir::Node& node, const char* spec);
// The types of `node`'s outputs, in order.
std::vector<ir::ValueType> output_types(const ir::Node& node);
// Replaces every output of `node` with the matching value of `with`, then erases `node`.
ir::Status replace_node(ir::Node* node, const std::vector<ir::Value*>& with);
// `node`'s argument `name` when it is a value; null otherwise.
ir::Value* input_value(const ir::Node& node, const char* name);
// A tensor type of `dtype` and `shape`, in the default dim order.
ir::ValueType with_shape(ir::DType dtype, std::vector<ir::Dim> shape);
// `node`'s argument `name` when it is an integer constant; `otherwise` when absent or not one.
int64_t int_arg(const ir::Node& node, const char* name, int64_t otherwise);
// A new constant input holding weight `w` (added to the program under a unique name made from
// w.name), named `value_name` (made unique; empty: the weight's name).
ir::Value* add_constant(ir::Program& program, ir::Weight w, const std::string& value_name = "");

}  // namespace ember::ops
