#include "compiler/passes/op_table.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>

#include "compiler/passes/op_decompositions.h"
#include "compiler/passes/pass_util.h"

namespace ember::passes {

namespace {

ir::Status lower_linear(ir::Program& program, ir::Node* node);
ir::Status lower_copy(ir::Program& program, ir::Node* node);
ir::Status lower_celu(ir::Program& program, ir::Node* node);
ir::Status lower_select_scatter(ir::Program& program, ir::Node* node);
ir::Status lower_slice_scatter(ir::Program& program, ir::Node* node);
ir::Status lower_batch_norm(ir::Program& program, ir::Node* node);
ir::Status lower_batch_norm_inference(ir::Program& program, ir::Node* node);
ir::Status lower_flatten(ir::Program& program, ir::Node* node);
ir::Status lower_max_pool2d(ir::Program& program, ir::Node* node);
ir::Status lower_squeeze(ir::Program& program, ir::Node* node);

constexpr const char* kTrainingBatchNorm =
    "batch norm in training mode has no kernel: a BatchNorm was left in train(); call "
    "model.eval() before exporting";

// The table. Keep it sorted by functional op; one line per op. A rule with neither a kernel nor a
// decomposition refuses its op with `reason`.
constexpr LoweringRule kRules[] = {
    // Batch norm in training mode (it updates the running statistics): no kernel, and the
    // usual cause is a model exported without eval().
    {"aten::_native_batch_norm_legit.default", nullptr, nullptr, nullptr, kTrainingBatchNorm},
    {"aten::_native_batch_norm_legit_functional.default", nullptr, nullptr, nullptr,
     kTrainingBatchNorm},
    {"aten::_reshape_alias.default", "aten::view_copy.out", "self,size", nullptr, nullptr},
    {"aten::_to_copy.default", "aten::_to_copy.out", "self,non_blocking,memory_format", nullptr,
     nullptr},
    {"aten::_unsafe_view.default", "aten::view_copy.out", "self,size", nullptr, nullptr},
    {"aten::addcdiv.default", nullptr, nullptr, lower_addcdiv, nullptr},
    {"aten::addcmul.default", nullptr, nullptr, lower_addcmul, nullptr},
    {"aten::all.default", "aten::all.all_out", nullptr, nullptr, nullptr},
    {"aten::all.dim", "aten::all.out", nullptr, nullptr, nullptr},
    {"aten::any.default", "aten::any.all_out", nullptr, nullptr, nullptr},
    {"aten::any.dim", "aten::any.out", nullptr, nullptr, nullptr},
    {"aten::arange.default", "aten::arange.out", "end", nullptr, nullptr},
    {"aten::arange.start", "aten::arange.start_out", "start,end,step=1", nullptr, nullptr},
    {"aten::arange.start_step", "aten::arange.start_out", "start,end,step", nullptr, nullptr},
    // A gather from the input's storage; lowering_gap accepts only inputs whose storage Ember
    // reproduces. One to the input's own strides is removed as an alias (remove_aliases.cc).
    {"aten::as_strided.default", "aten::as_strided_copy.out", "self,size,stride,storage_offset",
     nullptr, nullptr},
    // torch.export's default (training) IR: batch_norm, conv2d, flatten, max_pool2d.
    {"aten::batch_norm.default", nullptr, nullptr, lower_batch_norm_inference, nullptr},
    {"aten::celu.default", nullptr, nullptr, lower_celu, nullptr},
    {"aten::clamp_max.Tensor", "aten::clamp.Tensor_out", "self,min=none,max", nullptr, nullptr},
    {"aten::clamp_max.default", "aten::clamp.out", "self,min=none,max", nullptr, nullptr},
    {"aten::clamp_min.Tensor", "aten::clamp.Tensor_out", "self,min,max=none", nullptr, nullptr},
    {"aten::clamp_min.default", "aten::clamp.out", "self,min,max=none", nullptr, nullptr},
    {"aten::clone.default", "aten::clone.out", "self,memory_format", nullptr, nullptr},
    {"aten::conv2d.default", "aten::convolution.out",
     "input,weight,bias,stride,padding,dilation,transposed=false,output_padding=[0,0],groups",
     nullptr, nullptr},
    {"aten::copy.default", nullptr, nullptr, lower_copy, nullptr},
    // empty's contents are unspecified; zeros are one valid choice.
    {"aten::div.Tensor_mode", "aten::div.out_mode", nullptr, nullptr, nullptr},
    {"aten::empty.memory_format", "aten::full.out", "size,fill_value=0", nullptr, nullptr},
    {"aten::expand.default", "aten::expand_copy.out", "self,size,implicit", nullptr, nullptr},
    {"aten::eye.default", nullptr, nullptr, lower_eye, nullptr},
    {"aten::eye.m", nullptr, nullptr, lower_eye, nullptr},
    {"aten::fill.Scalar", "aten::full_like.out", "self,fill_value=value,memory_format=none",
     nullptr, nullptr},
    {"aten::fill.Tensor", nullptr, nullptr, lower_fill_tensor, nullptr},
    {"aten::flatten.using_ints", nullptr, nullptr, lower_flatten, nullptr},
    {"aten::full.default", "aten::full.out", "size,fill_value", nullptr, nullptr},
    {"aten::full_like.default", "aten::full_like.out", "self,fill_value,memory_format", nullptr,
     nullptr},
    {"aten::index.Tensor", "aten::index.Tensor_out", "self,indices", nullptr, nullptr},
    {"aten::lift_fresh_copy.default", "aten::clone.out", "self,memory_format=none", nullptr,
     nullptr},
    {"aten::linear.default", nullptr, nullptr, lower_linear, nullptr},
    {"aten::linalg_vector_norm.default", nullptr, nullptr, lower_vector_norm, nullptr},
    {"aten::matmul.default", nullptr, nullptr, lower_matmul, nullptr},
    {"aten::max.dim", "aten::max.dim_max", nullptr, nullptr, nullptr},
    {"aten::max_pool2d.default", nullptr, nullptr, lower_max_pool2d, nullptr},
    {"aten::mean.dim", "aten::mean.out", nullptr, nullptr, nullptr},
    {"aten::mean.default", "aten::mean.out", "self,dim=none,keepdim=false,dtype", nullptr, nullptr},
    {"aten::min.dim", "aten::min.dim_min", nullptr, nullptr, nullptr},
    {"aten::mv.default", nullptr, nullptr, lower_mv, nullptr},
    {"aten::native_batch_norm.default", nullptr, nullptr, lower_batch_norm, nullptr},
    {"aten::new_empty.default", "aten::full.out", "size,fill_value=0", nullptr, nullptr},
    {"aten::new_full.default", "aten::full.out", "size,fill_value", nullptr, nullptr},
    {"aten::new_ones.default", "aten::full.out", "size,fill_value=1", nullptr, nullptr},
    {"aten::new_zeros.default", "aten::full.out", "size,fill_value=0", nullptr, nullptr},
    {"aten::norm.ScalarOpt_dim", nullptr, nullptr, lower_vector_norm, nullptr},
    {"aten::ones.default", "aten::full.out", "size,fill_value=1", nullptr, nullptr},
    {"aten::ones_like.default", "aten::full_like.out", "self,fill_value=1,memory_format", nullptr,
     nullptr},
    {"aten::permute.default", "aten::permute_copy.out", "self,dims", nullptr, nullptr},
    {"aten::prod.dim_int", "aten::prod.int_out", nullptr, nullptr, nullptr},
    {"aten::scalar_tensor.default", "aten::scalar_tensor.out", "s", nullptr, nullptr},
    {"aten::select.int", "aten::select_copy.int_out", "self,dim,index", nullptr, nullptr},
    {"aten::select_scatter.default", nullptr, nullptr, lower_select_scatter, nullptr},
    {"aten::slice.Tensor", "aten::slice_copy.Tensor_out", "self,dim,start,end,step", nullptr,
     nullptr},
    {"aten::slice_scatter.default", nullptr, nullptr, lower_slice_scatter, nullptr},
    {"aten::sort.default", "aten::sort.values", nullptr, nullptr, nullptr},
    {"aten::sort.stable", "aten::sort.values_stable", nullptr, nullptr, nullptr},
    {"aten::split.Tensor", "aten::split_copy.Tensor_out", "self,split_size,dim", nullptr, nullptr},
    {"aten::split_with_sizes.default", "aten::split_with_sizes_copy.out", "self,split_sizes,dim",
     nullptr, nullptr},
    {"aten::squeeze.default", nullptr, nullptr, lower_squeeze, nullptr},
    {"aten::squeeze.dim", "aten::squeeze_copy.dim_out", "self,dim", nullptr, nullptr},
    {"aten::squeeze.dims", "aten::squeeze_copy.dims_out", "self,dim", nullptr, nullptr},
    {"aten::std.dim", "aten::std.out", nullptr, nullptr, nullptr},
    // sum over every dim: ExecuTorch registers only the dim-list overload, whose dim=None
    // means every dim (the same kernel family in Ember).
    {"aten::sum.default", "aten::sum.IntList_out", "self,dim=none,keepdim=false,dtype", nullptr,
     nullptr},
    {"aten::sum.dim_IntList", "aten::sum.IntList_out", nullptr, nullptr, nullptr},
    {"aten::t.default", "aten::permute_copy.out", "self,dims=[1,0]", nullptr, nullptr},
    {"aten::topk.default", "aten::topk.values", nullptr, nullptr, nullptr},
    {"aten::transpose.int", "aten::transpose_copy.int_out", "self,dim0,dim1", nullptr, nullptr},
    {"aten::unbind.int", "aten::unbind_copy.int_out", "self,dim", nullptr, nullptr},
    {"aten::unsqueeze.default", "aten::unsqueeze_copy.out", "self,dim", nullptr, nullptr},
    {"aten::var.dim", "aten::var.out", nullptr, nullptr, nullptr},
    {"aten::view.default", "aten::view_copy.out", "self,size", nullptr, nullptr},
    {"aten::zeros.default", "aten::full.out", "size,fill_value=0", nullptr, nullptr},
    {"aten::zeros_like.default", "aten::full_like.out", "self,fill_value=0,memory_format", nullptr,
     nullptr},
    // PyTorch names the tensor-parameter overloads `.tensor`, ExecuTorch's kernels `.Tensor_out`;
    // the other quantized_decomposed ops reach their kernels by the naming convention.
    {"quantized_decomposed::choose_qparams.tensor",
     "quantized_decomposed::choose_qparams.Tensor_out", nullptr, nullptr, nullptr},
    {"quantized_decomposed::dequantize_per_tensor.tensor",
     "quantized_decomposed::dequantize_per_tensor.Tensor_out", nullptr, nullptr, nullptr},
    {"quantized_decomposed::quantize_per_tensor.tensor",
     "quantized_decomposed::quantize_per_tensor.Tensor_out", nullptr, nullptr, nullptr},
    // Symbolic size arithmetic: the runtime's prim ops.
    {"sym::add.default", "executorch_prim::add.Scalar", nullptr, nullptr, nullptr},
    {"sym::sub.default", "executorch_prim::sub.Scalar", nullptr, nullptr, nullptr},
    {"sym::mul.default", "executorch_prim::mul.Scalar", nullptr, nullptr, nullptr},
    {"sym::floordiv.default", "executorch_prim::floordiv.Scalar", nullptr, nullptr, nullptr},
    {"sym::truediv.default", "executorch_prim::truediv.Scalar", nullptr, nullptr, nullptr},
    {"sym::mod.default", "executorch_prim::mod.Scalar", nullptr, nullptr, nullptr},
    {"sym::eq.default", "executorch_prim::eq.Scalar", nullptr, nullptr, nullptr},
    {"sym::gt.default", "executorch_prim::gt.Scalar", nullptr, nullptr, nullptr},
    {"sym::lt.default", "executorch_prim::lt.Scalar", nullptr, nullptr, nullptr},
    {"sym::ge.default", "executorch_prim::ge.Scalar", nullptr, nullptr, nullptr},
    {"sym::le.default", "executorch_prim::le.Scalar", nullptr, nullptr, nullptr},
    {"sym::neg.default", "executorch_prim::neg.Scalar", nullptr, nullptr, nullptr},
    {"sym::max.default", "executorch_prim::sym_max.Scalar", nullptr, nullptr, nullptr},
    {"sym::min.default", "executorch_prim::sym_min.Scalar", nullptr, nullptr, nullptr},
    {"sym::not.default", "executorch_prim::sym_not.Scalar", nullptr, nullptr, nullptr},
    {"sym::float.default", "executorch_prim::sym_float.Scalar", nullptr, nullptr, nullptr},
    {"sym::int.default", "executorch_prim::sym_int.Scalar", nullptr, nullptr, nullptr},
    {"sym::ceil.default", "executorch_prim::ceil.Scalar", nullptr, nullptr, nullptr},
    {"sym::ite.default", "executorch_prim::sym_ite.Scalar", nullptr, nullptr, nullptr},
    {"aten::sym_ite.default", "executorch_prim::sym_ite.Scalar", nullptr, nullptr, nullptr},
};

std::pair<std::string, std::string> split_name(std::string_view qualified) {
  const size_t colon = qualified.find("::");
  const size_t dot = qualified.find('.', colon == std::string_view::npos ? 0 : colon + 2);
  if (dot == std::string_view::npos) return {std::string(qualified), "default"};
  return {std::string(qualified.substr(0, dot)), std::string(qualified.substr(dot + 1))};
}

ir::Arg parse_literal(std::string_view text) {
  if (text == "none") return ir::Arg::none();
  if (text == "true") return ir::Arg::boolean(true);
  if (text == "false") return ir::Arg::boolean(false);
  if (!text.empty() && text.front() == '[') {
    std::vector<ir::Arg> items;
    std::string body(text.substr(1, text.size() - 2));
    size_t pos = 0;
    while (pos < body.size()) {
      size_t comma = body.find(',', pos);
      if (comma == std::string::npos) comma = body.size();
      items.push_back(ir::Arg::integer(std::strtoll(body.c_str() + pos, nullptr, 10)));
      pos = comma + 1;
    }
    return ir::Arg::list(std::move(items));
  }
  const std::string s(text);
  if (s.find('.') != std::string::npos) return ir::Arg::floating(std::strtod(s.c_str(), nullptr));
  return ir::Arg::integer(std::strtoll(s.c_str(), nullptr, 10));
}

// Builds the kernel's arguments from "a,b=literal,c=other_arg".
std::vector<ir::NamedArg> select_args(const ir::Node& node, const char* spec) {
  if (spec == nullptr) return node.args();
  std::vector<ir::NamedArg> out;
  std::string_view rest(spec);
  while (!rest.empty()) {
    // Split at the next comma outside brackets ("dims=[1,0]" is one item).
    size_t comma = 0;
    for (int depth = 0; comma < rest.size(); ++comma) {
      if (rest[comma] == '[') ++depth;
      if (rest[comma] == ']') --depth;
      if (rest[comma] == ',' && depth == 0) break;
    }
    if (comma == rest.size()) comma = std::string_view::npos;
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    std::string name(item.substr(0, eq));
    if (eq == std::string_view::npos) {
      const ir::Arg* a = node.arg(name);
      out.push_back({name, a != nullptr ? *a : ir::Arg::none()});
      continue;
    }
    std::string_view value = item.substr(eq + 1);
    // `fill_value=value` renames an argument of the functional op.
    const ir::Arg* renamed = node.arg(value);
    out.push_back({name, renamed != nullptr ? *renamed : parse_literal(value)});
  }
  return out;
}

std::vector<ir::ValueType> output_types(const ir::Node& node) {
  std::vector<ir::ValueType> types;
  for (size_t i = 0; i < node.num_outputs(); ++i) types.push_back(node.output(i)->type());
  return types;
}

// Replaces every output of `node` with the matching output of `with`, then erases `node`.
ir::Status replace_node(ir::Node* node, const std::vector<ir::Value*>& with) {
  for (size_t i = 0; i < node->num_outputs() && i < with.size(); ++i) {
    node->output(i)->replace_all_uses_with(with[i]);
  }
  return node->owner()->erase_node(node);
}

ir::Value* input_value(const ir::Node& node, const char* name) {
  const ir::Arg* a = node.arg(name);
  return a != nullptr && a->kind() == ir::ArgKind::Value ? a->as_value() : nullptr;
}

ir::ValueType with_shape(ir::DType dtype, std::vector<ir::Dim> shape) {
  return ir::ValueType::of_tensor(ir::TensorType{dtype, std::move(shape), {}});
}

ir::Status lower_linear(ir::Program&, ir::Node* node) {
  ir::Value* input = input_value(*node, "input");
  ir::Value* weight = input_value(*node, "weight");
  ir::Value* bias = input_value(*node, "bias");
  if (input == nullptr || weight == nullptr || input->tensor_type().rank() != 2) {
    return ir::Status::error(node_error(*node, "linear is lowered for a 2-D input only"));
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
    return ir::Status::error(node_error(*node, "celu's alpha must be a number"));
  }
  if (self == nullptr) return ir::Status::error(node_error(*node, "celu needs a tensor"));
  if (alpha == 0)
    return ir::Status::error(node_error(*node, "celu with alpha 0 (ATen refuses it)"));
  ir::Node* k = add_kernel_node(*node->owner(), "aten::elu.out",
                                {{"self", ir::Arg::value(self)},
                                 {"alpha", ir::Arg::floating(alpha)},
                                 {"scale", ir::Arg::integer(1)},
                                 {"input_scale", ir::Arg::floating(1.0 / alpha)}},
                                output_types(*node), node->name(), node);
  return replace_node(node, {k->output()});
}

// ATen's squeeze() drops every size-1 dim. ExecuTorch registers only squeeze_copy's dim-list
// overload: with a static shape the dims are known here, so the kernel is one both runtimes have.
// A symbolic dim (which may be 1 at run time) keeps squeeze_copy.out, which decides at run time.
ir::Status lower_squeeze(ir::Program&, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr) return ir::Status::error(node_error(*node, "squeeze needs a tensor"));
  std::vector<ir::Arg> dims;
  bool all_static = true;
  const std::vector<ir::Dim>& shape = self->tensor_type().shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    all_static = all_static && shape[d].is_static();
    if (shape[d].is_static() && shape[d].value == 1) {
      dims.push_back(ir::Arg::integer(static_cast<int64_t>(d)));
    }
  }
  std::vector<ir::NamedArg> args = {{"self", ir::Arg::value(self)}};
  if (all_static) args.push_back({"dim", ir::Arg::list(std::move(dims))});
  ir::Node* k = add_kernel_node(
      *node->owner(), all_static ? "aten::squeeze_copy.dims_out" : "aten::squeeze_copy.out",
      std::move(args), output_types(*node), node->name(), node);
  return replace_node(node, {k->output()});
}

