// libFuzzer target: any bytes as an exported-program file (.ep) -> import_exported_program, then,
// for a program the importer accepts, the IR verifier, the printer, the text parser on the printed
// text, and the whole of `ember compile` (passes, memory planning, emission); a program the
// compiler emits must then load in the runtime. Nothing may crash, hang, leak or read out of
// bounds (ASan + UBSan in the fuzz build); errors are fine, an emitted program that the runtime
// refuses is a finding (the compiler wrote an invalid .pte).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "compiler/import/exported_program.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/lower/pipeline.h"
#include "runtime/executor/program.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/loaders.h"

namespace {

// Compiling folds constants and plans memory for the declared shapes: keep the programs the
// fuzzer builds small enough that one input stays well inside libFuzzer's time and RSS limits.
constexpr uint64_t kMaxElements = uint64_t{1} << 20;

bool small_value(const ember::ir::Value* value) {
  if (!value->is_tensor()) return true;
  std::optional<int64_t> n = value->tensor_type().numel_upper_bound();
  return n.has_value() && *n >= 0 && static_cast<uint64_t>(*n) <= kMaxElements;
}

bool small_enough(const ember::ir::Graph& graph) {
  for (const ember::ir::Value* input : graph.inputs()) {
    if (!small_value(input)) return false;
  }
  for (const ember::ir::Node* node : graph.nodes()) {
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      if (!small_value(node->output(i))) return false;
    }
    for (size_t g = 0; g < node->num_subgraphs(); ++g) {
      if (!small_enough(*node->subgraph(g))) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = ember::register_portable_kernels() == ember::Error::Ok;
  if (!registered) std::abort();  // a broken build, not an input
  auto bytes = std::make_shared<const std::vector<uint8_t>>(data, data + size);
  ember::ir::StatusOr<std::unique_ptr<ember::ir::Program>> imported =
      ember::importer::import_exported_program(bytes);
  if (!imported.ok()) return 0;
  ember::ir::Program& program = **imported;
  if (!ember::ir::verify(program).ok()) return 0;
  // The printed text must parse back: the text form is the passes' test format.
  const std::string text = ember::ir::print_program(program);
  (void)ember::ir::parse_program(text);
  if (!small_enough(program.graph())) return 0;
  ember::ir::StatusOr<ember::lower::CompileResult> compiled =
      ember::lower::compile_program(program, ember::lower::CompileOptions{});
  if (!compiled.ok()) return 0;
  const std::vector<uint8_t>& pte = compiled->files.pte;
  ember::BufferDataLoader loader(pte.data(), pte.size());
  ember::Result<ember::Program> loaded = ember::Program::load(&loader);
  if (!loaded.ok()) {
    std::fprintf(stderr, "the compiler emitted a program the runtime refuses: %s\n",
                 ember::last_error_message());
    std::abort();
  }
  return 0;
}
