#include "tools/executorch_ops.h"

#include <algorithm>
#include <iterator>

namespace ember::tools {
namespace {

// The op manifest's ExecuTorch sections (ops/manifest.json, compiled in as op_manifest.inc; its
// kernel and prim lines are not read here).
#define EMBER_MANIFEST_OP(name, signature)
#define EMBER_MANIFEST_PRIM(name, signature)
#define EMBER_MANIFEST_EXECUTORCH_OP(name) std::string_view(name),
constexpr std::string_view kOperators[] = {
#include "compiler/ops/op_manifest.inc"
};
#undef EMBER_MANIFEST_EXECUTORCH_OP
#define EMBER_MANIFEST_EXECUTORCH_BACKEND(id) std::string_view(id),
constexpr std::string_view kBackends[] = {
#include "compiler/ops/op_manifest.inc"
};
#undef EMBER_MANIFEST_EXECUTORCH_BACKEND
#define EMBER_MANIFEST_EXECUTORCH_VERSION(v) v
constexpr const char* kVersion =
#include "compiler/ops/op_manifest.inc"
    ;
#undef EMBER_MANIFEST_EXECUTORCH_VERSION
#undef EMBER_MANIFEST_PRIM
#undef EMBER_MANIFEST_OP

// The generator writes the names sorted.
static_assert(std::is_sorted(std::begin(kOperators), std::end(kOperators)));

}  // namespace

const char* executorch_version() { return kVersion; }

bool executorch_registers_operator(std::string_view name) {
  return std::binary_search(std::begin(kOperators), std::end(kOperators), name);
}

bool executorch_registers_backend(std::string_view id) {
  return std::find(std::begin(kBackends), std::end(kBackends), id) != std::end(kBackends);
}

}  // namespace ember::tools