ir::Status lower_copy(ir::Program&, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  ir::Value* src = input_value(*node, "src");
  if (self == nullptr || src == nullptr) {
    return ir::Status::error(node_error(*node, "copy needs two tensors"));
  }
  ir::Graph& g = *node->owner();
  const ir::TensorType& dst = self->tensor_type();
  ir::Value* cur = src;
  if (src->tensor_type().shape != dst.shape) {
    std::vector<ir::Arg> size;
    for (const ir::Dim& d : dst.shape) {
      if (!d.is_static()) {
        return ir::Status::error(node_error(*node, "a broadcasting copy into a dynamic shape"));
      }
      size.push_back(ir::Arg::integer(d.value));
    }
    cur = add_kernel_node(g, "aten::expand_copy.out",
                          {{"self", ir::Arg::value(cur)},
                           {"size", ir::Arg::list(size)},
                           {"implicit", ir::Arg::boolean(false)}},
                          {with_shape(src->tensor_type().dtype, dst.shape)}, node->name() + "_e",
                          node)
              ->output();
  }
  ir::Node* k = nullptr;
  if (src->tensor_type().dtype != dst.dtype || cur == src) {
    std::vector<ir::NamedArg> args;
    args.push_back({"self", ir::Arg::value(cur)});
    args.push_back({"non_blocking", ir::Arg::boolean(false)});
    args.push_back({"memory_format", ir::Arg::none()});
    k = add_kernel_node(g, "aten::_to_copy.out", std::move(args), output_types(*node), node->name(),
                        node);
  }
  return replace_node(node, {k != nullptr ? k->output() : cur});
}

