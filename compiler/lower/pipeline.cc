#include "compiler/lower/pipeline.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "compiler/import/exported_program.h"
#include "compiler/import/pt2.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/kernel_eval.h"
#include "compiler/passes/passes.h"

namespace ember::lower {

ir::Status run_passes(ir::Program& program, passes::PassContext* context,
                      const std::vector<partition::BackendRequest>& backends,
                      partition::DelegationResult* delegation) {
  passes::PassContext local;
  passes::PassContext& ctx = context != nullptr ? *context : local;
  EMBER_IR_RETURN_IF_ERROR(passes::remove_aliases(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::drop_assertions(program, ctx));
  // A node nobody reads (and that writes nothing) cannot block the compile, supported or not.
  EMBER_IR_RETURN_IF_ERROR(passes::eliminate_dead_code(program, ctx));
  // Everything unsupported, at once, before any rewrite can fail on the first of them.
  EMBER_IR_RETURN_IF_ERROR(passes::verify_lowerable(program));
  EMBER_IR_RETURN_IF_ERROR(passes::fold_constants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::functionalize(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::eliminate_dead_code(program, ctx));
  if (!backends.empty()) {
    if (delegation == nullptr) return ir::Status::error("run_passes: backends need a result");
    ir::StatusOr<partition::DelegationResult> d =
        partition::delegate_to_backends(program, backends);
    if (!d.ok()) return d.status();
    *delegation = std::move(*d);
  }
  EMBER_IR_RETURN_IF_ERROR(passes::lower_to_out_variants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::fold_constants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::dedupe_constants(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::eliminate_dead_code(program, ctx));
  EMBER_IR_RETURN_IF_ERROR(passes::verify_support(program));
  return {};
}

ir::StatusOr<CompileResult> compile_program(ir::Program& program, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompileResult result;
  std::vector<partition::BackendRequest> requests;
  for (const std::string& name : options.backends) {
    const partition::CompilerBackend* b = partition::find_compiler_backend(name);
    if (b == nullptr) {
      std::string known;
      for (const std::string& n : partition::compiler_backend_names()) {
        known += (known.empty() ? "" : ", ") + n;
      }
      return ir::Status::error("unknown backend '" + name +
                               "'; registered backends: " + (known.empty() ? "(none)" : known));
    }
    auto specs = options.compile_specs.find(name);
    requests.push_back({b, specs == options.compile_specs.end()
                               ? std::vector<partition::CompileSpecEntry>{}
                               : specs->second});
  }
  for (const auto& [name, specs] : options.compile_specs) {
    bool asked = false;
    for (const std::string& b : options.backends) asked = asked || b == name;
    if (!asked) return ir::Status::error("compile specs for backend '" + name + "', not requested");
  }
  partition::DelegationResult delegation;
  passes::PassContext ctx;
  EMBER_IR_RETURN_IF_ERROR(run_passes(program, &ctx, requests, &delegation));
  result.notes = std::move(ctx.notes);
  result.details = std::move(ctx.details);
  if (options.keep_ir) result.ir = ir::print_program(program);
  std::map<std::string, std::string> keys;
  EmitOptions eo;
  eo.external_weights = options.external_weights;
  eo.delegates = &delegation.delegates;
  ir::StatusOr<EmittedMethod> m = emit_method(program, eo, &keys);
  if (!m.ok()) return m.status();
  result.stats = m->stats;
  emit::ProgramSpec spec;
  spec.methods.push_back(std::move(m->method));
  // Backends' named data: once per key (C19), beside the program's own weights.
  for (partition::NamedBlob& blob : delegation.named_data) {
    emit::NamedDataSpec nd;
    nd.key = blob.key;
    nd.external = options.external_weights;
    auto type = delegation.weight_types.find(blob.key);
    if (type != delegation.weight_types.end()) {
      nd.dtype = passes::to_scalar_type(type->second.dtype);
      for (const ir::Dim& d : type->second.shape) nd.sizes.push_back(static_cast<int32_t>(d.value));
    }
    result.named_data_bytes += blob.data.size();
    nd.data = std::move(blob.data);
    spec.named_data.push_back(std::move(nd));
  }
  result.partition_report = std::move(delegation.report);
  result.partition_summary = std::move(delegation.summary);
  result.delegates = delegation.delegates.size();
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
  ir::StatusOr<std::shared_ptr<std::vector<uint8_t>>> bytes = importer::read_whole_file(path);
  if (!bytes.ok()) return bytes.status();
  ir::StatusOr<std::unique_ptr<ir::Program>> p =
      ir::parse_program(std::string((*bytes)->begin(), (*bytes)->end()));
  if (!p.ok()) return p.status().with_context(path + ": ");
  ir::Status verified = ir::verify(**p);
  if (!verified.ok()) return verified.with_context(path + ": ");
  return p;
}

bool is_ir_text(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".ir") == 0;
}

}  // namespace

ir::StatusOr<std::unique_ptr<ir::Program>> load_program_file(const std::string& path) {
  return is_ir_text(path) ? read_ir_text_file(path) : importer::import_program_file(path);
}

ir::StatusOr<CompileResult> compile_file(const std::string& path, const CompileOptions& options) {
  const bool ir_text = is_ir_text(path);
  ir::StatusOr<std::unique_ptr<ir::Program>> p = load_program_file(path);
  if (!p.ok()) return p.status();
  ir::StatusOr<CompileResult> r = compile_program(**p, options);
  // torch.export's default (training) IR: the ops Ember lacks, or lowers in some forms only,
  // usually decompose to ones it has.
  const auto says = [&](const char* text) {
    return !r.ok() && r.status().message().find(text) != std::string::npos;
  };
  if (!ir_text && importer::is_pt2_file(path) &&
      (says("use ops Ember cannot run") || says("cannot be lowered"))) {
    return ir::Status::error(r.status().message() + importer::kPt2DecomposeHint);
  }
  return r;
}

}  // namespace ember::lower
