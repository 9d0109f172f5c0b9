// Emission of lowered programs: external weight keys (C21), one entry per distinct weight and
// refused redefinitions across the methods of one export (C22), and the memory plan.
#include "compiler/lower/emit_program.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/emit/pte_writer.h"
#include "compiler/ir/parser.h"
#include "compiler/lower/pipeline.h"
#include "compiler/partition/backend.h"
#include "compiler/passes/passes.h"
#include "runtime/executor/program.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/loaders.h"

namespace ember::lower {
namespace {

// `text` parsed and through the passes (what emit_method takes).
std::unique_ptr<ir::Program> lowered(const std::string& text) {
  auto p = ir::parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().message();
  if (!p.ok()) return nullptr;
  auto program = std::move(*p);
  // Constant folding runs registered kernels (compiler/ops/kernel_eval.h).
  EXPECT_EQ(register_portable_kernels(), Error::Ok);
  EXPECT_TRUE(run_passes(*program, nullptr).ok());
  return program;
}

std::unique_ptr<ir::Program> linear_like(const std::string& weight_hex) {
  const std::string text = "weight \"linear.weight\": f32[2] = hex\"" + weight_hex +
                           "\"\n"
                           "graph(\n"
                           "    %p_w: f32[2] parameter \"linear.weight\",\n"
                           "    %x: f32[2]\n"
                           ") {\n"
                           "  %mul: f32[2] = aten::mul.Tensor(self=%x, other=%p_w)\n"
                           "  %relu: f32[2] = aten::relu.default(self=%mul)\n"
                           "  return (%relu)\n"
                           "}\n";
  return lowered(text);
}

size_t count(const std::vector<uint8_t>& bytes, const std::string& needle) {
  const std::string hay(bytes.begin(), bytes.end());
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1))
    ++n;
  return n;
}

// A dequantized weight stays quantized through the first constant folding, for the backends to
// see; after partitioning, one by groups (torchao's, which ExecuTorch's runtime has no kernel for)
// becomes a float32 weight, while a per-channel one (PT2E's, which it runs) keeps its int8 bytes.
TEST(Pipeline, GroupDequantizedWeightsFoldAfterDelegation) {
  const std::string q = "0102fdfe0304fcfb0506faf90708f8f7";  // 16 int8
  const std::string s2 =
      "0000803f000000400000404000008040000080400000404000000040"
      "0000803f";
  const std::string s4 = "0000803f000000400000404000008040";
  const std::string text =
      "weight \"wq\": i8[4, 4] = hex\"" + q + "\"\n" + "weight \"s2\": f32[4, 2] = hex\"" + s2 +
      "\"\n" + "weight \"s4\": f32[4] = hex\"" + s4 + "\"\n" +
      "graph(\n    %wq: i8[4, 4] parameter \"wq\",\n    %s2: f32[4, 2] parameter \"s2\",\n"
      "    %s4: f32[4] parameter \"s4\",\n    %x: f32[2, 4]\n) {\n"
      "  %g: f32[4, 4] = quantized_decomposed::dequantize_per_channel_group.default(input=%wq, "
      "scales=%s2, zero_points=none, quant_min=-8, quant_max=7, dtype=dtype(i8), group_size=2, "
      "output_dtype=dtype(f32))\n"
      "  %c: f32[4, 4] = quantized_decomposed::dequantize_per_channel.default(input=%wq, "
      "scales=%s4, zero_points=none, axis=0, quant_min=-127, quant_max=127, dtype=dtype(i8), "
      "out_dtype=none)\n"
      "  %gt: f32[4, 4]{1, 0} = aten::t.default(self=%g)\n"
      "  %ct: f32[4, 4]{1, 0} = aten::t.default(self=%c)\n"
      "  %a: f32[2, 4] = aten::mm.default(self=%x, mat2=%gt)\n"
      "  %b: f32[2, 4] = aten::mm.default(self=%x, mat2=%ct)\n"
      "  return (%a, %b)\n}\n";
  auto count = [](const ir::Program& p, const std::string& prefix) {
    int n = 0;
    for (const ir::Node* node : p.graph().nodes()) n += node->qualified_op().rfind(prefix, 0) == 0;
    return n;
  };
  // Before partitioning (fold_constants alone), both stay.
  auto before = ir::parse_program(text);
  ASSERT_TRUE(before.ok()) << before.status().message();
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  passes::PassContext ctx;
  ASSERT_TRUE(passes::fold_constants(**before, ctx).ok());
  EXPECT_EQ(count(**before, "quantized_decomposed::dequantize_per_channel_group"), 1);
  EXPECT_EQ(count(**before, "quantized_decomposed::dequantize_per_channel."), 1);
  // Through the pipeline without a backend: the grouped one is folded.
  auto program = lowered(text);
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(count(*program, "quantized_decomposed::dequantize_per_channel_group"), 0);
  EXPECT_EQ(count(*program, "quantized_decomposed::dequantize_per_channel."), 1);
}

