#include "compiler/passes/pass_registry.h"

namespace ember::passes {

// registered_passes.inc is generated from the EMBER_PASS lines of this directory's files.
#define EMBER_REGISTERED_PASS(name) const PassInfo& pass_info_##name();
#include "registered_passes.inc"
#undef EMBER_REGISTERED_PASS

std::span<const PassInfo* const> registered_passes() {
#define EMBER_REGISTERED_PASS(name) &pass_info_##name(),
  static const PassInfo* const table[] = {
#include "registered_passes.inc"
  };
#undef EMBER_REGISTERED_PASS
  return table;
}

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo* p : registered_passes()) {
    if (name == p->name) return p;
  }
  return nullptr;
}

std::vector<std::string> pass_needs(const PassInfo& info) {
  std::vector<std::string> out;
  std::string_view rest = info.needs;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace ember::passes
