// fold_constants: a node whose tensor inputs are all unwritten weights is computed now, with the
// portable kernel the lowering table names, and replaced by a new constant weight.
//
// Contract C1: the set of written tensors is computed first, over every graph (in-place writes
// through any chain of views, writes inside subgraphs, and the signature's mutated lists). A node
// reading a written tensor, or a view of one, is never folded, nor is a node whose result is
// written later (C20), and no in-place op is ever run on stored weights. Contract C2: folded
// constants get the node's static shape, contiguous.
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/graph_util.h"
#include "compiler/ops/kernel_eval.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

namespace {

// Nodes without tensor inputs (full, arange...) are folded only when small: a large constant
// costs file size and load time, the kernel costs little.
constexpr size_t kMaxSourceFold = 4096;

}  // namespace

ir::Status fold_constants(ir::Program& program, PassContext& ctx) {
  const std::unordered_set<const ir::Value*> written = ir::written_tensors(program);
  ir::Graph& g = program.graph();
  std::unordered_map<const ir::Value*, std::string> fqn_of;  // foldable weight inputs
  std::unordered_map<const ir::Value*, ops::Bytes> data;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::InputSpec& spec = program.input_spec(i);
    ir::Value* v = g.inputs()[i];
    if (spec.kind == ir::InputKind::UserInput || written.count(v) != 0 || !v->is_tensor()) continue;
    const ir::Weight* w = program.find_weight(spec.target);
    if (w == nullptr || !w->has_data() || !v->tensor_type().is_static()) continue;
    fqn_of[v] = spec.target;
  }
  auto constant_bytes = [&](ir::Value* v) -> const ops::Bytes* {
    auto it = data.find(v);
    if (it != data.end()) return &it->second;
    auto f = fqn_of.find(v);
    if (f == fqn_of.end()) return nullptr;
    const ir::Weight* w = program.find_weight(f->second);
    std::span<const uint8_t> b = w->bytes();
    return &(data[v] = ops::Bytes(b.begin(), b.end()));
  };

  std::vector<ir::Node*> nodes;
  for (ir::Node* n : g.nodes()) nodes.push_back(n);
  for (ir::Node* n : nodes) {
    if (n->num_subgraphs() > 0 || !mutated_arguments(*n).empty() || n->num_outputs() == 0) continue;
    // A dequantized weight stays quantized until the backends have seen it: a backend sees the
    // quantization it can compute in integers (C33). After that, the dequantizes that ExecuTorch's
    // runtime computes too (per tensor, per channel: PT2E's weights) stay, so the program keeps
    // int8 bytes (a quarter of float32's); one by groups (torchao's weights, which no kernel of
    // ExecuTorch's computes) becomes a float32 weight, which any runtime reads at full speed.
    if (n->qualified_op().rfind("quantized_decomposed::dequantize_per_", 0) == 0 &&
        (!ctx.delegated ||
         n->qualified_op().rfind("quantized_decomposed::dequantize_per_channel_group", 0) != 0)) {
      continue;
    }
    if (ops::is_prim_op(n->qualified_op())) continue;
    // A result that is written later (the clone of a constant, then `y[0:2] = x`) is fresh
    // mutable storage, not a constant: folding it would make the write a write of a constant,
    // and the value returned would miss it (C20).
    bool written_result = false;
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      written_result = written_result || written.count(n->output(i)) != 0;
    }
    if (written_result) continue;
    bool foldable = true;
    size_t tensor_inputs = 0;
    std::string first_fqn;
    for (ir::Value* v : n->operands()) {
      if (written.count(ir::alias_root(v)) != 0 || fqn_of.count(v) == 0) {
        foldable = false;
        break;
      }
      ++tensor_inputs;
      if (first_fqn.empty()) first_fqn = fqn_of[v];
    }
    if (!foldable) continue;
    std::vector<ir::TensorType> out_types;
    size_t out_bytes = 0;
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const ir::ValueType& t = n->output(i)->type();
      std::optional<int64_t> numel = t.tensor.numel_upper_bound();
      if (t.kind != ir::ValueKind::Tensor || !t.tensor.is_static() || !numel) {
        foldable = false;
        break;
      }
      ir::TensorType dense = t.tensor;
      dense.dim_order.clear();
      out_bytes += static_cast<size_t>(*numel) * ir::dtype_size(dense.dtype);
      out_types.push_back(dense);
    }
    if (!foldable || (tensor_inputs == 0 && out_bytes > kMaxSourceFold)) continue;
    std::optional<ops::KernelForm> form = ops::direct_kernel_form(*n);
    if (!form) continue;
    ir::StatusOr<std::vector<ops::Bytes>> result =
        ops::eval_kernel(form->op + "." + form->overload, form->args, out_types, constant_bytes);
    if (!result.ok()) {
      ctx.notes.push_back("not folded: " + ir::node_error(*n, result.status().message()));
      continue;
    }
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      ir::Value* out = n->output(i);
      if (!out->has_uses()) continue;
      const std::string base =
          (first_fqn.empty() ? std::string("_const") : first_fqn) + "@" + out->name();
      const std::string fqn = g.unique_name(base);
      auto storage = std::make_shared<const ops::Bytes>(std::move((*result)[i]));
      ir::Weight w;
      w.name = fqn;
      w.type = out_types[i];
      w.storage = storage;
      w.nbytes = storage->size();
      program.weights.push_back(w);
      ir::Value* c = program.add_input(g.unique_name("c_" + out->name()),
                                       ir::ValueType::of_tensor(out_types[i]),
                                       ir::InputSpec{ir::InputKind::Constant, fqn, {}, true});
      out->replace_all_uses_with(c);
      fqn_of[c] = fqn;
      data[c] = *storage;
    }
    if (g.erase_node(n).ok()) ++ctx.folded_nodes;
  }
  return {};
}

EMBER_PASS(
    fold_constants, fold_constants, "",
    "a node whose tensor inputs are all unwritten weights is replaced by a constant weight "
    "computed with the portable kernels; nothing written in place, no view of it, and no clone "
    "that is then written is folded (C1, C20); folded constants have static shapes (C2)");

}  // namespace ember::passes
