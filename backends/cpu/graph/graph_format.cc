// The small functions of graph_format.h besides serialize (graph_serialize.cc) and parse
// (graph_parse.cc, its parameter checks in graph_verify.cc).
#include "backends/cpu/graph/graph_format.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "backends/cpu/graph/graph_format_internal.h"

namespace ember::cpu {

void params_mismatch(OpKind kind, const char* want) {
  std::fprintf(stderr, "ember cpu backend: an op of kind %u has no %s\n",
               static_cast<unsigned>(kind), want);
  std::abort();
}

int64_t checked_numel(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > internal::kMaxNumel) return -1;
    if (d != 0 && n > internal::kMaxNumel / d) return -1;
    n *= d;
  }
  return n;
}

CpuGraph with_batch_sizes(const CpuGraph& graph, std::span<const int64_t> values) {
  CpuGraph g = graph;
  for (TensorDesc& t : g.tensors) {
    if (t.batch_symbol >= 0) t.dims[0] = values[static_cast<size_t>(t.batch_symbol)];
  }
  return g;
}

}  // namespace ember::cpu