// A constant int64 tensor of `shape` whose element at index i is f(coordinate along `dim`).
ir::Value* index_constant(ir::Program& program, const std::vector<int64_t>& shape, int64_t dim,
                          int64_t start, int64_t step, const std::string& base) {
  int64_t numel = 1, inner = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    numel *= shape[i];
    if (static_cast<int64_t>(i) > dim) inner *= shape[i];
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(numel) * 8);
  for (int64_t i = 0; i < numel; ++i) {
    const int64_t coord = (i / inner) % shape[static_cast<size_t>(dim)];
    const int64_t v = start + coord * step;
    std::memcpy(bytes->data() + i * 8, &v, 8);
  }
  ir::TensorType type{ir::DType::Int64, {}, {}};
  for (int64_t s : shape) type.shape.emplace_back(s);
  const std::string fqn = program.graph().unique_name("_scatter_index_" + base);
  ir::Weight w;
  w.name = fqn;
  w.type = type;
  w.storage = bytes;
  w.nbytes = bytes->size();
  program.weights.push_back(w);
  return program.add_input(fqn, ir::ValueType::of_tensor(type),
                           ir::InputSpec{ir::InputKind::Constant, fqn, {}, true});
}

ir::Status scatter_into(ir::Program& program, ir::Node* node, int64_t dim, int64_t start,
                        int64_t step, bool unsqueeze) {
  ir::Value* self = input_value(*node, "self");
  ir::Value* src = input_value(*node, "src");
  std::vector<int64_t> shape;
  if (self == nullptr || src == nullptr || !static_sizes(src->tensor_type(), &shape)) {
    return ir::Status::error(node_error(*node, "a write through a view needs static shapes"));
  }
  const int64_t rank = static_cast<int64_t>(self->tensor_type().rank());
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return ir::Status::error(node_error(*node, "dim out of range"));
  ir::Graph& g = *node->owner();
  ir::Value* values = src;
  if (unsqueeze) {
    shape.insert(shape.begin() + dim, 1);
    std::vector<ir::Dim> dims(shape.begin(), shape.end());
    values =
        add_kernel_node(g, "aten::unsqueeze_copy.out",
                        {{"self", ir::Arg::value(src)}, {"dim", ir::Arg::integer(dim)}},
                        {with_shape(src->tensor_type().dtype, dims)}, node->name() + "_src", node)
            ->output();
  }
  ir::Value* index = index_constant(program, shape, dim, start, step, node->name());
  ir::Node* k = add_kernel_node(g, "aten::scatter.src_out",
                                {{"self", ir::Arg::value(self)},
                                 {"dim", ir::Arg::integer(dim)},
                                 {"index", ir::Arg::value(index)},
                                 {"src", ir::Arg::value(values)}},
                                output_types(*node), node->name(), node);
  return replace_node(node, {k->output()});
}

