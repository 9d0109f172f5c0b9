#include "backends/loopback/loopback_compiler.h"

#include <mutex>

#include "compiler/emit/pte_writer.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/emit_program.h"
#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ember::loopback {

namespace {

// Exactly what Ember's portable path runs: every op the lowering table lowers to a registered
// kernel. Tensor values only: an int argument of a nested program is fixed at export (Method
// checks it equals the exported value), so symbolic sizes stay on the portable path.
class LoopbackSupport final : public partition::BackendSupport {
 public:
  std::string_view name() const override { return kBackendName; }
  partition::Support check(const ir::Node& node) const override {
    if (node.num_subgraphs() > 0) {
      return partition::Support::no("control flow: a nested program cannot emit it yet");
    }
    if (ops::is_delegate_call(node)) return partition::Support::no("already delegated");
    for (const ir::Value* v : node.operands()) {
      if (!v->is_tensor()) {
        return partition::Support::no("reads the symbolic size %" + v->name() +
                                      " (loopback takes tensors only)");
      }
    }
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      if (!node.output(i)->is_tensor()) {
        return partition::Support::no("computes the non-tensor value %" + node.output(i)->name());
      }
    }
    if (!mutated_arguments(node).empty()) {
      return partition::Support::no("writes its argument in place");
    }
    if (std::optional<std::string> r = partition::data_dependent_shape_reason(node)) {
      return partition::Support::no(*r);
    }
    const std::string gap = ops::lowering_gap(node);
    if (!gap.empty()) return partition::Support::no(gap);
    return partition::Support::yes();
  }
};

class LoopbackBackend final : public partition::CompilerBackend {
 public:
  std::string_view name() const override { return kBackendName; }
  const partition::BackendSupport& support() const override { return support_; }

  ir::StatusOr<partition::PreprocessResult> preprocess(
      const ir::Program& partition, std::span<const partition::CompileSpecEntry>) const override {
    // Ember's passes rewrite a program, and the partition is the caller's: work on a copy (the
    // text form without bytes, then the weights, whose bytes are shared and never written).
    ir::StatusOr<std::unique_ptr<ir::Program>> copy =
        ir::parse_program(ir::print_program(partition));
    if (!copy.ok()) {
      return ir::Status::error("copying the partition program failed: " + copy.status().message());
    }
    ir::Program& p = **copy;
    p.weights = partition.weights;
    passes::PassContext ctx;
    EMBER_IR_RETURN_IF_ERROR(passes::lower_to_out_variants(p, ctx));
    EMBER_IR_RETURN_IF_ERROR(passes::fold_constants(p, ctx));
    EMBER_IR_RETURN_IF_ERROR(passes::dedupe_constants(p, ctx));
    EMBER_IR_RETURN_IF_ERROR(passes::eliminate_dead_code(p, ctx));
    EMBER_IR_RETURN_IF_ERROR(passes::verify_support(p));
    // Every weight External, keyed by weight_key: its bytes become named data, stored once per
    // program however many partitions read it (C19).
    lower::EmitOptions eo;
    eo.external_weights = true;
    std::map<std::string, std::string> keys;
    ir::StatusOr<lower::EmittedMethod> m = lower::emit_method(p, eo, &keys);
    if (!m.ok()) return m.status();
    partition::PreprocessResult out;
    for (emit::ValueSpec& v : m->method.values) {
      auto* t = std::get_if<emit::TensorSpec>(&v);
      if (t == nullptr || t->storage != emit::TensorSpec::Storage::External) continue;
      // Constants the nested passes made (folded or lowering's index tensors) are this
      // delegate's own: they stay in its blob. Only the partition's weights are shared.
      const size_t cut = t->fqn.rfind(":sha256:");
      const ir::Weight* w =
          cut == std::string::npos ? nullptr : partition.find_weight(t->fqn.substr(0, cut));
      if (w == nullptr || w->nbytes != t->data.size()) {
        t->storage = emit::TensorSpec::Storage::Constant;
        t->fqn.clear();
        continue;
      }
      bool seen = false;
      for (const partition::NamedBlob& b : out.named_data) seen = seen || b.key == t->fqn;
      if (!seen) out.named_data.push_back({t->fqn, t->data});
    }
    emit::ProgramSpec spec;
    spec.methods.push_back(std::move(m->method));
    Result<emit::WrittenProgram> files = emit::write_program(spec);
    if (!files.ok()) {
      return ir::Status::error(std::string("writing the nested program failed: ") +
                               last_error_message());
    }
    out.processed = std::move(files->pte);  // its .ptd is the named data above
    return out;
  }

 private:
  LoopbackSupport support_;
};

}  // namespace

const partition::CompilerBackend& loopback_compiler_backend() {
  static const LoopbackBackend backend;
  return backend;
}

ir::Status register_loopback_compiler_backend() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (partition::find_compiler_backend(kBackendName) == &loopback_compiler_backend()) return {};
  return partition::register_compiler_backend(&loopback_compiler_backend());
}

}  // namespace ember::loopback
