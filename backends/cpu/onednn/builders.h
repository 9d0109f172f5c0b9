// The one table of the cpu engine's op families and fusions (builders.cc). Build::run calls
// build_ops_at for each op in turn.
//
//   EMBER_ASSIGN_OR_RETURN(size_t n, build_ops_at(b, i));  // ops i .. i + n - 1 built
//
// Adding an op family: its builder in a file of its own (`Error build_xxx(Build&, const OpDesc&)`,
// declared in families.h) and its line in builders.cc's table.
#pragma once

#include <cstddef>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/onednn/build.h"

namespace ember::cpu::delegate {

// Builds the ops from i: the first fusion that applies, else op i's family builder. The number
// of ops built (at least 1), or the error.
Result<size_t> build_ops_at(Build& b, size_t i);

}  // namespace ember::cpu::delegate