int64_t int_arg(const ir::Node& node, const char* name, int64_t fallback) {
  const ir::Arg* a = node.arg(name);
  return a != nullptr && a->kind() == ir::ArgKind::Int ? a->as_int() : fallback;
}

ir::Status lower_select_scatter(ir::Program& program, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr) return ir::Status::error(node_error(*node, "needs a tensor"));
  const int64_t rank = static_cast<int64_t>(self->tensor_type().rank());
  int64_t dim = int_arg(*node, "dim", 0);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank || !self->tensor_type().shape[dim].is_static()) {
    return ir::Status::error(node_error(*node, "select_scatter on a dynamic or invalid dim"));
  }
  int64_t index = int_arg(*node, "index", 0);
  if (index < 0) index += self->tensor_type().shape[dim].value;
  return scatter_into(program, node, dim, index, 1, /*unsqueeze=*/true);
}

ir::Status lower_slice_scatter(ir::Program& program, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr) return ir::Status::error(node_error(*node, "needs a tensor"));
  const int64_t rank = static_cast<int64_t>(self->tensor_type().rank());
  int64_t dim = int_arg(*node, "dim", 0);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank || !self->tensor_type().shape[dim].is_static()) {
    return ir::Status::error(node_error(*node, "slice_scatter on a dynamic or invalid dim"));
  }
  const int64_t size = self->tensor_type().shape[dim].value;
  const ir::Arg* start_arg = node->arg("start");
  if (start_arg != nullptr && start_arg->kind() == ir::ArgKind::Value) {
    return ir::Status::error(node_error(*node, "a write through a slice with a symbolic start"));
  }
  int64_t start = int_arg(*node, "start", 0);
  if (start < 0) start += size;
  start = std::max<int64_t>(0, std::min(start, size));
  return scatter_into(program, node, dim, start, int_arg(*node, "step", 1), /*unsqueeze=*/false);
}

