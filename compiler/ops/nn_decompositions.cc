// The decompositions of layers torch.export's default (training) IR keeps whole: linear, celu,
// batch norm and max_pool2d, each to the kernel (or two) that computes it; and the embedding of a
// weight quantized by groups, to the quantized gather.
#include <cstring>
#include <memory>
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

namespace {

// The weight `v` is: a parameter or constant input with stored bytes (never a buffer, which a
// program may write); null otherwise.
const ir::Weight* stored_weight(const ir::Program& program, const ir::Value* v) {
  const ir::Graph& g = program.graph();
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    if (g.inputs()[i] != v) continue;
    const ir::InputSpec& spec = program.input_spec(i);
    if (spec.kind != ir::InputKind::Parameter && spec.kind != ir::InputKind::Constant) {
      return nullptr;
    }
    const ir::Weight* w = program.find_weight(spec.target);
    return w != nullptr && w->has_data() && v->tensor_type().is_static() ? w : nullptr;
  }
  return nullptr;
}

// A weight of new bytes.
ir::Weight new_weight(std::string name, ir::TensorType type, std::vector<uint8_t> bytes) {
  ir::Weight w;
  w.name = std::move(name);
  w.type = std::move(type);
  w.nbytes = bytes.size();
  w.storage = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return w;
}

