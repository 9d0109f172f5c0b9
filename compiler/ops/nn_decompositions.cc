// The decompositions of layers torch.export's default (training) IR keeps whole: linear, celu,
// batch norm and max_pool2d, each to the kernel (or two) that computes it.
#include <string>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/op_decompositions.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/rewrite_util.h"

namespace ember::ops {

ir::Status lower_linear(ir::Program&, ir::Node* node) {
  ir::Value* input = input_value(*node, "input");
  ir::Value* weight = input_value(*node, "weight");
  ir::Value* bias = input_value(*node, "bias");
  if (input == nullptr || weight == nullptr || input->tensor_type().rank() != 2) {
    return ir::Status::error(ir::node_error(*node, "linear is lowered for a 2-D input only"));
  }
  ir::Graph& g = *node->owner();
  const ir::TensorType& w = weight->tensor_type();
  ir::Node* t =
      add_kernel_node(g, "aten::permute_copy.out",
                      {{"self", ir::Arg::value(weight)}, {"dims", parse_literal("[1,0]")}},
                      {with_shape(w.dtype, {w.shape[1], w.shape[0]})}, node->name() + "_t", node);
  std::vector<ir::NamedArg> args;
  std::string kernel = "aten::mm.out";
  if (bias != nullptr) {
    kernel = "aten::addmm.out";
    args.push_back({"self", ir::Arg::value(bias)});
    args.push_back({"mat1", ir::Arg::value(input)});
    args.push_back({"mat2", ir::Arg::value(t->output())});
    args.push_back({"beta", ir::Arg::integer(1)});
    args.push_back({"alpha", ir::Arg::integer(1)});
  } else {
    args.push_back({"self", ir::Arg::value(input)});
    args.push_back({"mat2", ir::Arg::value(t->output())});
  }
  ir::Node* k =
      add_kernel_node(g, kernel, std::move(args), output_types(*node), node->name(), node);
  return replace_node(node, {k->output()});
}

// ATen computes celu(x, alpha) as elu(x, alpha, scale=1, input_scale=1/alpha): the same kernel
// with the same arguments, so the result is exactly ATen's (C30 keeps such an elu portable on a
// backend that runs only input_scale == 1).
ir::Status lower_celu(ir::Program&, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  const ir::Arg* alpha_arg = node->arg("alpha");
  double alpha = 1.0;
  if (alpha_arg != nullptr && alpha_arg->kind() == ir::ArgKind::Int) {
    alpha = static_cast<double>(alpha_arg->as_int());
  } else if (alpha_arg != nullptr && alpha_arg->kind() == ir::ArgKind::Float) {
    alpha = alpha_arg->as_float();
  } else if (alpha_arg != nullptr && !alpha_arg->is_none()) {
    return ir::Status::error(ir::node_error(*node, "celu's alpha must be a number"));
  }
  if (self == nullptr) return ir::Status::error(ir::node_error(*node, "celu needs a tensor"));
  if (alpha == 0)
    return ir::Status::error(ir::node_error(*node, "celu with alpha 0 (ATen refuses it)"));
  ir::Node* k = add_kernel_node(*node->owner(), "aten::elu.out",
                                {{"self", ir::Arg::value(self)},
                                 {"alpha", ir::Arg::floating(alpha)},
                                 {"scale", ir::Arg::integer(1)},
                                 {"input_scale", ir::Arg::floating(1.0 / alpha)}},
                                output_types(*node), node->name(), node);
  return replace_node(node, {k->output()});
}

ir::Status lower_batch_norm(ir::Program&, ir::Node* node) {
  const ir::Arg* training = node->arg("training");
  if (training == nullptr || training->kind() != ir::ArgKind::Bool || training->as_bool()) {
    return ir::Status::error(ir::node_error(
        *node, "batch norm in training mode has no kernel; export the model in eval()"));
  }
  std::vector<ir::NamedArg> args =
      select_args(*node, "input,weight,bias,running_mean,running_var,momentum,eps");
  ir::Node* k = add_kernel_node(*node->owner(), "aten::_native_batch_norm_legit_no_training.out",
                                std::move(args), output_types(*node), node->name(), node);
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < k->num_outputs(); ++i) outs.push_back(k->output(i));
  return replace_node(node, outs);
}

// aten::batch_norm returns the normalized tensor only; the kernel also writes the two saved
// statistics of training, which it resizes to [0] in inference.
ir::Status lower_batch_norm_inference(ir::Program&, ir::Node* node) {
  const ir::Arg* training = node->arg("training");
  ir::Value* input = input_value(*node, "input");
  if (training == nullptr || training->kind() != ir::ArgKind::Bool || training->as_bool()) {
    return ir::Status::error(ir::node_error(
        *node, "batch norm in training mode has no kernel; export the model in eval()"));
  }
  if (input == nullptr || input_value(*node, "running_mean") == nullptr ||
      input_value(*node, "running_var") == nullptr || node->num_outputs() != 1) {
    return ir::Status::error(ir::node_error(*node, "batch norm without running statistics"));
  }
  const ir::DType dtype = input->tensor_type().dtype;
  ir::Node* k = add_kernel_node(
      *node->owner(), "aten::_native_batch_norm_legit_no_training.out",
      select_args(*node, "input,weight,bias,running_mean,running_var,momentum,eps"),
      {node->output()->type(), with_shape(dtype, {0}), with_shape(dtype, {0})}, node->name(), node);
  return replace_node(node, {k->output(0)});
}

// max_pool2d is max_pool2d_with_indices without the indices (int64, the output's shape).
ir::Status lower_max_pool2d(ir::Program&, ir::Node* node) {
  if (input_value(*node, "self") == nullptr || node->num_outputs() != 1) {
    return ir::Status::error(ir::node_error(*node, "max_pool2d needs a tensor"));
  }
  ir::TensorType indices = node->output()->tensor_type();
  indices.dtype = ir::DType::Int64;
  ir::Node* k = add_kernel_node(
      *node->owner(), "aten::max_pool2d_with_indices.out",
      select_args(*node, "self,kernel_size,stride,padding,dilation,ceil_mode"),
      {node->output()->type(), ir::ValueType::of_tensor(indices)}, node->name(), node);
  return replace_node(node, {k->output(0)});
}

}  // namespace ember::ops