ir::Status lower_batch_norm(ir::Program&, ir::Node* node) {
  const ir::Arg* training = node->arg("training");
  if (training == nullptr || training->kind() != ir::ArgKind::Bool || training->as_bool()) {
    return ir::Status::error(
        node_error(*node, "batch norm in training mode has no kernel; export the model in eval()"));
  }
  std::vector<ir::NamedArg> args =
      select_args(*node, "input,weight,bias,running_mean,running_var,momentum,eps");
  ir::Node* k = add_kernel_node(*node->owner(), "aten::_native_batch_norm_legit_no_training.out",
                                std::move(args), output_types(*node), node->name(), node);
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < k->num_outputs(); ++i) outs.push_back(k->output(i));
  return replace_node(node, outs);
}

// `x * 2` is traced as mul.Tensor with a number for `other`; its kernel is the Scalar overload.
// aten::batch_norm returns the normalized tensor only; the kernel also writes the two saved
// statistics of training, which it resizes to [0] in inference.
ir::Status lower_batch_norm_inference(ir::Program&, ir::Node* node) {
  const ir::Arg* training = node->arg("training");
  ir::Value* input = input_value(*node, "input");
  if (training == nullptr || training->kind() != ir::ArgKind::Bool || training->as_bool()) {
    return ir::Status::error(
        node_error(*node, "batch norm in training mode has no kernel; export the model in eval()"));
  }
  if (input == nullptr || input_value(*node, "running_mean") == nullptr ||
      input_value(*node, "running_var") == nullptr || node->num_outputs() != 1) {
    return ir::Status::error(node_error(*node, "batch norm without running statistics"));
  }
  const ir::DType dtype = input->tensor_type().dtype;
  ir::Node* k = add_kernel_node(
      *node->owner(), "aten::_native_batch_norm_legit_no_training.out",
      select_args(*node, "input,weight,bias,running_mean,running_var,momentum,eps"),
      {node->output()->type(), with_shape(dtype, {0}), with_shape(dtype, {0})}, node->name(), node);
  return replace_node(node, {k->output(0)});
}