TEST(EmitProgram, SharedWeightIsStoredOnceAcrossMethods) {
  const std::string hex = "0000803f00000040";  // [1, 2]
  std::map<std::string, std::string> keys;
  EmitOptions o;
  o.external_weights = true;
  emit::ProgramSpec spec;
  for (const char* name : {"forward", "other"}) {
    auto program = linear_like(hex);
    o.method_name = name;
    auto m = emit_method(*program, o, &keys);
    ASSERT_TRUE(m.ok()) << m.status().message();
    spec.methods.push_back(m->method);
  }
  auto files = emit::write_program(spec);
  ASSERT_TRUE(files.ok());
  const std::vector<uint8_t> bytes = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
  const std::string key = partition::weight_key("linear.weight", bytes);
  EXPECT_EQ(count(files->ptd, key), 1u);  // C22 test 1: one entry
  EXPECT_EQ(count(files->pte, key), 2u);  // each method's tensor names it (C21 key)
}

// Found by the differential fuzzer: a program whose only segment data is empty (a zero-sized
// written buffer, its weights in a .ptd) still refers to its mutable data segment, so the file
// needs the extended header that gives the segment base; without it the runtime refused the program
// at load.
TEST(EmitProgram, ZeroSizedStateKeepsTheSegmentHeader) {
  auto program = lowered(
      "weight \"state\": f32[0] = hex\"\"\n"
      "graph(\n"
      "    %b_state: f32[0] buffer \"state\",\n"
      "    %x: f32[3]\n"
      ") {\n"
      "  %add: f32[0] = aten::add.Scalar(self=%b_state, other=1, alpha=1)\n"
      "  %mul: f32[3] = aten::mul.Scalar(self=%x, other=2)\n"
      "  return (%mul, %add buffer_mutation \"state\")\n"
      "}\n");
  ASSERT_TRUE(program);
  std::map<std::string, std::string> keys;
  EmitOptions o;
  o.external_weights = true;
  auto m = emit_method(*program, o, &keys);
  ASSERT_TRUE(m.ok()) << m.status().message();
  emit::ProgramSpec spec;
  spec.methods.push_back(m->method);
  auto files = emit::write_program(spec);
  ASSERT_TRUE(files.ok());
  BufferDataLoader loader(files->pte.data(), files->pte.size());
  Result<Program> loaded = Program::load(&loader);
  EXPECT_TRUE(loaded.ok()) << last_error_message();
}

TEST(EmitProgram, ConflictingRedefinitionIsRefusedByName) {
  std::map<std::string, std::string> keys;
  EmitOptions o;
  o.external_weights = true;
  auto a = linear_like("0000803f00000040");
  auto b = linear_like("0000803f00004040");
  ASSERT_TRUE(emit_method(*a, o, &keys).ok());
  o.method_name = "other";
  auto m = emit_method(*b, o, &keys);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("linear.weight"), std::string::npos) << m.status().message();
}

TEST(EmitProgram, PlansWithReuseAndReportsTheLowerBound) {
  auto program = linear_like("0000803f00000040");
  std::map<std::string, std::string> keys;
  auto m = emit_method(*program, {}, &keys);
  ASSERT_TRUE(m.ok()) << m.status().message();
  // mul (8 bytes → 16) and relu (16) are alive together at the relu call.
  EXPECT_EQ(m->stats.lower_bound, 32u);
  EXPECT_EQ(m->stats.planned_bytes, 32u);
  EXPECT_EQ(m->method.instructions.size(), 2u);
}

