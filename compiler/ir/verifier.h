// The IR verifier: checks the invariants every pass must keep, and reports all violations at once.
//
//   Status s = verify(program);
//   if (!s.ok()) std::cerr << s.message();  // one line per problem, each naming node and op
//
// Checked: every operand is defined before its use in the same graph (subgraphs read only their
// own inputs), graph outputs are defined in their graph, arguments match the op's schema (names,
// order, count, number of results), subgraph references are in range, users lists match the
// uses, the signature is parallel to the graph's inputs and outputs, and every parameter, buffer
// and constant has a weight of its type. Unknown ops are not an error here: the support check
// that lists ops without kernels is a separate stage.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::ir {

Status verify(const Program& program);

}  // namespace ember::ir