// flatten is a view: the same elements in the output's shape (at most one symbolic size, -1).
ir::Status lower_flatten(ir::Program&, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr || node->num_outputs() != 1) {
    return ir::Status::error(node_error(*node, "flatten needs a tensor"));
  }
  std::vector<ir::Arg> size;
  int symbolic = 0;
  for (const ir::Dim& d : node->output()->tensor_type().shape) {
    symbolic += d.is_static() ? 0 : 1;
    size.push_back(ir::Arg::integer(d.is_static() ? d.value : -1));
  }
  if (symbolic > 1) {
    return ir::Status::error(node_error(*node, "flatten to a shape with two symbolic sizes"));
  }
  ir::Node* k = add_kernel_node(*node->owner(), "aten::view_copy.out",
                                {{"self", ir::Arg::value(self)}, {"size", ir::Arg::list(size)}},
                                output_types(*node), node->name(), node);
  return replace_node(node, {k->output()});
}

// max_pool2d is max_pool2d_with_indices without the indices (int64, the output's shape).
ir::Status lower_max_pool2d(ir::Program&, ir::Node* node) {
  if (input_value(*node, "self") == nullptr || node->num_outputs() != 1) {
    return ir::Status::error(node_error(*node, "max_pool2d needs a tensor"));
  }
  ir::TensorType indices = node->output()->tensor_type();
  indices.dtype = ir::DType::Int64;
  ir::Node* k = add_kernel_node(
      *node->owner(), "aten::max_pool2d_with_indices.out",
      select_args(*node, "self,kernel_size,stride,padding,dilation,ceil_mode"),
      {node->output()->type(), ir::ValueType::of_tensor(indices)}, node->name(), node);
  return replace_node(node, {k->output(0)});
}

std::string effective_overload(const ir::Node& node) {
  const ir::Arg* other = node.arg("other");
  if (node.overload() == "Tensor" && other != nullptr && other->kind() != ir::ArgKind::Value) {
    return "Scalar";
  }
  return node.overload();
}

const LoweringRule* find_rule_by_name(const std::string& op) {
  for (const LoweringRule& r : kRules) {
    if (op == r.functional) return &r;
  }
  return nullptr;
}

