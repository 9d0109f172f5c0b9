#include "compiler/ops/op_decompositions.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/rewrite_util.h"

namespace ember::ops {

namespace {

ir::Value* tensor_arg(const ir::Node& node, const char* name) {
  const ir::Arg* a = node.arg(name);
  return a != nullptr && a->kind() == ir::ArgKind::Value ? a->as_value() : nullptr;
}

ir::ValueType tensor_of(ir::DType dtype, std::vector<ir::Dim> shape) {
  return ir::ValueType::of_tensor(ir::TensorType{dtype, std::move(shape), {}});
}

bool is_float_dtype(ir::DType d) {
  return d == ir::DType::Float32 || d == ir::DType::Float16 || d == ir::DType::BFloat16 ||
         d == ir::DType::Float64;
}

ir::Status replace_with(ir::Node* node, ir::Value* with) {
  node->output(0)->replace_all_uses_with(with);
  return node->owner()->erase_node(node);
}

// A Scalar argument as an Arg (Int, Float or Bool), `fallback` when absent or None.
ir::Arg scalar_arg(const ir::Node& node, const char* name, ir::Arg fallback) {
  const ir::Arg* a = node.arg(name);
  if (a == nullptr || a->is_none()) return fallback;
  return *a;
}

ir::Status lower_add_product(ir::Node* node, const char* combine) {
  ir::Value* self = tensor_arg(*node, "self");
  ir::Value* t1 = tensor_arg(*node, "tensor1");
  ir::Value* t2 = tensor_arg(*node, "tensor2");
  if (self == nullptr || t1 == nullptr || t2 == nullptr || node->num_outputs() != 1 ||
      !node->output(0)->is_tensor()) {
    return ir::Status::error(ir::node_error(*node, "needs three tensors"));
  }
  const ir::Arg value = scalar_arg(*node, "value", ir::Arg::integer(1));
  if (value.kind() != ir::ArgKind::Int && value.kind() != ir::ArgKind::Float &&
      value.kind() != ir::ArgKind::Bool) {
    return ir::Status::error(ir::node_error(*node, "value must be a constant number"));
  }
  ir::Graph& g = *node->owner();
  const ir::TensorType& out = node->output(0)->tensor_type();
  // ATen computes the product in the result's dtype (the promoted one), as these steps do.
  const ir::TensorType& a = t1->tensor_type();
  ir::Value* scaled =
      add_kernel_node(g, "aten::mul.Scalar_out", {{"self", ir::Arg::value(t1)}, {"other", value}},
                      {tensor_of(out.dtype, a.shape)}, node->name() + "_scaled", node)
          ->output();
  // The broadcast shape of t1 and t2 is the output's unless self is the larger one: the kernels
  // resize to it, so give the intermediate the output's shape only when it is t1's or t2's.
  std::vector<ir::Dim> shape = out.shape;
  const ir::TensorType& b = t2->tensor_type();
  if (a.shape != out.shape && b.shape != out.shape) {
    return ir::Status::error(ir::node_error(*node,
                                            "self broadcasts over tensor1 and tensor2; "
                                            "only their own broadcast shape is lowered"));
  }
  ir::Value* combined =
      add_kernel_node(g, combine, {{"self", ir::Arg::value(scaled)}, {"other", ir::Arg::value(t2)}},
                      {tensor_of(out.dtype, shape)}, node->name() + "_t", node)
          ->output();
  ir::Node* sum = add_kernel_node(g, "aten::add.out",
                                  {{"self", ir::Arg::value(self)},
                                   {"other", ir::Arg::value(combined)},
                                   {"alpha", ir::Arg::integer(1)}},
                                  {node->output(0)->type()}, node->name(), node);
  return replace_with(node, sum->output());
}

void put_one(ir::DType dtype, uint8_t* at) {
  switch (dtype) {
    case ir::DType::Float32: {
      const float one = 1.0f;
      std::memcpy(at, &one, 4);
      return;
    }
    case ir::DType::Float64: {
      const double one = 1.0;
      std::memcpy(at, &one, 8);
      return;
    }
    case ir::DType::Float16:
      at[0] = 0x00;
      at[1] = 0x3C;
      return;
    case ir::DType::BFloat16:
      at[0] = 0x80;
      at[1] = 0x3F;
      return;
    default:
      at[0] = 1;  // integers (little-endian) and bool
      return;
  }
}

}  // namespace

ir::Status lower_addcmul(ir::Program&, ir::Node* node) {
  return lower_add_product(node, "aten::mul.out");
}

ir::Status lower_addcdiv(ir::Program&, ir::Node* node) {
  const ir::Value* t1 = tensor_arg(*node, "tensor1");
  const ir::Value* t2 = tensor_arg(*node, "tensor2");
  if (t1 != nullptr && t2 != nullptr && !is_float_dtype(t1->tensor_type().dtype) &&
      !is_float_dtype(t2->tensor_type().dtype)) {
    return ir::Status::error(
        ir::node_error(*node, "integer division with addcdiv is not supported (ATen refuses it)"));
  }
  return lower_add_product(node, "aten::div.out");
}

ir::Status lower_eye(ir::Program& program, ir::Node* node) {
  std::vector<int64_t> shape;
  if (node->num_outputs() != 1 || !node->output(0)->is_tensor() ||
      !ir::static_sizes(node->output(0)->tensor_type(), &shape) || shape.size() != 2) {
    return ir::Status::error(ir::node_error(*node, "eye needs static sizes"));
  }
  const ir::DType dtype = node->output(0)->tensor_type().dtype;
  if (dtype == ir::DType::Complex64 || dtype == ir::DType::Complex128) {
    return ir::Status::error(ir::node_error(*node, "eye of a complex dtype"));
  }
  const size_t size = ir::dtype_size(dtype);
  auto bytes = std::make_shared<std::vector<uint8_t>>(
      static_cast<size_t>(shape[0] * shape[1]) * size, uint8_t{0});
  for (int64_t i = 0; i < std::min(shape[0], shape[1]); ++i) {
    put_one(dtype, bytes->data() + static_cast<size_t>(i * shape[1] + i) * size);
  }
  ir::Weight w;
  w.name = "_eye_" + node->name();
  w.type = node->output(0)->tensor_type();
  w.storage = bytes;
  w.nbytes = bytes->size();
  return replace_with(node, add_constant(program, std::move(w)));
}

ir::Status lower_fill_tensor(ir::Program&, ir::Node* node) {
  ir::Value* self = tensor_arg(*node, "self");
  ir::Value* value = tensor_arg(*node, "value");
  std::vector<int64_t> shape;
  if (self == nullptr || value == nullptr || value->tensor_type().rank() != 0) {
    return ir::Status::error(
        ir::node_error(*node, "fill_ only supports 0-dimension value tensor (as ATen)"));
  }
  if (!ir::static_sizes(self->tensor_type(), &shape)) {
    return ir::Status::error(
        ir::node_error(*node, "fill with a tensor value into a dynamic shape"));
  }
  std::vector<ir::Arg> size;
  for (int64_t s : shape) size.push_back(ir::Arg::integer(s));
  ir::Graph& g = *node->owner();
  const ir::TensorType& dst = self->tensor_type();
  ir::Value* expanded =
      add_kernel_node(g, "aten::expand_copy.out",
                      {{"self", ir::Arg::value(value)},
                       {"size", ir::Arg::list(size)},
                       {"implicit", ir::Arg::boolean(false)}},
                      {tensor_of(value->tensor_type().dtype, dst.shape)}, node->name() + "_e", node)
          ->output();
  ir::Node* k = add_kernel_node(g, "aten::_to_copy.out",
                                {{"self", ir::Arg::value(expanded)},
                                 {"non_blocking", ir::Arg::boolean(false)},
                                 {"memory_format", ir::Arg::none()}},
                                {node->output(0)->type()}, node->name(), node);
  return replace_with(node, k->output());
}

ir::Status lower_matmul(ir::Program&, ir::Node* node) {
  ir::Value* self = tensor_arg(*node, "self");
  ir::Value* other = tensor_arg(*node, "other");
  if (self == nullptr || other == nullptr || self->tensor_type().rank() != 2 ||
      other->tensor_type().rank() != 2) {
    return ir::Status::error(
        ir::node_error(*node,
                       "matmul is lowered for two matrices only; save the program after "
                       "`ep = ep.run_decompositions()` for other ranks"));
  }
  ir::Node* k = add_kernel_node(*node->owner(), "aten::mm.out",
                                {{"self", ir::Arg::value(self)}, {"mat2", ir::Arg::value(other)}},
                                {node->output(0)->type()}, node->name(), node);
  return replace_with(node, k->output());
}

ir::Status lower_mv(ir::Program&, ir::Node* node) {
  ir::Value* self = tensor_arg(*node, "self");
  ir::Value* vec = tensor_arg(*node, "vec");
  if (self == nullptr || vec == nullptr || self->tensor_type().rank() != 2 ||
      vec->tensor_type().rank() != 1) {
    return ir::Status::error(ir::node_error(*node, "mv needs a matrix and a vector"));
  }
  const ir::Dim n = self->tensor_type().shape[0];
  const ir::Dim m = vec->tensor_type().shape[0];
  if (!n.is_static() || !m.is_static()) {
    return ir::Status::error(ir::node_error(*node, "mv is lowered for static shapes only"));
  }
  ir::Graph& g = *node->owner();
  const ir::DType dtype = node->output(0)->tensor_type().dtype;
  ir::Value* column =
      add_kernel_node(g, "aten::view_copy.out",
                      {{"self", ir::Arg::value(vec)},
                       {"size", ir::Arg::list({ir::Arg::integer(m.value), ir::Arg::integer(1)})}},
                      {tensor_of(vec->tensor_type().dtype, {m, ir::Dim(1)})}, node->name() + "_col",
                      node)
          ->output();
  ir::Value* product =
      add_kernel_node(g, "aten::mm.out",
                      {{"self", ir::Arg::value(self)}, {"mat2", ir::Arg::value(column)}},
                      {tensor_of(dtype, {n, ir::Dim(1)})}, node->name() + "_mm", node)
          ->output();
  ir::Node* k = add_kernel_node(
      g, "aten::view_copy.out",
      {{"self", ir::Arg::value(product)}, {"size", ir::Arg::list({ir::Arg::integer(n.value)})}},
      {node->output(0)->type()}, node->name(), node);
  return replace_with(node, k->output());
}

ir::Status lower_vector_norm(ir::Program&, ir::Node* node) {
  ir::Value* self = tensor_arg(*node, "self");
  if (self == nullptr || node->num_outputs() != 1 || !node->output(0)->is_tensor()) {
    return ir::Status::error(ir::node_error(*node, "needs a tensor"));
  }
  const ir::Arg* dtype_arg = node->arg("dtype");
  if (dtype_arg != nullptr && !dtype_arg->is_none()) {
    return ir::Status::error(ir::node_error(*node, "a norm with a dtype argument is not lowered"));
  }
  const ir::TensorType& in = self->tensor_type();
  const ir::TensorType& out = node->output(0)->tensor_type();
  if (!is_float_dtype(in.dtype) || in.dtype != out.dtype) {
    return ir::Status::error(
        ir::node_error(*node, "a norm of a non-floating tensor is not lowered"));
  }
  const char* ord_name = node->arg("ord") != nullptr ? "ord" : "p";
  const ir::Arg ord_arg = scalar_arg(*node, ord_name, ir::Arg::integer(2));
  double ord = 2;
  if (ord_arg.kind() == ir::ArgKind::Int) {
    ord = static_cast<double>(ord_arg.as_int());
  } else if (ord_arg.kind() == ir::ArgKind::Float) {
    ord = ord_arg.as_float();
  } else {
    return ir::Status::error(ir::node_error(*node, "the norm's order must be a constant number"));
  }
  const ir::Arg dim = scalar_arg(*node, "dim", ir::Arg::none());
  const ir::Arg keepdim = scalar_arg(*node, "keepdim", ir::Arg::boolean(false));
  // amax/amin take a dim list where None is not allowed: every dim.
  ir::Arg dims = dim;
  if (dims.is_none() || (dims.kind() == ir::ArgKind::List && dims.as_list().empty())) {
    std::vector<ir::Arg> all;
    for (size_t d = 0; d < in.rank(); ++d) all.push_back(ir::Arg::integer(static_cast<int64_t>(d)));
    dims = ir::Arg::list(std::move(all));
  }
  ir::Graph& g = *node->owner();
  const std::string base = node->name();
  auto cast = [&](ir::Value* x, ir::DType to, const std::string& name) {
    return add_kernel_node(g, "aten::_to_copy.out",
                           {{"self", ir::Arg::value(x)},
                            {"non_blocking", ir::Arg::boolean(false)},
                            {"memory_format", ir::Arg::none()}},
                           {tensor_of(to, x->tensor_type().shape)}, name, node);
  };
  // As PyTorch's decomposition, 16-bit floats compute in float32 and round once at the end.
  const bool widen = in.dtype == ir::DType::Float16 || in.dtype == ir::DType::BFloat16;
  const ir::DType compute = widen ? ir::DType::Float32 : in.dtype;
  if (widen) self = cast(self, compute, base + "_wide")->output();
  auto same = [&](const ir::TensorType& t) { return tensor_of(compute, t.shape); };
  auto abs_of = [&](ir::Value* x) {
    return add_kernel_node(g, "aten::abs.out", {{"self", ir::Arg::value(x)}},
                           {same(x->tensor_type())}, base + "_abs", node)
        ->output();
  };
  auto reduce = [&](const char* kernel, ir::Value* x) {
    std::vector<ir::NamedArg> args = {
        {"self", ir::Arg::value(x)}, {"dim", dims}, {"keepdim", keepdim}};
    if (std::strcmp(kernel, "aten::sum.IntList_out") == 0)
      args.push_back({"dtype", ir::Arg::none()});
    return add_kernel_node(g, kernel, std::move(args), {tensor_of(compute, out.shape)},
                           base + "_reduce", node);
  };
  ir::Node* last = nullptr;
  if (std::isinf(ord)) {
    last = reduce(ord > 0 ? "aten::amax.out" : "aten::amin.out", abs_of(self));
  } else if (ord == 0) {
    ir::Value* nonzero =
        add_kernel_node(g, "aten::ne.Scalar_out",
                        {{"self", ir::Arg::value(self)}, {"other", ir::Arg::integer(0)}},
                        {tensor_of(ir::DType::Bool, in.shape)}, base + "_nz", node)
            ->output();
    ir::Value* as_float = add_kernel_node(g, "aten::_to_copy.out",
                                          {{"self", ir::Arg::value(nonzero)},
                                           {"non_blocking", ir::Arg::boolean(false)},
                                           {"memory_format", ir::Arg::none()}},
                                          {same(in)}, base + "_f", node)
                              ->output();
    last = reduce("aten::sum.IntList_out", as_float);
  } else {
    // PyTorch's decomposition: |x| unless the order is even, x^ord, sum, then ^(1/ord).
    const bool even = std::fmod(ord, 2.0) == 0.0;
    ir::Value* x = even ? self : abs_of(self);
    if (ord != 1) {
      x = add_kernel_node(g, "aten::pow.Tensor_Scalar_out",
                          {{"self", ir::Arg::value(x)}, {"exponent", ord_arg}}, {same(in)},
                          base + "_pow", node)
              ->output();
    }
    last = reduce("aten::sum.IntList_out", x);
    if (ord != 1) {
      last = add_kernel_node(
          g, "aten::pow.Tensor_Scalar_out",
          {{"self", ir::Arg::value(last->output())}, {"exponent", ir::Arg::floating(1.0 / ord)}},
          {node->output(0)->type()}, base, node);
    }
  }
  return replace_with(node, last->output());
}

}  // namespace ember::ops
