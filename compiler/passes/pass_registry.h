// The passes, each registered in its own file: a pass file names itself with EMBER_PASS, and the
// build collects those lines into a generated table (gen_pass_table.cmake), so the registry is
// explicit code with no static initializer (architecture rule 5).
//
//   EMBER_PASS(dead_code, eliminate_dead_code, "", "no node whose outputs are unused remains");
//   const PassInfo* p = find_pass("dead_code");
//   EMBER_IR_RETURN_IF_ERROR(p->run(program, ctx));
//
// A new pass is its file (with its EMBER_PASS line), its golden tests in testdata/<name>/, and
// its name in the pipeline (compiler/lower/pipeline.cc).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/passes/passes.h"

namespace ember::passes {

using PassFn = ir::Status (*)(ir::Program& program, PassContext& ctx);

struct PassInfo {
  const char* name;        // "dead_code": also the golden tests' directory, testdata/dead_code/
  PassFn run;              //
  const char* needs;       // passes that must have run before it, comma-separated; "": any IR
  const char* guarantees;  // what holds in every graph after it
};

// Defines the pass's PassInfo; placed in the pass's own file, at namespace ember::passes scope.
#define EMBER_PASS(name, function, needs, guarantees)                \
  const PassInfo& pass_info_##name() {                               \
    static const PassInfo info{#name, &function, needs, guarantees}; \
    return info;                                                     \
  }                                                                  \
  static_assert(sizeof(needs) > 0 && sizeof(guarantees) > 1, "say what holds")

// Every registered pass, by name.
std::span<const PassInfo* const> registered_passes();
// The pass named `name`, or null.
const PassInfo* find_pass(std::string_view name);
// `info.needs` as a list of names.
std::vector<std::string> pass_needs(const PassInfo& info);

}  // namespace ember::passes