// ATen's out-variant names: `op.default` → `op.out`, `op.X` → `op.X_out`, and `op.Tensor` →
// `op.out` for the binary ops whose functional overload is `Tensor` (add, mul...). The first
// registered one wins; the first candidate names the missing kernel otherwise.
std::string convention_kernel(const std::string& op, const std::string& overload) {
  std::vector<std::string> candidates;
  if (overload == "default") {
    candidates.push_back(op + ".out");
  } else {
    candidates.push_back(op + "." + overload + "_out");
    if (overload == "Tensor") candidates.push_back(op + ".out");
  }
  for (const std::string& c : candidates) {
    if (kernel_exists(c)) return c;
  }
  return candidates[0];
}

// Why `op.overload` cannot be lowered; empty when it can.
std::string gap_for(std::string op, const std::string& overload, bool in_place) {
  // An in-place op is functionalized first: its functional form is what gets lowered.
  if (in_place && !op.empty() && op.back() == '_') op.pop_back();
  const LoweringRule* r = find_rule_by_name(op + "." + overload);
  if (r != nullptr && r->kernel == nullptr && r->decompose == nullptr) return r->reason;
  if (r != nullptr && r->kernel == nullptr) return "";  // a decomposition
  if (r != nullptr) {
    if (is_prim_op(r->kernel) || kernel_exists(r->kernel)) return "";
    return std::string("its kernel ") + r->kernel + " is not in the portable library";
  }
  const std::string k = convention_kernel(op, overload);
  if (is_prim_op(op + "." + overload) || kernel_exists(k)) return "";
  return "no kernel (" + k + ") and no decomposition";
}

// as_strided reads its input's storage: PyTorch's storage of that tensor, Ember's the dense
// row-major copy every kernel writes. The two agree when the input fills its storage (pass_util.h)
// row-major; otherwise the result would silently differ, so the op is refused with what to do.
// Everything is static, so reads out of bounds are refused here rather than at run time.
std::string as_strided_gap(const ir::Node& node) {
  const ir::Value* self = input_value(node, "self");
  if (self == nullptr || node.num_outputs() != 1) return "as_strided needs a tensor";
  std::vector<int64_t> sizes, layout, row_major, size, stride;
  const ir::Arg* offset_arg = node.arg("storage_offset");
  const bool static_offset =
      offset_arg == nullptr || offset_arg->is_none() || offset_arg->kind() == ir::ArgKind::Int;
  if (!static_sizes(self->tensor_type(), &sizes) || !static_int_list(node, "size", &size) ||
      !static_int_list(node, "stride", &stride) || !static_offset) {
    return "as_strided with a symbolic input shape, size, stride or storage offset: Ember checks "
           "the elements it reads at compile time; export with static shapes";
  }
  const int64_t offset =
      offset_arg != nullptr && offset_arg->kind() == ir::ArgKind::Int ? offset_arg->as_int() : 0;
  if (size.size() != stride.size()) {
    return "as_strided's size and stride differ in length (" + std::to_string(size.size()) +
           " and " + std::to_string(stride.size()) + ")";
  }
  if (!fills_storage(self)) {
    const ir::Node* p = self->producer();
    return "as_strided reads its input's storage, and its input (" +
           (p != nullptr ? "%" + self->name() + ", from " + p->qualified_op()
                         : "a subgraph input") +
           ") may not start at or fill that storage in PyTorch, while Ember's tensors are dense "
           "copies; the result would differ. Clone the input (x.clone()) before as_strided, or "
           "write the view with view/permute/slice";
  }
  ir::TensorType contiguous = self->tensor_type();
  contiguous.dim_order.clear();
  if (!dense_strides(self->tensor_type(), &layout) || !dense_strides(contiguous, &row_major)) {
    return "as_strided of a tensor with a malformed dim order";
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && layout[d] != row_major[d]) {
      std::string order;
      for (int32_t o : self->tensor_type().dim_order) {
        order += (order.empty() ? "" : ", ") + std::to_string(o);
      }
      return "as_strided reads its input's storage, which PyTorch lays out in dim order [" + order +
             "] and Ember row-major; the result would differ. Make the input contiguous "
             "(x.contiguous()) before as_strided";
    }
  }
  const int64_t numel = self->tensor_type().numel_upper_bound().value_or(INT64_MAX);
  int64_t last = offset;
  bool overflow = false, empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0) return "as_strided with a negative size (PyTorch refuses it too)";
    if (stride[d] < 0) return "as_strided with a negative stride (PyTorch refuses it too)";
    empty = empty || size[d] == 0;
    int64_t reach = 0;
    overflow = overflow || __builtin_mul_overflow(size[d] - 1, stride[d], &reach) ||
               __builtin_add_overflow(last, reach, &last);
  }
  if (offset < 0) return "as_strided with a negative storage offset (PyTorch refuses it too)";
  if (!empty && (overflow || last >= numel)) {
    return "as_strided reads " +
           (overflow ? std::string("past int64") : "element " + std::to_string(last)) +
           " of an input of " + std::to_string(numel) +
           " elements: out of bounds (PyTorch refuses it too)";
  }
  return "";
}

}  // namespace

bool is_list_out_kernel(std::string_view name) {
  return name == "aten::split_copy.Tensor_out" || name == "aten::split_with_sizes_copy.out" ||
         name == "aten::unbind_copy.int_out";
}

