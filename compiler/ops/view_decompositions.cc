// The decompositions of view ops and of the functional forms of writes through views: copy,
// select_scatter and slice_scatter (what functionalize leaves for `x[i] = y`), flatten, squeeze.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/op_decompositions.h"
#include "compiler/ops/op_table.h"
#include "compiler/ops/rewrite_util.h"

namespace ember::ops {

namespace {

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
  ir::Weight w;
  w.name = "_scatter_index_" + base;
  w.type = type;
  w.storage = bytes;
  w.nbytes = bytes->size();
  return add_constant(program, std::move(w));
}

ir::Status scatter_into(ir::Program& program, ir::Node* node, int64_t dim, int64_t start,
                        int64_t step, bool unsqueeze) {
  ir::Value* self = input_value(*node, "self");
  ir::Value* src = input_value(*node, "src");
  std::vector<int64_t> shape;
  if (self == nullptr || src == nullptr || !ir::static_sizes(src->tensor_type(), &shape)) {
    return ir::Status::error(ir::node_error(*node, "a write through a view needs static shapes"));
  }
  const int64_t rank = static_cast<int64_t>(self->tensor_type().rank());
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return ir::Status::error(ir::node_error(*node, "dim out of range"));
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

}  // namespace

ir::Status lower_copy(ir::Program&, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  ir::Value* src = input_value(*node, "src");
  if (self == nullptr || src == nullptr) {
    return ir::Status::error(ir::node_error(*node, "copy needs two tensors"));
  }
  ir::Graph& g = *node->owner();
  const ir::TensorType& dst = self->tensor_type();
  ir::Value* cur = src;
  if (src->tensor_type().shape != dst.shape) {
    std::vector<ir::Arg> size;
    for (const ir::Dim& d : dst.shape) {
      if (!d.is_static()) {
        return ir::Status::error(ir::node_error(*node, "a broadcasting copy into a dynamic shape"));
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

ir::Status lower_select_scatter(ir::Program& program, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr) return ir::Status::error(ir::node_error(*node, "needs a tensor"));
  const int64_t rank = static_cast<int64_t>(self->tensor_type().rank());
  int64_t dim = int_arg(*node, "dim", 0);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank || !self->tensor_type().shape[dim].is_static()) {
    return ir::Status::error(ir::node_error(*node, "select_scatter on a dynamic or invalid dim"));
  }
  int64_t index = int_arg(*node, "index", 0);
  if (index < 0) index += self->tensor_type().shape[dim].value;
  return scatter_into(program, node, dim, index, 1, /*unsqueeze=*/true);
}

ir::Status lower_slice_scatter(ir::Program& program, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr) return ir::Status::error(ir::node_error(*node, "needs a tensor"));
  const int64_t rank = static_cast<int64_t>(self->tensor_type().rank());
  int64_t dim = int_arg(*node, "dim", 0);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank || !self->tensor_type().shape[dim].is_static()) {
    return ir::Status::error(ir::node_error(*node, "slice_scatter on a dynamic or invalid dim"));
  }
  const int64_t size = self->tensor_type().shape[dim].value;
  const ir::Arg* start_arg = node->arg("start");
  if (start_arg != nullptr && start_arg->kind() == ir::ArgKind::Value) {
    return ir::Status::error(
        ir::node_error(*node, "a write through a slice with a symbolic start"));
  }
  int64_t start = int_arg(*node, "start", 0);
  if (start < 0) start += size;
  start = std::max<int64_t>(0, std::min(start, size));
  return scatter_into(program, node, dim, start, int_arg(*node, "step", 1), /*unsqueeze=*/false);
}

// flatten is a view: the same elements in the output's shape (at most one symbolic size, -1).
ir::Status lower_flatten(ir::Program&, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr || node->num_outputs() != 1) {
    return ir::Status::error(ir::node_error(*node, "flatten needs a tensor"));
  }
  std::vector<ir::Arg> size;
  int symbolic = 0;
  for (const ir::Dim& d : node->output()->tensor_type().shape) {
    symbolic += d.is_static() ? 0 : 1;
    size.push_back(ir::Arg::integer(d.is_static() ? d.value : -1));
  }
  if (symbolic > 1) {
    return ir::Status::error(ir::node_error(*node, "flatten to a shape with two symbolic sizes"));
  }
  ir::Node* k = add_kernel_node(*node->owner(), "aten::view_copy.out",
                                {{"self", ir::Arg::value(self)}, {"size", ir::Arg::list(size)}},
                                output_types(*node), node->name(), node);
  return replace_node(node, {k->output()});
}

// ATen's squeeze() drops every size-1 dim. ExecuTorch registers only squeeze_copy's dim-list
// overload: with a static shape the dims are known here, so the kernel is one both runtimes have.
// A symbolic dim (which may be 1 at run time) keeps squeeze_copy.out, which decides at run time.
ir::Status lower_squeeze(ir::Program&, ir::Node* node) {
  ir::Value* self = input_value(*node, "self");
  if (self == nullptr) return ir::Status::error(ir::node_error(*node, "squeeze needs a tensor"));
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

}  // namespace ember::ops
