#include "compiler/ops/op_table.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/op_decompositions.h"
#include "compiler/ops/rewrite_util.h"

namespace ember::ops {

namespace {

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
    {"aten::embedding.default", nullptr, nullptr, lower_embedding, nullptr},
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

// `x * 2` is traced as mul.Tensor with a number for `other`, `x * t.item()` with a symbolic
// scalar (a value that is not a tensor); the kernel of either is the Scalar overload.
std::string effective_overload(const ir::Node& node) {
  const ir::Arg* other = node.arg("other");
  if (node.overload() == "Tensor" && other != nullptr &&
      (other->kind() != ir::ArgKind::Value || !other->as_value()->is_tensor())) {
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
// row-major copy every kernel writes. The two agree when the input fills its storage (graph_util.h)
// row-major; otherwise the result would silently differ, so the op is refused with what to do.
// Everything is static, so reads out of bounds are refused here rather than at run time.
std::string as_strided_gap(const ir::Node& node) {
  const ir::Value* self = input_value(node, "self");
  if (self == nullptr || node.num_outputs() != 1) return "as_strided needs a tensor";
  std::vector<int64_t> sizes, layout, row_major, size, stride;
  const ir::Arg* offset_arg = node.arg("storage_offset");
  const bool static_offset =
      offset_arg == nullptr || offset_arg->is_none() || offset_arg->kind() == ir::ArgKind::Int;
  if (!ir::static_sizes(self->tensor_type(), &sizes) || !ir::static_int_list(node, "size", &size) ||
      !ir::static_int_list(node, "stride", &stride) || !static_offset) {
    return "as_strided with a symbolic input shape, size, stride or storage offset: Ember checks "
           "the elements it reads at compile time; export with static shapes";
  }
  const int64_t offset =
      offset_arg != nullptr && offset_arg->kind() == ir::ArgKind::Int ? offset_arg->as_int() : 0;
  if (size.size() != stride.size()) {
    return "as_strided's size and stride differ in length (" + std::to_string(size.size()) +
           " and " + std::to_string(stride.size()) + ")";
  }
  if (!ir::fills_storage(self)) {
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
  if (!ir::dense_strides(self->tensor_type(), &layout) ||
      !ir::dense_strides(contiguous, &row_major)) {
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
    return ir::Status::error(
        ir::node_error(*node, r->reason));  // a refusal (verify_lowerable's too)
  }
  if (r != nullptr && r->kernel == nullptr) return r->decompose(program, node);
  std::optional<KernelForm> form = direct_kernel_form(*node);
  if (!form) return ir::Status::error(ir::node_error(*node, lowering_gap(*node)));
  staticize_view_sizes(*node, &*form);
  ir::Node* k = add_kernel_node(*node->owner(), form->op + "." + form->overload,
                                std::move(form->args), output_types(*node), node->name(), node);
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < k->num_outputs(); ++i) outs.push_back(k->output(i));
  return replace_node(node, outs);
}

}  // namespace ember::ops
