// Decompositions of functional ops into several kernel calls, for the ops torch.export's default
// (training) IR keeps and its core-ATen decompositions would have split (a .pt2 saved without
// run_decompositions): each computes what PyTorch's own decomposition computes.
//
//   {"aten::mv.default", nullptr, nullptr, lower_mv, nullptr},   // a kRules line (op_table.cc)
//
// Each replaces `node` with kernel calls inserted before it, or returns an error naming the node.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::passes {

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

}  // namespace ember::passes