// A buffer written by index_put (a KV cache) is written in place: index_put's out is the buffer,
// and no copy back follows, unless the old value is read after the write.
std::unique_ptr<ir::Program> cache_write(bool read_old_after) {
  const std::string text = "weight \"cache\": f32[4, 2] = hex\"" + std::string(64, '0') +
                           "\"\n"
                           "mutated buffer \"cache\"\n"
                           "graph(\n"
                           "    %b_cache: f32[4, 2] buffer \"cache\",\n"
                           "    %pos: i64[1],\n"
                           "    %v: f32[1, 2]\n"
                           ") {\n"
                           "  %put: f32[4, 2] = aten::index_put.default(self=%b_cache, "
                           "indices=[%pos], values=%v, accumulate=false)\n"
                           "  %sum: f32[4, 2] = aten::add.Tensor(self=%put, other=" +
                           std::string(read_old_after ? "%b_cache" : "%put") +
                           ", alpha=1)\n"
                           "  return (%sum, %put buffer_mutation \"cache\")\n"
                           "}\n";
  return lowered(text);
}

TEST(EmitProgram, StateWrittenByIndexPutInPlace) {
  std::map<std::string, std::string> keys;
  for (bool read_old_after : {false, true}) {
    SCOPED_TRACE(read_old_after ? "old value read after the write" : "write only");
    auto program = cache_write(read_old_after);
    ASSERT_TRUE(program);
    auto m = emit_method(*program, {}, &keys);
    ASSERT_TRUE(m.ok()) << m.status().message();
    // index_put and add; the copy back (clone) only when the write could not be in place.
    EXPECT_EQ(m->method.instructions.size(), read_old_after ? 3u : 2u);
    // Planned: the state and the sum (32 bytes each), and a separate index_put result only when
    // the write is not in place.
    EXPECT_EQ(m->stats.planned_bytes, read_old_after ? 96u : 64u);
  }
}

// A view of a contiguous intermediate is an et_view (no copy, nothing planned for it); a view of
// state before its write stays a copy, since the in-place write would show through an alias.
TEST(EmitProgram, ViewsOfContiguousTensorsAreAliases) {
  const std::string text = "weight \"cache\": f32[4] = hex\"" + std::string(32, '0') +
                           "\"\n"
                           "mutated buffer \"cache\"\n"
                           "graph(\n"
                           "    %b_cache: f32[4] buffer \"cache\",\n"
                           "    %x: f32[2, 2]\n"
                           ") {\n"
                           "  %mul: f32[2, 2] = aten::mul.Tensor(self=%x, other=%x)\n"
                           "  %v: f32[4] = aten::view.default(self=%mul, size=[-1])\n"
                           "  %old: f32[2, 2] = aten::view.default(self=%b_cache, size=[2, 2])\n"
                           "  %new: f32[4] = aten::add.Tensor(self=%b_cache, other=%v, alpha=1)\n"
                           "  %r: f32[2, 2] = aten::mul.Tensor(self=%old, other=%mul)\n"
                           "  return (%r, %new buffer_mutation \"cache\")\n"
                           "}\n";
  auto program = lowered(text);
  ASSERT_TRUE(program);
  std::map<std::string, std::string> keys;
  auto m = emit_method(*program, {}, &keys);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<std::string> ops;
  for (const auto& op : m->method.operators) ops.push_back(op.name + "." + op.overload);
  size_t views = 0, copies = 0;
  for (const auto& ins : m->method.instructions) {
    const auto* call = std::get_if<emit::KernelCallSpec>(&ins);
    if (call == nullptr) continue;
    const std::string& name = ops[static_cast<size_t>(call->op_index)];
    views += name == "executorch_prim::et_view.default";
    copies += name == "aten::view_copy.out";
  }
  EXPECT_EQ(views, 1u);   // %v
  EXPECT_EQ(copies, 1u);  // %old, a view of the state before its write
}

}  // namespace
}  // namespace ember::lower
