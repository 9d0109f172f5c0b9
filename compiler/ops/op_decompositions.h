// Decompositions of functional ops into several kernel calls (or into one kernel with arguments
// computed here), each named by a kRules line in op_table.cc:
//
//   {"aten::mv.default", nullptr, nullptr, lower_mv, nullptr},   // a kRules line (op_table.cc)
//
// Each replaces `node` with kernel calls inserted before it, or returns an error naming the node.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::ops {

// op_decompositions.cc: ops torch.export's default (training) IR keeps and its core-ATen
// decompositions would have split (a .pt2 saved without run_decompositions); each computes what
// PyTorch's own decomposition computes.
//
// addcmul(self, t1, t2, value) = self + (value * t1) * t2; addcdiv: self + (value * t1) / t2.
ir::Status lower_addcmul(ir::Program& program, ir::Node* node);
ir::Status lower_addcdiv(ir::Program& program, ir::Node* node);
// eye(n[, m]): a constant of the output's dtype, ones on the diagonal.
ir::Status lower_eye(ir::Program& program, ir::Node* node);
// fill.Tensor(self, value): value (0-dim) expanded to self's shape, cast to self's dtype.
ir::Status lower_fill_tensor(ir::Program& program, ir::Node* node);
// mv(self[n, m], vec[m]) = mm(self, vec viewed [m, 1]) viewed [n].
ir::Status lower_mv(ir::Program& program, ir::Node* node);
// matmul(self[n, k], other[k, m]) = mm(self, other); other ranks are refused naming the node
// (core ATen's decomposition, run_decompositions, covers them).
ir::Status lower_matmul(ir::Program& program, ir::Node* node);
// linalg_vector_norm(self, ord, dim, keepdim) and norm.ScalarOpt_dim(self, p, dim, keepdim):
// sum(|x|^ord)^(1/ord); ord 0: count of non-zeros; +-inf: amax / amin of |x|.
ir::Status lower_vector_norm(ir::Program& program, ir::Node* node);

// nn_decompositions.cc: layers.
//
// linear(input[n, k], weight[m, k], bias) = addmm(bias, input, weight^T), or mm without a bias.
ir::Status lower_linear(ir::Program& program, ir::Node* node);
// embedding(weight, indices): aten::embedding.out; of a weight dequantized by groups from stored
// 8-bit values (4-bit: -8..7), the quantized gather embedding_byte / embedding_4bit instead.
ir::Status lower_embedding(ir::Program& program, ir::Node* node);
// celu(x, alpha) = elu(x, alpha, scale=1, input_scale=1/alpha), as ATen computes it.
ir::Status lower_celu(ir::Program& program, ir::Node* node);
// native_batch_norm and batch_norm in inference: _native_batch_norm_legit_no_training; in
// training mode refused (export the model in eval()).
ir::Status lower_batch_norm(ir::Program& program, ir::Node* node);
ir::Status lower_batch_norm_inference(ir::Program& program, ir::Node* node);
// max_pool2d = max_pool2d_with_indices, its indices unused.
ir::Status lower_max_pool2d(ir::Program& program, ir::Node* node);

// view_decompositions.cc: views and writes through them.
//
// copy(self, src): src expanded to self's shape and cast to self's dtype.
ir::Status lower_copy(ir::Program& program, ir::Node* node);
// select_scatter and slice_scatter: a scatter of src into self along dim, with a constant index.
ir::Status lower_select_scatter(ir::Program& program, ir::Node* node);
ir::Status lower_slice_scatter(ir::Program& program, ir::Node* node);
// flatten: view_copy to the output's shape (at most one symbolic size).
ir::Status lower_flatten(ir::Program& program, ir::Node* node);
// squeeze(): squeeze_copy.dims_out of the size-1 dims when the shape is static.
ir::Status lower_squeeze(ir::Program& program, ir::Node* node);

}  // namespace ember::ops
