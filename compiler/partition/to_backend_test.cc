// Lowering partitions into delegate calls, on IR text (contracts C16, C17, C19, C20).
#include "compiler/partition/to_backend.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"
#include "runtime/kernels/portable/portable.h"

namespace ember::partition {
namespace {

using ir::DType;

std::unique_ptr<ir::Program> parse(const std::string& text) {
  ir::StatusOr<std::unique_ptr<ir::Program>> p = ir::parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? std::move(*p) : nullptr;
}

// A backend with fp32 + and * (and clone, slice_scatter), no cumsum. Its preprocess records the
// partition program it was given and asks for each weight it reads to be stored as named data.
class RecordingBackend final : public CompilerBackend {
 public:
  RecordingBackend() : table_("test", {DType::Float32}, 5) {
    table_.add({.op = "aten::add"}).add({.op = "aten::mul"}).add({.op = "aten::clone"});
    table_.add({.op = "aten::slice_scatter"});
  }
  std::string_view name() const override { return "test"; }
  const BackendSupport& support() const override { return table_; }
  ir::StatusOr<PreprocessResult> preprocess(const ir::Program& p,
                                            std::span<const CompileSpecEntry>) const override {
    programs.push_back(ir::print_program(p));
    PreprocessResult r;
    const std::string blob = "blob" + std::to_string(programs.size());
    r.processed.assign(blob.begin(), blob.end());
    for (size_t i = 0; i < p.graph().inputs().size(); ++i) {
      const ir::InputSpec& s = p.input_spec(i);
      if (s.kind == ir::InputKind::UserInput) continue;
      const ir::Weight* w = p.find_weight(s.target);
      if (w == nullptr || !w->has_data()) {
        return ir::Status::error("weight " + s.target + " arrived without bytes");
      }
      r.named_data.push_back(
          {weight_key(s.target, w->bytes()), {w->bytes().begin(), w->bytes().end()}});
    }
    return r;
  }
  mutable std::vector<std::string> programs;
  OpSupportTable& table() { return table_; }