const LoweringRule* find_rule(const ir::Node& node) {
  return find_rule_by_name(node.qualified_op());
}

bool is_delegate_call(const ir::Node& node) { return node.op() == kDelegateCallOp; }

bool is_lowered(const ir::Node& node) {
  const std::string op = node.qualified_op();
  if (is_prim_op(op) || is_delegate_call(node)) return true;
  const std::string& ov = node.overload();
  const bool out_form = ov == "out" || ov.starts_with("out_") ||
                        (ov.size() > 4 && ov.compare(ov.size() - 4, 4, "_out") == 0) ||
                        op == "aten::max.dim_max" || op == "aten::min.dim_min" ||
                        op == "aten::topk.values" || op == "aten::sort.values" ||
                        op == "aten::sort.values_stable";
  return out_form;
}

std::optional<KernelForm> direct_kernel_form(const ir::Node& node) {
  if (is_delegate_call(node)) return std::nullopt;  // no kernel: constant folding leaves it
  if (is_lowered(node)) {
    return KernelForm{node.op(), node.overload(), node.args()};
  }
  const LoweringRule* r = find_rule(node);
  std::string kernel;
  const char* spec = nullptr;
  if (r != nullptr) {
    if (r->kernel == nullptr) return std::nullopt;
    kernel = r->kernel;
    spec = r->args;
  } else {
    kernel = convention_kernel(node.op(), effective_overload(node));
  }
  if (!is_prim_op(kernel) && !kernel_exists(kernel)) return std::nullopt;
  auto [op, overload] = split_name(kernel);
  return KernelForm{op, overload, select_args(node, spec)};
}

std::string lowering_gap(const ir::Node& node) {
  if (is_lowered(node) || node.op() == "higher_order::cond") return "";
  const std::string op = node.qualified_op();
  if (op == "aten::as_strided.default" || op == "aten::as_strided_copy.default") {
    std::string gap = as_strided_gap(node);
    if (!gap.empty()) return gap;
  }
  return gap_for(node.op(), effective_overload(node), !mutated_arguments(node).empty());
}

ir::Node* add_kernel_node(ir::Graph& g, const std::string& kernel, std::vector<ir::NamedArg> args,
                          std::vector<ir::ValueType> outputs, const std::string& base,
                          ir::Node* before) {
  auto [op, overload] = split_name(kernel);
  std::vector<std::pair<std::string, ir::ValueType>> outs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = outputs.size() == 1 ? base : base + "_" + std::to_string(i);
    // Kernels write dense outputs: a traced view's strides do not survive as a copy.
    if (outputs[i].kind == ir::ValueKind::Tensor) outputs[i].tensor.dim_order.clear();
    outs.emplace_back(g.unique_name(name), std::move(outputs[i]));
  }
  // Lowered nodes carry no schema: their op is a kernel name the registry may not know, and the
  // out-variant convention (docs/pte-format.md §4.8) is applied at emit.
  ir::Node* n = g.create_node(op, overload, std::move(args), std::move(outs), before, "");
  if (before != nullptr) n->set_module_stack(before->module_stack());
  return n;
}

// A reshape whose result has one symbolic dim can name its sizes statically, with -1 for that dim:
// the kernel infers it from the input's element count, and the program needs no symbolic-size
// arithmetic (and no prim ops) at run time.
void staticize_view_sizes(const ir::Node& node, KernelForm* form) {
  if (form->op != "aten::view_copy" || node.num_outputs() != 1) return;
  const ir::TensorType& out = node.output()->tensor_type();
  size_t symbolic = 0;
  for (const ir::Dim& d : out.shape) symbolic += d.is_static() ? 0 : 1;
  if (symbolic != 1) return;
  for (ir::NamedArg& a : form->args) {
    if (a.name != "size" || a.value.kind() != ir::ArgKind::List) continue;
    std::vector<ir::Arg> sizes;
    for (const ir::Dim& d : out.shape)
      sizes.push_back(ir::Arg::integer(d.is_static() ? d.value : -1));
    a.value = ir::Arg::list(std::move(sizes));
  }
}

ir::Status lower_node(ir::Program& program, ir::Node* node) {
  if (is_lowered(*node) || node->op() == "higher_order::cond") return {};
  const LoweringRule* r = find_rule(*node);
  if (r != nullptr && r->kernel == nullptr && r->decompose == nullptr) {
    return ir::Status::error(node_error(*node, r->reason));  // a refusal (verify_lowerable's too)
  }
  if (r != nullptr && r->kernel == nullptr) return r->decompose(program, node);
  std::optional<KernelForm> form = direct_kernel_form(*node);
  if (!form) return ir::Status::error(node_error(*node, lowering_gap(*node)));
  staticize_view_sizes(*node, &*form);
  ir::Node* k = add_kernel_node(*node->owner(), form->op + "." + form->overload,
                                std::move(form->args), output_types(*node), node->name(), node);
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < k->num_outputs(); ++i) outs.push_back(k->output(i));
  return replace_node(node, outs);
}

}  // namespace ember::passes
