#include "tools/executorch_ops.h"

#include <algorithm>
#include <iterator>

namespace ember::tools {
namespace {

#define EMBER_EXECUTORCH_VERSION(v)
#define EMBER_EXECUTORCH_OP(name) std::string_view(name),
#define EMBER_EXECUTORCH_BACKEND(name)
constexpr std::string_view kOperators[] = {
#include "tools/executorch_ops.inc"
};
#undef EMBER_EXECUTORCH_OP
#undef EMBER_EXECUTORCH_BACKEND
#define EMBER_EXECUTORCH_OP(name)
#define EMBER_EXECUTORCH_BACKEND(name) std::string_view(name),
constexpr std::string_view kBackends[] = {
#include "tools/executorch_ops.inc"
};
#undef EMBER_EXECUTORCH_VERSION
#undef EMBER_EXECUTORCH_OP
#undef EMBER_EXECUTORCH_BACKEND
#define EMBER_EXECUTORCH_VERSION(v) v
#define EMBER_EXECUTORCH_OP(name)
#define EMBER_EXECUTORCH_BACKEND(name)
constexpr const char* kVersion =
#include "tools/executorch_ops.inc"
    ;
#undef EMBER_EXECUTORCH_VERSION
#undef EMBER_EXECUTORCH_OP
#undef EMBER_EXECUTORCH_BACKEND

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
