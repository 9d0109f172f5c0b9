// The op manifest (ops/manifest.json, compiled in as op_manifest.inc) lists exactly the kernels
// and prim ops the runtime registers, with the same signatures: the compiler reads the manifest,
// so a kernel added without regenerating it would be invisible to the compiler.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "compiler/ops/op_table.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/cortex_m.h"
#include "runtime/kernels/llm/llm.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/kernels/prim/prim_ops.h"

namespace ember {
namespace {

constexpr const char* kRegenerate =
    "\nThe op manifest is stale: run .venv/bin/python tools/gen_op_manifest.py";

struct Entry {
  std::string signature;  // "" for a null signature
  bool prim = false;
};

std::map<std::string, Entry> manifest() {
  std::map<std::string, Entry> ops;
#define EMBER_MANIFEST_OP(name, signature) \
  ops[name] = {signature == nullptr ? "" : signature, false};
#define EMBER_MANIFEST_PRIM(name, signature) \
  ops[name] = {signature == nullptr ? "" : signature, true};
#include "compiler/ops/op_manifest.inc"
#undef EMBER_MANIFEST_PRIM
#undef EMBER_MANIFEST_OP
  return ops;
}

std::map<std::string, Entry> runtime_tables() {
  std::map<std::string, Entry> ops;
  for (const Kernel& k : portable_kernels()) {
    ops[k.name] = {k.signature == nullptr ? "" : k.signature, false};
  }
  for (const Kernel& k : cortex_m_kernels()) {
    ops[k.name] = {k.signature == nullptr ? "" : k.signature, false};
  }
  for (const Kernel& k : llm_kernels()) {
    ops[k.name] = {k.signature == nullptr ? "" : k.signature, false};
  }
  for (const Kernel& k : prim_kernels()) {
    ops[k.name] = {k.signature == nullptr ? "" : k.signature, true};
  }
  return ops;
}

TEST(OpManifest, ListsExactlyTheRuntimeKernelsAndPrimOps) {
  const std::map<std::string, Entry> listed = manifest();
  const std::map<std::string, Entry> runtime = runtime_tables();
  for (const auto& [name, entry] : runtime) {
    auto it = listed.find(name);
    if (it == listed.end()) {
      ADD_FAILURE() << name << " is registered by the runtime but not in the manifest"
                    << kRegenerate;
      continue;
    }
    EXPECT_EQ(it->second.signature, entry.signature) << name << kRegenerate;
    EXPECT_EQ(it->second.prim, entry.prim) << name << " (kernel or prim)" << kRegenerate;
  }
  for (const auto& [name, entry] : listed) {
    EXPECT_TRUE(runtime.count(name) == 1)
        << name << " is in the manifest but the runtime does not register it" << kRegenerate;
  }
}

TEST(OpManifest, MatchesTheRegistryAfterRegistration) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_cortex_m_kernels(), Error::Ok);
  ASSERT_EQ(register_llm_kernels(), Error::Ok);
  const std::map<std::string, Entry> listed = manifest();
  size_t registered = 0;
  for (const Kernel* k : registered_kernels()) {
    ++registered;
    EXPECT_TRUE(listed.count(k->name) == 1) << k->name << kRegenerate;
  }
  EXPECT_EQ(registered, listed.size()) << kRegenerate;
}

TEST(OpManifest, CompilerLooksUpTheManifest) {
  for (const auto& [name, entry] : manifest()) {
    EXPECT_TRUE(ops::kernel_exists(name)) << name;
    const char* sig = ops::kernel_signature(name);
    EXPECT_EQ(sig == nullptr ? std::string() : std::string(sig), entry.signature) << name;
  }
  EXPECT_FALSE(ops::kernel_exists("aten::no_such_op.out"));
  EXPECT_EQ(ops::kernel_signature("aten::no_such_op.out"), nullptr);
}

// The compiler's prim ops are the manifest's (kind prim), which are the runtime's prim table: a
// prim op added to prim_ops.cc reaches the compiler by regenerating the manifest, and nothing else.
TEST(OpManifest, PrimOpsAreTheRuntimePrimTable) {
  std::set<std::string> compiler;
  for (std::string_view op : ops::prim_ops()) compiler.insert(std::string(op));
  std::set<std::string> runtime;
  for (const Kernel& k : prim_kernels()) runtime.insert(k.name);
  EXPECT_EQ(compiler, runtime) << kRegenerate;
  // The graph names the runtime name: a `default` overload is dropped (docs/pte-format.md §4.8).
  EXPECT_TRUE(ops::is_prim_op("aten::sym_numel.default"));
  EXPECT_TRUE(ops::is_prim_op("aten::sym_size.int"));
  EXPECT_TRUE(ops::is_prim_op("executorch_prim::floordiv.int"));
  EXPECT_FALSE(ops::is_prim_op("aten::sym_size.default"));
  EXPECT_FALSE(ops::is_prim_op("aten::add.out"));
  EXPECT_FALSE(ops::is_prim_op("sym::add.default"));  // lowered by a rule, not a prim itself
}

}  // namespace
}  // namespace ember
