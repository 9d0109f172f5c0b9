// The pipeline of `ember compile`: every step is a registered pass (or the delegation step), each
// pass runs after the passes it needs, and every registered pass runs.
#include "compiler/lower/pipeline.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compiler/passes/pass_registry.h"

namespace ember::lower {
namespace {

TEST(Pipeline, StepsAreRegisteredAndOrderedByTheirNeeds) {
  std::set<std::string> ran;
  for (std::string_view step : pipeline()) {
    SCOPED_TRACE(std::string(step));
    if (step == kDelegationStep) continue;
    const passes::PassInfo* pass = passes::find_pass(step);
    ASSERT_NE(pass, nullptr) << "not a registered pass";
    for (const std::string& need : passes::pass_needs(*pass)) {
      EXPECT_EQ(ran.count(need), 1u) << "runs before " << need << ", which it needs";
    }
    ran.insert(std::string(step));
  }
  for (const passes::PassInfo* pass : passes::registered_passes()) {
    EXPECT_EQ(ran.count(pass->name), 1u) << pass->name << " is registered but never runs";
  }
}

}  // namespace
}  // namespace ember::lower
