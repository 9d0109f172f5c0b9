#include "compiler/lower/pipeline.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "compiler/import/exported_program.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/passes.h"

namespace ember::lower {

ir::Status run_passes(ir::Program& program, std::vector<std::string>* notes) {
  passes::PassContext ctx;
  EMBER_IR_RETURN_IF_ERROR(passes::remove_aliases(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::drop_assertions(program, ctx));
  // Everything unsupported, at once, before any rewrite can fail on the first of them.
  EMBER_IR_RETURN_IF_ERROR(passes::verify_lowerable(program));
  EMBER_IR_RETURN_IF_ERROR(passes::fold_constants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::functionalize(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::eliminate_dead_code(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::lower_to_out_variants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::fold_constants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::dedupe_constants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::eliminate_dead_code(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::verify_support(program));
  if (notes != nullptr) notes->insert(notes->end(), ctx.notes.begin(), ctx.notes.end());
  return {};
}

ir::StatusOr<CompileResult> compile_program(ir::Program& program, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompileResult result;
  EMBER_IR_RETURN_IF_ERROR(run_passes(program, &result.notes));
  if (options.keep_ir) result.ir = ir::print_program(program);
  std::map<std::string, std::string> keys;
  EmitOptions eo;
  eo.external_weights = options.external_weights;
  ir::StatusOr<EmittedMethod> m = emit_method(program, eo, &keys);
  if (!m.ok()) return m.status();
  result.stats = m->stats;
  emit::ProgramSpec spec;
  spec.methods.push_back(std::move(m->method));
  Result<emit::WrittenProgram> files = emit::write_program(spec);
  if (!files.ok()) {
    return ir::Status::error(std::string("writing the program failed: ") + last_error_message());
  }
  result.files = std::move(*files);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

namespace {

// IR text (compiler/ir/parser.h), weights with hex data included: how the tests compile programs
// PyTorch 1.13's exporter cannot capture (torch.cond, sym_ite).
ir::StatusOr<std::unique_ptr<ir::Program>> read_ir_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ir::Status::error("cannot open " + path);
  std::stringstream text;
  text << in.rdbuf();
  ir::StatusOr<std::unique_ptr<ir::Program>> p = ir::parse_program(text.str());
  if (!p.ok()) return p.status().with_context(path + ": ");
  ir::Status verified = ir::verify(**p);
  if (!verified.ok()) return verified.with_context(path + ": ");
  return p;
}

}  // namespace

ir::StatusOr<CompileResult> compile_file(const std::string& path, const CompileOptions& options) {
  const bool ir_text = path.size() > 3 && path.compare(path.size() - 3, 3, ".ir") == 0;
  ir::StatusOr<std::unique_ptr<ir::Program>> p =
      ir_text ? read_ir_text_file(path) : importer::import_exported_program_file(path);
  if (!p.ok()) return p.status();
  return compile_program(**p, options);
}

}  // namespace ember::lower
