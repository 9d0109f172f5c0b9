#include "compiler/lower/pipeline.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "compiler/import/exported_program.h"
#include "compiler/import/pt2.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/ops/kernel_eval.h"
#include "compiler/passes/pass_registry.h"
#include "compiler/passes/passes.h"

namespace ember::lower {

std::span<const std::string_view> pipeline() {
  // The order `ember compile` runs the passes in; each one's needs come before it (pipeline_test).
  static constexpr std::string_view kPipeline[] = {
      "remove_aliases",    // writes are seen through views from here on
      "drop_assertions",   // assertions never reach the runtime (C12)
      "dead_code",         // an unused node cannot block the compile, supported or not
      "verify_lowerable",  // every unsupported op, listed at once, before any rewrite
      "fold_constants",    // constant subgraphs become weights
      "functionalize",     // in-place writes become functional ops and mutation outputs
      "dead_code",         // what folding and functionalization left unused
      kDelegationStep,     // with --backend: partitions become delegate calls
      "lower_to_out",      // out-variant kernel calls and prim ops
      "fold_constants",    // lowering exposes more constant calls
      "dedupe_constants",  // weights with equal bytes stored once
      "dead_code",         // weights and nodes deduplication and folding left unused
      "verify_support",    // the runtime has every kernel the program calls (C12)
  };
  return kPipeline;
}

ir::Status run_passes(ir::Program& program, passes::PassContext* context,
                      const std::vector<partition::BackendRequest>& backends,
                      partition::DelegationResult* delegation) {
  passes::PassContext local;
  passes::PassContext& ctx = context != nullptr ? *context : local;
  for (std::string_view step : pipeline()) {
    if (step == kDelegationStep) {
      ctx.delegated = true;
      if (backends.empty()) continue;
      if (delegation == nullptr) return ir::Status::error("run_passes: backends need a result");
      ir::StatusOr<partition::DelegationResult> d =
          partition::delegate_to_backends(program, backends);
      if (!d.ok()) return d.status();
      *delegation = std::move(*d);
      continue;
    }
    const passes::PassInfo* pass = passes::find_pass(step);
    if (pass == nullptr)
      return ir::Status::error("the pipeline names an unknown pass " + std::string(step));
    EMBER_IR_RETURN_IF_ERROR(pass->run(program, ctx));
  }
  return {};
}

namespace {

// A constant method as ExecuTorch's emitter writes one: its values, each an output, no instructions
// and no arena; the outputs' pytree spec in torch's JSON form (a leaf, or a list of leaves).
emit::MethodSpec constant_method_spec(const ir::ConstantMethod& c) {
  emit::MethodSpec m;
  m.name = c.name;
  for (const ir::ConstantMethod::Scalar& v : c.values) {
    m.outputs.push_back(m.add(std::visit([](const auto& x) { return emit::ValueSpec(x); }, v)));
  }
  const std::string leaf = R"({"type": null, "context": null, "children_spec": []})";
  std::string tree = leaf;
  if (c.is_list) {
    tree = R"({"type": "builtins.list", "context": "null", "children_spec": [)";
    for (size_t i = 0; i < c.values.size(); ++i) tree += (i ? ", " : "") + leaf;
    tree += "]}";
  }
  m.output_spec = "[1, " + tree + "]";
  return m;
}

}  // namespace

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
  for (const ir::ConstantMethod& c : program.constant_methods) {
    spec.methods.push_back(constant_method_spec(c));
  }
  // Backends' named data: once per key (C19), beside the program's own weights.
  for (partition::NamedBlob& blob : delegation.named_data) {
    emit::NamedDataSpec nd;
    nd.key = blob.key;
    nd.external = options.external_weights;
    auto type = delegation.weight_types.find(blob.key);
    if (type != delegation.weight_types.end()) {
      nd.dtype = ops::to_scalar_type(type->second.dtype);
      for (const ir::Dim& d : type->second.shape) nd.sizes.push_back(static_cast<int32_t>(d.value));
    }
    result.named_data_bytes += blob.data.size();
    nd.data = std::move(blob.data);
    spec.named_data.push_back(std::move(nd));
  }
  result.partition_report = std::move(delegation.report);
  result.partition_summary = std::move(delegation.summary);
  for (const partition::LoweredDelegate& d : delegation.delegates) {
    result.delegates.push_back({d.backend, d.partition, d.nodes});
  }
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
