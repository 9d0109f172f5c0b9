// dedupe_constants: weight inputs of one type and identical bytes become one input; readers of the
// later ones read the first. Contract C3: nothing is freed here. A merged input loses its uses and
// dead-code elimination drops it, while the surviving input keeps the shared storage alive (weights
// hold their bytes through shared_ptr), so every name still referenced has its data. Written
// tensors are never merged: they are distinct state.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_set>

#include "compiler/ir/graph_util.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

ir::Status dedupe_constants(ir::Program& program, PassContext& ctx) {
  const std::unordered_set<const ir::Value*> written = ir::written_tensors(program);
  ir::Graph& g = program.graph();
  // (type, hash of bytes) → inputs seen with it; bytes are compared in full on a hash match.
  std::map<std::pair<std::string, size_t>, std::vector<ir::Value*>> seen;
  size_t merged = 0;
  uint64_t saved = 0;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::InputSpec& spec = program.input_spec(i);
    ir::Value* v = g.inputs()[i];
    if (spec.kind == ir::InputKind::UserInput || written.count(v) != 0 || !v->has_uses()) continue;
    const ir::Weight* w = program.find_weight(spec.target);
    if (w == nullptr || !w->has_data()) continue;
    std::span<const uint8_t> b = w->bytes();
    const std::string_view view(reinterpret_cast<const char*>(b.data()), b.size());
    std::vector<ir::Value*>& candidates =
        seen[{ir::to_string(v->type()), std::hash<std::string_view>()(view)}];
    ir::Value* same = nullptr;
    for (ir::Value* c : candidates) {
      std::span<const uint8_t> cb =
          program.find_weight(program.input_spec(c->output_index()).target)->bytes();
      if (cb.size() == b.size() && std::equal(cb.begin(), cb.end(), b.begin())) same = c;
    }
    if (same == nullptr) {
      candidates.push_back(v);
      continue;
    }
    v->replace_all_uses_with(same);
    ctx.details.push_back("dedupe: " + spec.target + " has the bytes of " +
                          program.input_spec(same->output_index()).target);
    ++merged;
    saved += b.size();
  }
  if (merged > 0) {
    ctx.notes.push_back(
        "dedupe: " + std::to_string(merged) + " weight" + (merged == 1 ? " has" : "s have") +
        " the bytes of another and share its storage (" + std::to_string(saved) + " bytes saved)");
  }
  return {};
}

EMBER_PASS(
    dedupe_constants, dedupe_constants, "",
    "weights with identical type and bytes share one graph input; every FQN keeps its data (C3)");

}  // namespace ember::passes