// embedding(dequantize_per_channel_group(q, scales, zero_points, lo, hi, int8, group), indices)
// of a stored weight: the quantized gather (quantized_decomposed::embedding_4bit or
// embedding_byte, the kernels of ExecuTorch's quantized embeddings), which dequantizes only the
// rows it gathers; without it the whole table is dequantized each call, or stored in float32
// once the dequantize is folded. The same arithmetic: float(q) - float(zero point) is exact, as
// the dequantize's integer difference is, times the same float32 scale. A 4-bit range (-8..7) is
// packed two values a byte (the first in the high nibble, offset by 8), as those kernels read it.
// Null when the embedding is not of that form.
ir::Node* quantized_embedding(ir::Program& program, ir::Node* node) {
  ir::Value* weight = input_value(*node, "weight");
  ir::Value* indices = input_value(*node, "indices");
  ir::Node* dq = weight != nullptr ? weight->producer() : nullptr;
  if (dq == nullptr || indices == nullptr ||
      (dq->qualified_op() != "quantized_decomposed::dequantize_per_channel_group.default" &&
       dq->qualified_op() != "quantized_decomposed::dequantize_per_channel_group.out")) {
    return nullptr;
  }
  ir::Value* q = input_value(*dq, "input");
  ir::Value* scales = input_value(*dq, "scales");
  ir::Value* zero_points = input_value(*dq, "zero_points");
  // Pointers into program.weights, which the weights added below may move: read before adding.
  const ir::Weight* qw = q != nullptr ? stored_weight(program, q) : nullptr;
  const ir::Weight* sw = scales != nullptr ? stored_weight(program, scales) : nullptr;
  const ir::Weight* zw = zero_points != nullptr ? stored_weight(program, zero_points) : nullptr;
  const int64_t lo = int_arg(*dq, "quant_min", 0), hi = int_arg(*dq, "quant_max", 0);
  const int64_t group = int_arg(*dq, "group_size", 0);
  std::vector<int64_t> qs, ss;
  if (qw == nullptr || sw == nullptr || (zero_points != nullptr && zw == nullptr) ||
      !ir::static_sizes(q->tensor_type(), &qs) || qs.size() != 2 ||
      q->tensor_type().dtype != ir::DType::Int8 ||
      scales->tensor_type().dtype != ir::DType::Float32 ||
      weight->tensor_type().dtype != ir::DType::Float32 || group <= 0 || qs[1] % group != 0 ||
      !ir::static_sizes(scales->tensor_type(), &ss) || lo < -128 || hi > 127 || lo > hi) {
    return nullptr;
  }
  const int64_t rows = qs[0], dim = qs[1], groups = dim / group;
  int64_t scale_count = 1;
  for (int64_t s : ss) scale_count *= s;
  if (scale_count != rows * groups) return nullptr;
  const bool four_bit = lo == -8 && hi == 7 && dim % 2 == 0;
  // Zero points in the scales' dtype (the kernels' convention); none when all are 0.
  std::vector<uint8_t> zp_float;  // empty: none
  if (zero_points != nullptr) {
    const ir::DType zt = zero_points->tensor_type().dtype;
    const size_t width = ir::dtype_size(zt);
    std::span<const uint8_t> zb = zw->bytes();
    if ((zt != ir::DType::Int8 && zt != ir::DType::Int32 && zt != ir::DType::Int64) ||
        zb.size() != static_cast<size_t>(scale_count) * width) {
      return nullptr;
    }
    std::vector<uint8_t> as_float(static_cast<size_t>(scale_count) * 4);
    bool any = false;
    for (int64_t i = 0; i < scale_count; ++i) {
      int64_t z = 0;
      if (zt == ir::DType::Int8) {
        z = static_cast<int8_t>(zb[static_cast<size_t>(i)]);
      } else if (zt == ir::DType::Int32) {
        int32_t v;
        std::memcpy(&v, zb.data() + i * 4, 4);
        z = v;
      } else {
        std::memcpy(&z, zb.data() + i * 8, 8);
      }
      any = any || z != 0;
      const float f = static_cast<float>(z);
      std::memcpy(as_float.data() + i * 4, &f, 4);
    }
    if (any) zp_float = std::move(as_float);
  }
  const std::string q_name = qw->name, z_name = zw != nullptr ? zw->name : "";
  ir::Weight scale_view = *sw;
  std::span<const uint8_t> values = qw->bytes();  // of the shared storage, which stays
  ir::Graph& g = *node->owner();
  ir::Value* packed = q;
  if (four_bit) {
    std::vector<uint8_t> bytes(static_cast<size_t>(rows * dim / 2));
    for (size_t i = 0; i < bytes.size(); ++i) {
      const int first = static_cast<int8_t>(values[2 * i]) + 8;
      const int second = static_cast<int8_t>(values[2 * i + 1]) + 8;
      bytes[i] = static_cast<uint8_t>(first * 16 + second);
    }
    packed = add_constant(
        program,
        new_weight(q_name + "@packed4", with_shape(ir::DType::UInt8, {rows, dim / 2}).tensor,
                   std::move(bytes)),
        "c_" + node->name() + "_weight");
  }
  // The scales as [rows, groups] (the kernels' layout), sharing the stored bytes.
  ir::Value* scale_rows = scales;
  if (ss.size() != 2 || ss[0] != rows) {
    scale_view.name += "@rows";
    scale_view.alias_of.clear();
    scale_view.type = with_shape(ir::DType::Float32, {rows, groups}).tensor;
    scale_rows = add_constant(program, scale_view, "c_" + node->name() + "_scales");
  }
  ir::Value* zp_rows =
      zp_float.empty()
          ? nullptr
          : add_constant(
                program,
                new_weight(z_name + "@float", with_shape(ir::DType::Float32, {rows, groups}).tensor,
                           std::move(zp_float)),
                "c_" + node->name() + "_zero_points");
  std::vector<ir::NamedArg> args;
  args.push_back({"weight", ir::Arg::value(packed)});
  args.push_back({"weight_scales", ir::Arg::value(scale_rows)});
  args.push_back({"weight_zero_points", zp_rows ? ir::Arg::value(zp_rows) : ir::Arg::none()});
  args.push_back({"weight_quant_min", ir::Arg::integer(lo)});
  args.push_back({"weight_quant_max", ir::Arg::integer(hi)});
  args.push_back({"indices", ir::Arg::value(indices)});
  args.push_back({"dtype", ir::Arg::dtype(ir::DType::Float32)});
  return add_kernel_node(g,
                         four_bit ? "quantized_decomposed::embedding_4bit.dtype_out"
                                  : "quantized_decomposed::embedding_byte.dtype_out",
                         std::move(args), output_types(*node), node->name(), node);
}

}  // namespace

ir::Status lower_embedding(ir::Program& program, ir::Node* node) {
  ir::Value* weight = input_value(*node, "weight");
  if (ir::Node* gather = quantized_embedding(program, node)) {
    ir::Node* dq = weight->producer();
    EMBER_IR_RETURN_IF_ERROR(replace_node(node, {gather->output()}));
    // The dequantized table, read by nothing else now, is never computed (nor folded).
    if (!dq->output()->has_uses()) return dq->owner()->erase_node(dq);
    return {};
  }
  ir::Node* k = add_kernel_node(*node->owner(), "aten::embedding.out", select_args(*node, nullptr),
                                output_types(*node), node->name(), node);
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