 private:
  OpSupportTable table_;
};

std::vector<std::string> node_names(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

const ir::Node* find_node(const ir::Graph& g, const std::string& name) {
  for (const ir::Node* n : g.nodes()) {
    if (n->name() == name) return n;
  }
  return nullptr;
}

// ---- C16: program order kept, output last --------------------------------------------------

TEST(C16, DelegateTakesThePlaceOfThePartitionsLastNode) {
  // contracts.md C16 test 1: x; a = add(x) [supported]; c = unsupported(x), no users;
  // b = mul(a) [supported]; output(b).
  auto p = parse(R"(graph(%x: f32[4]) {
    %a: f32[4] = aten::add.Tensor(self=%x, other=%x, alpha=1)
    %c: f32[4] = aten::cumsum.default(self=%x, dim=0, dtype=none)
    %b: f32[4] = aten::mul.Tensor(self=%a, other=%a)
    return (%b)
  })");
  ASSERT_NE(p, nullptr);
  RecordingBackend backend;
  auto r = delegate_to_backends(*p, {{&backend, {}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->delegates.size(), 1u);
  EXPECT_EQ(r->delegates[0].nodes,
            (std::vector<std::string>{"a (aten::add.Tensor)", "b (aten::mul.Tensor)"}));
  // x (the input), c, the delegate, whose output is the graph's output (last).
  EXPECT_EQ(node_names(p->graph()), (std::vector<std::string>{"c", "delegate"}));
  const ir::Node* d = find_node(p->graph(), "delegate");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(ops::is_delegate_call(*d));
  ASSERT_EQ(p->graph().outputs().size(), 1u);
  EXPECT_EQ(p->graph().outputs()[0], d->output(0));
  // c still runs: it is still in the graph, before the delegate, reading x.
  const ir::Node* c = find_node(p->graph(), "c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->op(), "aten::cumsum");
  EXPECT_EQ(ir::print_program(*p),
            "graph(\n    %x: f32[4]\n) {\n"
            "  %c: f32[4] = aten::cumsum.default(self=%x, dim=0, dtype=none)\n"
            "  %delegate: f32[4] = executorch::call_delegate.default(backend=\"test\", index=0, "
            "inputs=[%x])\n"
            "  return (%delegate)\n}\n");
}

TEST(C16, MovesOnlyWhatDependenciesForce) {
  // u reads the partition's a; l feeds the partition's b. The delegate can run only after l and
  // before u: l keeps its place, u moves after the delegate, nothing else moves.
  auto p = parse(R"(graph(%x: f32[4]) {
    %first: f32[4] = aten::cumsum.default(self=%x, dim=0, dtype=none)
    %a: f32[4] = aten::add.Tensor(self=%x, other=%x, alpha=1)
    %u: f32[4] = aten::cumsum.default(self=%a, dim=0, dtype=none)
    %l: f32[4] = aten::cumsum.default(self=%x, dim=0, dtype=none)
    %b: f32[4] = aten::mul.Tensor(self=%a, other=%l)
    %last: f32[4] = aten::cumsum.default(self=%first, dim=0, dtype=none)
    return (%u, %b, %last)
  })");
  ASSERT_NE(p, nullptr);
  RecordingBackend backend;
  auto r = delegate_to_backends(*p, {{&backend, {}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->delegates.size(), 1u);
  EXPECT_EQ(node_names(p->graph()),
            (std::vector<std::string>{"first", "l", "delegate", "u", "last"}));
  // The delegate's results replace a and b: u reads one, the outputs keep their positions.
  const ir::Node* d = find_node(p->graph(), "delegate");
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->num_outputs(), 2u);
  EXPECT_EQ(find_node(p->graph(), "u")->operands()[0], d->output(0));
  EXPECT_EQ(p->graph().outputs()[1], d->output(1));
  EXPECT_EQ(p->graph().outputs()[2], find_node(p->graph(), "last")->output(0));
}

// ---- C17: delegate input positions are stable -----------------------------------------------

TEST(C17, UnusedInputsKeepTheirPositions) {
  auto p = parse(R"(graph(%x: f32[4], %unused: f32[4], %y: f32[4]) {
    %s: f32[4] = aten::add.Tensor(self=%x, other=%y, alpha=1)
    return (%s)
  })");
  ASSERT_NE(p, nullptr);
  RecordingBackend backend;
  auto r = delegate_to_backends(*p, {{&backend, {}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(backend.programs.size(), 1u);
  // The partition program takes x, unused, y in that order; the call passes the same three.
  EXPECT_NE(backend.programs[0].find("%x: f32[4],\n    %unused: f32[4],\n    %y: f32[4]\n"),
            std::string::npos)
      << backend.programs[0];
  const ir::Node* d = find_node(p->graph(), "delegate");
  ASSERT_NE(d, nullptr);
  std::vector<std::string> args;
  for (const ir::Value* v : d->operands()) args.push_back(v->name());
  EXPECT_EQ(args, (std::vector<std::string>{"x", "unused", "y"}));
}

// ---- C19: one stored copy per weight --------------------------------------------------------

TEST(C19, OneNamedDataEntryForAWeightTwoPartitionsRead) {
  // Two partitions (cumsum between them) both read w, and one of them reads it twice.
  auto p = parse(R"(weight "w": f32[2] = hex"0000803f00000040"
graph(%p_w: f32[2] parameter "w", %x: f32[2]) {
    %a: f32[2] = aten::mul.Tensor(self=%x, other=%p_w)
    %a2: f32[2] = aten::add.Tensor(self=%a, other=%p_w, alpha=1)
    %c: f32[2] = aten::cumsum.default(self=%a2, dim=0, dtype=none)
    %b: f32[2] = aten::add.Tensor(self=%c, other=%p_w, alpha=1)
    return (%b)
  })");
  ASSERT_NE(p, nullptr);
  RecordingBackend backend;
  auto r = delegate_to_backends(*p, {{&backend, {}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->delegates.size(), 2u);
  ASSERT_EQ(r->named_data.size(), 1u);
  const ir::Weight* w = p->find_weight("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(r->named_data[0].key, weight_key("w", w->bytes()));
  EXPECT_EQ(r->named_data[0].key.substr(0, 9), "w:sha256:");
  EXPECT_EQ(r->weight_types.at(r->named_data[0].key).dtype, DType::Float32);
  // Each partition program got w once, as a weight (parameter), not as a call argument.
  for (const std::string& text : backend.programs) {
    EXPECT_NE(text.find("parameter \"w\""), std::string::npos) << text;
  }
  for (const ir::Node* n : p->graph().nodes()) {
    if (!ops::is_delegate_call(*n)) continue;
    for (const ir::Value* v : n->operands()) EXPECT_NE(v->name(), "p_w");
  }
}

// ---- C20: nothing writes a constant's storage ------------------------------------------------

TEST(C20, CloneOfAConstantThatIsWrittenStaysACopy) {
  // y = self.c.clone(); y[0:2] = x; return y: functionalized, then delegated.
  auto p = parse(
      R"(weight "c": f32[4, 3] = hex"000000000000803f0000004000004040000080400000a0400000c0400000e04000000041000010410000204100003041"
graph(%c_c: f32[4, 3] constant "c", %x: f32[2, 3]) {
    %y: f32[4, 3] = aten::clone.default(self=%c_c, memory_format=none)
    %s: f32[2, 3] = aten::slice.Tensor(self=%y, dim=0, start=0, end=2, step=1)
    %w: f32[2, 3] = aten::copy_.default(self=%s, src=%x, non_blocking=false)
    return (%y)
  })");
  ASSERT_NE(p, nullptr);
  const std::vector<uint8_t> before(p->find_weight("c")->bytes().begin(),
                                    p->find_weight("c")->bytes().end());
  passes::PassContext ctx;
  // Constant folding runs registered kernels (compiler/ops/kernel_eval.h).
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_TRUE(passes::remove_aliases(*p, ctx).ok());
  ASSERT_TRUE(passes::fold_constants(*p, ctx).ok());
  ASSERT_TRUE(passes::functionalize(*p, ctx).ok());
  ASSERT_TRUE(passes::eliminate_dead_code(*p, ctx).ok());
  RecordingBackend backend;
  auto r = delegate_to_backends(*p, {{&backend, {}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->delegates.size(), 1u) << ir::print_program(*p) << r->report;
  // The clone stays a fresh tensor (folding it before functionalization would have made the
  // write a write of a constant, and the result would miss x); the partition updates it with a
  // functional slice_scatter and writes nothing in place.
  const std::string lowered = ir::print_program(*p);
  EXPECT_NE(lowered.find("aten::clone.default(self=%c_c"), std::string::npos) << lowered;
  ASSERT_EQ(p->graph().outputs().size(), 1u);
  EXPECT_TRUE(ops::is_delegate_call(*p->graph().outputs()[0]->producer())) << lowered;
  auto pp = parse(backend.programs[0]);
  ASSERT_NE(pp, nullptr);
  for (const ir::Node* n : pp->graph().nodes()) {
    EXPECT_TRUE(ir::mutated_arguments(*n).empty()) << n->describe();
  }
  EXPECT_NE(backend.programs[0].find("aten::slice_scatter"), std::string::npos)
      << backend.programs[0];
  // Lowering and preprocess left the stored bytes of c alone.
  const ir::Weight* c = p->find_weight("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(c->bytes().begin(), c->bytes().end()), before);
}

// ---- errors and priority ---------------------------------------------------------------------

class FailingBackend final : public CompilerBackend {
 public:
  FailingBackend() : table_("failing", {DType::Float32}, 5) { table_.add({.op = "aten::add"}); }
  std::string_view name() const override { return "failing"; }
  const BackendSupport& support() const override { return table_; }
  ir::StatusOr<PreprocessResult> preprocess(const ir::Program&,
                                            std::span<const CompileSpecEntry>) const override {
    return ir::Status::error("node a: no code for you");
  }

 private:
  OpSupportTable table_;
};

TEST(Delegation, PreprocessErrorNamesBackendAndPartition) {
  auto p = parse(R"(graph(%x: f32[4]) {
    %a: f32[4] = aten::add.Tensor(self=%x, other=%x, alpha=1)
    return (%a)
  })");
  ASSERT_NE(p, nullptr);
  FailingBackend backend;
  auto r = delegate_to_backends(*p, {{&backend, {}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("backend 'failing'"), std::string::npos);
  EXPECT_NE(r.status().message().find("nodes a"), std::string::npos);
  EXPECT_NE(r.status().message().find("no code for you"), std::string::npos);
}

TEST(Delegation, EarlierBackendsWinAndExcludedOpsStayPortable) {
  auto p = parse(R"(graph(%x: f32[4]) {
    %a: f32[4] = aten::add.Tensor(self=%x, other=%x, alpha=1)
    %m: f32[4] = aten::mul.Tensor(self=%a, other=%a)
    return (%m)
  })");
  ASSERT_NE(p, nullptr);
  RecordingBackend first, second;
  const std::string mul = "aten::mul";
  auto r = delegate_to_backends(
      *p, {{&first, {{"exclude_ops", {mul.begin(), mul.end()}}}}, {&second, {}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The first takes add (mul excluded), the second mul; the second never sees the first's call.
  ASSERT_EQ(r->delegates.size(), 2u);
  EXPECT_EQ(r->delegates[0].nodes, (std::vector<std::string>{"a (aten::add.Tensor)"}));
  EXPECT_EQ(r->delegates[1].nodes, (std::vector<std::string>{"m (aten::mul.Tensor)"}));
  EXPECT_NE(r->report.find("excluded by the compile spec"), std::string::npos) << r->report;
  EXPECT_NE(r->report.find("delegated to backend 'test'"), std::string::npos) << r->report;
  EXPECT_EQ(r->delegates[0].compile_specs.back().key, kNodesSpecKey);
}

// A pattern the backend claims only whole (BackendSupport::claimed_with: here an add with the
// mul that reads it) goes portable whole when exclude_ops names one of its ops.
TEST(Delegation, ExcludingPartOfAPatternLeavesItAllPortable) {
  const char* text = R"(graph(%x: f32[4]) {
    %a: f32[4] = aten::add.Tensor(self=%x, other=%x, alpha=1)
    %m: f32[4] = aten::mul.Tensor(self=%a, other=%a)
    return (%m)
  })";
  RecordingBackend backend;
  backend.table().set_claimed_with([](const ir::Node& n) {
    std::vector<const ir::Node*> pattern;
    if (n.op() == "aten::add") pattern.push_back(n.output()->users()[0]);
    return pattern;
  });
  auto p = parse(text);
  ASSERT_NE(p, nullptr);
  const std::string mul = "aten::mul";
  auto r = delegate_to_backends(*p, {{&backend, {{"exclude_ops", {mul.begin(), mul.end()}}}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->delegates.empty());
  EXPECT_NE(r->report.find("claimed only with node m (aten::mul.Tensor), and aten::mul.Tensor is "
                           "excluded by the compile spec"),
            std::string::npos)
      << r->report;
  // Nothing excluded: the pattern is claimed.
  auto q = parse(text);
  ASSERT_NE(q, nullptr);
  auto all = delegate_to_backends(*q, {{&backend, {}}});
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->delegates.size(), 1u);
  EXPECT_EQ(all->delegates[0].nodes.size(), 2u);
}

// The `partitions` spec (`ember compile --verify` and its fallback): the backend takes only the
// partitions it lists; the others stay portable, with the reason; neither preprocess nor the
// delegate's compile specs see the spec.
TEST(Delegation, PartitionsSpecSelectsPartitions) {
  const char* text = R"(graph(%x: f32[4]) {
    %a: f32[4] = aten::add.Tensor(self=%x, other=%x, alpha=1)
    %s: f32[4] = aten::sub.Tensor(self=%a, other=%x, alpha=1)
    %m: f32[4] = aten::mul.Tensor(self=%s, other=%s)
    return (%m)
  })";
  const auto with = [](const std::string& list) {
    return std::vector<CompileSpecEntry>{{kPartitionsSpecKey, {list.begin(), list.end()}}};
  };
  {
    auto p = parse(text);
    ASSERT_NE(p, nullptr);
    RecordingBackend backend;
    auto r = delegate_to_backends(*p, {{&backend, {}}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->delegates.size(), 2u);  // add, and mul: sub is not supported between them
    EXPECT_EQ(r->delegates[0].partition, 0u);
    EXPECT_EQ(r->delegates[1].partition, 1u);
  }
  {
    auto p = parse(text);
    ASSERT_NE(p, nullptr);
    RecordingBackend backend;
    auto r = delegate_to_backends(*p, {{&backend, with("1")}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->delegates.size(), 1u);
    EXPECT_EQ(r->delegates[0].partition, 1u);
    EXPECT_EQ(r->delegates[0].nodes, (std::vector<std::string>{"m (aten::mul.Tensor)"}));
    EXPECT_NE(r->report.find("partition 0 stays portable: not among the compile spec's partitions"),
              std::string::npos)
        << r->report;
    for (const CompileSpecEntry& e : r->delegates[0].compile_specs) {
      EXPECT_NE(e.key, kPartitionsSpecKey);
    }
    EXPECT_EQ(backend.programs.size(), 1u);
  }
  {
    auto p = parse(text);
    ASSERT_NE(p, nullptr);
    RecordingBackend backend;
    auto r = delegate_to_backends(*p, {{&backend, with("")}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->delegates.empty());
  }
  {
    auto p = parse(text);
    ASSERT_NE(p, nullptr);
    RecordingBackend backend;
    auto r = delegate_to_backends(*p, {{&backend, with("0,x")}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("'x' is not a partition index"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace ember::partition
