#include "tools/inspect.h"

#include <algorithm>
#include <cinttypes>
#include <map>
#include <optional>
#include <span>
#include <sstream>

#include "ember/schema/program_generated.h"
#include "runtime/executor/method_meta.h"
#include "tools/executorch_ops.h"
#include "tools/json.h"
#include "tools/plan_svg.h"
#if EMBER_HAVE_XNNPACK_FORMAT
#include "tools/inspect_xnnpack.h"
#endif

namespace ember::tools {
namespace fb = executorch_flatbuffer;

namespace {

const char* dynamism_name(ShapeDynamism d) {
  return d == ShapeDynamism::Static         ? "static"
         : d == ShapeDynamism::DynamicBound ? "dynamic_bound"
                                            : "dynamic_unbound";
}

// Every planned tensor of a method with its place and lifetime, from the .pte alone. Sizes are
// rounded up to 16 bytes and lifetimes run from a tensor's first to its last reference, as in
// Ember's planner (compiler/plan/memory_planner.h): method outputs live to the end, mutable state
// (planned with initial data) for the whole execution, a Move target's later readers keep its
// sources alive, and a Move target itself (a cond result) takes memory at its first reference
// only. `op` is what first references the tensor: "input", "state", an operator, or a delegate.
std::vector<PlannedBuffer> plan_lifetimes(const fb::ExecutionPlan* plan, int64_t* instructions) {
  std::vector<PlannedBuffer> buffers;
  *instructions = 0;
  const auto* values = plan->values();
  if (values == nullptr) return buffers;
  const size_t n = values->size();
  constexpr int64_t kUnseen = -1;
  std::vector<int64_t> first(n, kUnseen), last(n, kUnseen);
  std::vector<std::string> first_op(n);
  std::vector<std::vector<size_t>> moved_into(n);  // Move destination -> its sources
  int64_t pc = 0;
  std::string op;  // what the current instruction runs
  // References value `v` at `pc`, with the list items it holds and what was moved into it.
  auto touch = [&](auto&& self, int64_t v, int depth) -> void {
    if (v < 0 || static_cast<size_t>(v) >= n || depth > 8) return;
    const size_t i = static_cast<size_t>(v);
    if (first[i] == kUnseen) {
      first[i] = pc;
      first_op[i] = op;
    }
    last[i] = pc;
    const fb::EValue* e = values->Get(static_cast<uint32_t>(i));
    const flatbuffers::Vector<int32_t>* items = nullptr;
    if (const fb::TensorList* l = e->val_as_TensorList()) items = l->items();
    if (const fb::OptionalTensorList* l = e->val_as_OptionalTensorList()) items = l->items();
    if (items != nullptr) {
      for (int32_t item : *items) self(self, item, depth + 1);
    }
    for (size_t src : moved_into[i]) self(self, static_cast<int64_t>(src), depth + 1);
  };
  auto touch_args = [&](const flatbuffers::Vector<int32_t>* args) {
    if (args == nullptr) return;
    for (int32_t a : *args) touch(touch, a, 0);
  };
  const auto* operators = plan->operators();
  const auto* delegates = plan->delegates();
  if (plan->chains() != nullptr) {
    for (const fb::Chain* chain : *plan->chains()) {
      if (chain->instructions() == nullptr) continue;
      for (const fb::Instruction* ins : *chain->instructions()) {
        op = "other";
        if (const fb::KernelCall* c = ins->instr_args_as_KernelCall()) {
          if (operators != nullptr && c->op_index() >= 0 &&
              static_cast<uint32_t>(c->op_index()) < operators->size()) {
            const fb::Operator* o = operators->Get(static_cast<uint32_t>(c->op_index()));
            op = o->name() != nullptr ? o->name()->str() : "?";
            if (o->overload() != nullptr && o->overload()->size() > 0) {
              op += "." + o->overload()->str();
            }
          }
          touch_args(c->args());
        }
        if (const fb::DelegateCall* c = ins->instr_args_as_DelegateCall()) {
          op = "delegate";
          if (delegates != nullptr && c->delegate_index() >= 0 &&
              static_cast<uint32_t>(c->delegate_index()) < delegates->size()) {
            const fb::BackendDelegate* d =
                delegates->Get(static_cast<uint32_t>(c->delegate_index()));
            if (d->id() != nullptr) op += " " + d->id()->str();
          }
          touch_args(c->args());
        }
        if (const fb::JumpFalseCall* c = ins->instr_args_as_JumpFalseCall()) {
          touch(touch, c->cond_value_index(), 0);
        }
        if (const fb::FreeCall* c = ins->instr_args_as_FreeCall()) {
          touch(touch, c->value_index(), 0);
        }
        if (const fb::MoveCall* c = ins->instr_args_as_MoveCall()) {
          op = "move";
          touch(touch, c->move_from(), 0);
          touch(touch, c->move_to(), 0);
          const int32_t from = c->move_from(), to = c->move_to();
          if (from >= 0 && to >= 0 && static_cast<size_t>(from) < n &&
              static_cast<size_t>(to) < n && from != to) {
            moved_into[static_cast<size_t>(to)].push_back(static_cast<size_t>(from));
          }
        }
        ++pc;
      }
    }
  }
  *instructions = pc;
  const int64_t end = pc;  // "after the last instruction": outputs and state live to here
  // Outputs live to the end, and so do the tensors moved into them.
  std::vector<bool> to_end(n, false), move_target(n, false), is_input(n, false);
  for (size_t i = 0; i < n; ++i) {
    move_target[i] = !moved_into[i].empty();
  }
  auto mark_end = [&](auto&& self, size_t v, int depth) -> void {
    if (to_end[v] || depth > 8) return;
    to_end[v] = true;
    for (size_t src : moved_into[v]) self(self, src, depth + 1);
  };
  if (plan->outputs() != nullptr) {
    for (int32_t o : *plan->outputs()) {
      if (o >= 0 && static_cast<size_t>(o) < n) mark_end(mark_end, static_cast<size_t>(o), 0);
    }
  }
  if (plan->inputs() != nullptr) {
    for (int32_t v : *plan->inputs()) {
      if (v >= 0 && static_cast<size_t>(v) < n) is_input[static_cast<size_t>(v)] = true;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const fb::Tensor* t = values->Get(static_cast<uint32_t>(i))->val_as_Tensor();
    if (t == nullptr || t->allocation_info() == nullptr || t->sizes() == nullptr) continue;
    Result<size_t> nbytes = checked_nbytes(static_cast<ScalarType>(t->scalar_type()),
                                           {t->sizes()->data(), t->sizes()->size()});
    if (!nbytes.ok()) continue;
    PlannedBuffer b;
    b.value = static_cast<int64_t>(i);
    b.arena = static_cast<int32_t>(t->allocation_info()->memory_id());
    b.offset = static_cast<int64_t>(
        static_cast<uint64_t>(t->allocation_info()->memory_offset_low()) |
        (static_cast<uint64_t>(t->allocation_info()->memory_offset_high()) << 32));
    b.bytes = (static_cast<int64_t>(*nbytes) + 15) / 16 * 16;
    b.begin = first[i] == kUnseen ? 0 : first[i];
    b.end = last[i] == kUnseen ? b.begin : last[i];
    b.op = is_input[i] ? "input" : first_op[i].empty() ? "unused" : first_op[i];
    if (to_end[i]) b.end = end;
    if (t->data_buffer_idx() > 0) b.begin = 0, b.end = end, b.op = "state";  // mutable state
    // A Move target never holds data of its own: moves replace it before any read (a cond
    // result); it takes memory at one instant only, its first reference.
    if (move_target[i]) b.end = b.begin;
    buffers.push_back(std::move(b));
  }
  return buffers;
}

// What the planned memory of a method costs: `planned` is the arenas' total, `activations` every
// planned tensor side by side (no reuse), `lower_bound` the largest set of planned tensors live at
// one instruction (no placement can use less).
struct MemoryStats {
  int64_t planned = 0;
  int64_t activations = 0;
  int64_t lower_bound = 0;
};

MemoryStats memory_stats(const fb::ExecutionPlan* plan, std::span<const int64_t> arenas) {
  MemoryStats stats;
  for (int64_t a : arenas) stats.planned += a;
  int64_t instructions = 0;
  const std::vector<PlannedBuffer> buffers = plan_lifetimes(plan, &instructions);
  for (const PlannedBuffer& b : buffers) stats.activations += b.bytes;
  stats.lower_bound = live_bytes_peak(buffers).bytes;
  return stats;
}

struct IoInfo {
  std::string tag;
  bool is_tensor = false;
  TensorInfo tensor{};
};

struct DelegateInfo {
  std::string backend, where;
  int64_t blob_bytes = -1;  // -1: unknown (inline data or a bad index)
  std::vector<std::string> spec_keys;
  std::vector<std::pair<std::string, std::string>> nodes;  // name, op (compile spec ember.nodes)
  // An XnnpackBackend delegate's nodes and Ember's verdict (tools/inspect_xnnpack.h), where the
  // build has the payload reader; empty otherwise.
  std::string xnnpack_text, xnnpack_json;
};

#if EMBER_HAVE_XNNPACK_FORMAT
// The XNNPACK payload of delegate `d`, described as text and JSON.
void describe_xnnpack(const Program& program, const fb::BackendDelegateDataReference& ref,
                      DelegateInfo& info) {
  const fb::Program* root = program.flatbuffer();
  FreeableBuffer blob;
  if (ref.location() == fb::DataLocation::INLINE) {
    const auto* inline_data = root->backend_delegate_data();
    if (inline_data != nullptr && ref.index() < inline_data->size() &&
        inline_data->Get(ref.index())->data() != nullptr) {
      const auto* bytes = inline_data->Get(ref.index())->data();
      blob = FreeableBuffer(bytes->data(), bytes->size(), nullptr, nullptr);
    }
  } else {
    Result<FreeableBuffer> segment = program.load_segment(ref.index(), SegmentType::Backend);
    if (segment.ok()) blob = std::move(*segment);
  }
  const std::span<const uint8_t> bytes(blob.bytes(), blob.size());
  info.xnnpack_text = xnnpack_delegate_text(bytes, program.named_data(), "      ");
  info.xnnpack_json = xnnpack_delegate_json(bytes, program.named_data());
}
#endif

// The lines "name<TAB>op" of the compile spec `ember.nodes` that Ember's lowering stores.
std::vector<std::pair<std::string, std::string>> parse_nodes(
    const flatbuffers::Vector<uint8_t>* v) {
  std::vector<std::pair<std::string, std::string>> out;
  if (v == nullptr) return out;
  const std::string text(v->begin(), v->end());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    const size_t tab = line.find('\t');
    if (!line.empty()) {
      out.emplace_back(line.substr(0, tab), tab == std::string::npos ? "" : line.substr(tab + 1));
    }
    pos = end + 1;
  }
  return out;
}

// One quantize or dequantize call: what it converts, and its quantization parameters.
struct QuantCall {
  std::string op;                   // "quantize_per_tensor", "dequantize_per_channel", ...
  int64_t input = -1, output = -1;  // value ids
  std::string from, to;             // dtypes
  std::vector<int32_t> shape;
  // a number, "N values" (a constant tensor), "vID (computed at run time)", or "none"
  std::string scale, zero_point;
  int64_t axis = -1;  // per channel
  int64_t quant_min = 0, quant_max = 0;
};

struct MethodReport {
  std::string name;
  std::vector<QuantCall> quant_calls;
  std::vector<IoInfo> inputs, outputs;
  std::vector<std::pair<std::string, int>> operator_calls;
  std::vector<DelegateInfo> delegates;
  int64_t num_constants = 0, constant_bytes = 0, num_external = 0, external_bytes = 0;
  std::vector<int64_t> arenas;
  size_t num_instructions = 0;
  MemoryStats memory;
  std::vector<std::string> executorch_blockers;  // why ExecuTorch's runtime cannot run it
};

// What stops ExecuTorch's runtime from running a method: operators it does not register, and
// delegates of backends it does not register (Ember's own cpu and loopback among them).
std::vector<std::string> executorch_blockers_of(const MethodReport& r) {
  std::vector<std::string> why;
  for (const auto& [op, n] : r.operator_calls) {
    if (!executorch_registers_operator(op)) why.push_back("operator " + op);
  }
  for (const DelegateInfo& d : r.delegates) {
    if (!executorch_registers_backend(d.backend)) why.push_back("delegate backend " + d.backend);
  }
  return why;
}

// The quantize/dequantize ops whose arguments are (input, scale, zero point, [axis,] quant_min,
// quant_max, dtype, ...): PyTorch's quantized_decomposed ops and their Cortex-M twins.
bool is_quant_op(const std::string& name) {
  for (const char* prefix :
       {"quantized_decomposed::quantize_per_", "quantized_decomposed::dequantize_per_",
        "cortex_m::quantize_per_tensor", "cortex_m::dequantize_per_tensor"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::optional<QuantCall> quant_call(const fb::ExecutionPlan* plan, const std::string& op_name,
                                    const fb::KernelCall* call) {
  const auto* values = plan->values();
  const auto* args = call->args();
  if (values == nullptr || args == nullptr || args->size() < 7) return std::nullopt;
  auto value = [&](uint32_t i) -> const fb::EValue* {
    const int32_t id = args->Get(i);
    return id >= 0 && static_cast<uint32_t>(id) < values->size() ? values->Get(id) : nullptr;
  };
  auto tensor = [&](uint32_t i) -> const fb::Tensor* {
    const fb::EValue* v = value(i);
    return v != nullptr ? v->val_as_Tensor() : nullptr;
  };
  auto number = [&](uint32_t i) -> std::string {
    const fb::EValue* v = value(i);
    if (v == nullptr) return "?";
    std::ostringstream text;
    if (const fb::Double* d = v->val_as_Double()) {
      text << d->double_val();
    } else if (const fb::Int* n = v->val_as_Int()) {
      text << n->int_val();
    } else if (const fb::Tensor* t = v->val_as_Tensor()) {
      // A constant (its bytes in the program or a .ptd), or a value the method computes (PT2E's
      // dynamic quantization: choose_qparams's result).
      const bool constant = (t->data_buffer_idx() > 0 && t->allocation_info() == nullptr) ||
                            t->extra_tensor_info() != nullptr;
      int64_t count = 1;
      if (t->sizes() != nullptr)
        for (int32_t size : *t->sizes()) count *= size;
      if (constant) {
        text << count << " values";
      } else {
        text << "v" << args->Get(i) << " (computed at run time)";
      }
    } else {
      text << "none";
    }
    return text.str();
  };
  auto integer = [&](uint32_t i) -> int64_t {
    const fb::EValue* v = value(i);
    const fb::Int* n = v != nullptr ? v->val_as_Int() : nullptr;
    return n != nullptr ? n->int_val() : 0;
  };
  const fb::Tensor* in = tensor(0);
  const fb::Tensor* out = tensor(args->size() - 1);
  if (in == nullptr || out == nullptr) return std::nullopt;
  QuantCall q;
  q.op = op_name.substr(op_name.find("::") + 2);
  q.op = q.op.substr(0, q.op.find('.'));
  q.input = args->Get(0);
  q.output = args->Get(args->size() - 1);
  q.from = to_string(static_cast<ScalarType>(in->scalar_type()));
  q.to = to_string(static_cast<ScalarType>(out->scalar_type()));
  if (in->sizes() != nullptr) q.shape.assign(in->sizes()->begin(), in->sizes()->end());
  q.scale = number(1);
  q.zero_point = number(2);
  uint32_t next = 3;
  if (q.op.find("per_channel") != std::string::npos) q.axis = integer(next++);
  q.quant_min = integer(next);
  q.quant_max = integer(next + 1);
  return q;
}

Result<IoInfo> io_info(const MethodMeta& meta, size_t i, bool input) {
  Result<Tag> tag = input ? meta.input_tag(i) : meta.output_tag(i);
  if (!tag.ok()) return tag.error();
  IoInfo info;
  info.tag = to_string(*tag);
  if (*tag == Tag::Tensor) {
    Result<TensorInfo> t = input ? meta.input_tensor_info(i) : meta.output_tensor_info(i);
    if (!t.ok()) return t.error();
    info.is_tensor = true;
    info.tensor = *t;
  }
  return info;
}

std::string shape_text(std::span<const int32_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

Result<std::vector<MethodReport>> method_reports(const Program& program) {
  const fb::Program* root = program.flatbuffer();
  std::vector<MethodReport> reports;
  for (size_t m = 0; m < program.num_methods(); ++m) {
    Result<std::string_view> name = program.get_method_name(m);
    if (!name.ok()) return name.error();
    Result<MethodMeta> meta = program.method_meta(*name);
    if (!meta.ok()) return meta.error();
    MethodReport r;
    r.name = std::string(*name);
    for (size_t i = 0; i < meta->num_inputs(); ++i) {
      Result<IoInfo> info = io_info(*meta, i, true);
      if (!info.ok()) return info.error();
      r.inputs.push_back(*info);
    }
    for (size_t i = 0; i < meta->num_outputs(); ++i) {
      Result<IoInfo> info = io_info(*meta, i, false);
      if (!info.ok()) return info.error();
      r.outputs.push_back(*info);
    }
    for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
      Result<int64_t> size = meta->memory_planned_buffer_size(i);
      if (!size.ok()) return size.error();
      r.arenas.push_back(*size);
    }
    r.num_instructions = meta->num_instructions();
    const fb::ExecutionPlan* plan = *program.plan(*name);
    r.memory = memory_stats(plan, r.arenas);
    std::map<std::string, int> counts;
    std::vector<std::string> order;
    if (plan->chains() != nullptr) {
      for (const fb::Chain* chain : *plan->chains()) {
        if (chain->instructions() == nullptr) continue;
        for (const fb::Instruction* ins : *chain->instructions()) {
          const fb::KernelCall* call = ins->instr_args_as_KernelCall();
          if (call == nullptr || plan->operators() == nullptr || call->op_index() < 0 ||
              static_cast<uint32_t>(call->op_index()) >= plan->operators()->size()) {
            continue;
          }
          const fb::Operator* op = plan->operators()->Get(static_cast<uint32_t>(call->op_index()));
          std::string op_name = op->name() ? op->name()->str() : "?";
          if (op->overload() && op->overload()->size() > 0) op_name += "." + op->overload()->str();
          if (counts[op_name]++ == 0) order.push_back(op_name);
          if (is_quant_op(op_name)) {
            if (std::optional<QuantCall> q = quant_call(plan, op_name, call)) {
              r.quant_calls.push_back(std::move(*q));
            }
          }
        }
      }
    }
    for (const std::string& op : order) r.operator_calls.emplace_back(op, counts[op]);
    if (plan->delegates() != nullptr) {
      for (const fb::BackendDelegate* d : *plan->delegates()) {
        const auto* ref = d->processed();
        std::string where = ref == nullptr ? "?"
                            : ref->location() == fb::DataLocation::INLINE
                                ? "inline " + std::to_string(ref->index())
                                : "segment " + std::to_string(ref->index());
        DelegateInfo info;
        info.backend = d->id() ? d->id()->str() : "?";
        info.where = where;
        if (ref != nullptr && ref->location() == fb::DataLocation::SEGMENT &&
            root->segments() != nullptr && ref->index() < root->segments()->size()) {
          info.blob_bytes = static_cast<int64_t>(root->segments()->Get(ref->index())->size());
        }
        if (d->compile_specs() != nullptr) {
          for (const fb::CompileSpec* cs : *d->compile_specs()) {
            const std::string key = cs->key() ? cs->key()->str() : "";
            if (key == "ember.nodes") {
              info.nodes = parse_nodes(cs->value());
            } else {
              info.spec_keys.push_back(key);
            }
          }
        }
#if EMBER_HAVE_XNNPACK_FORMAT
        if (info.backend == "XnnpackBackend" && ref != nullptr)
          describe_xnnpack(program, *ref, info);
#endif
        r.delegates.push_back(std::move(info));
      }
    }
    if (plan->values() != nullptr) {
      for (const fb::EValue* v : *plan->values()) {
        const fb::Tensor* t = v->val_as_Tensor();
        if (t == nullptr || t->sizes() == nullptr) continue;
        Result<size_t> nbytes = checked_nbytes(static_cast<ScalarType>(t->scalar_type()),
                                               {t->sizes()->data(), t->sizes()->size()});
        const int64_t bytes = nbytes.ok() ? static_cast<int64_t>(*nbytes) : 0;
        const fb::ExtraTensorInfo* extra = t->extra_tensor_info();
        if (extra != nullptr && extra->location() == fb::TensorDataLocation::EXTERNAL) {
          ++r.num_external;
          r.external_bytes += bytes;
        } else if (t->data_buffer_idx() > 0 && t->allocation_info() == nullptr) {
          ++r.num_constants;
          r.constant_bytes += bytes;
        }
      }
    }
    r.executorch_blockers = executorch_blockers_of(r);
    reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace

Error write_plan_picture(const Program& program, const std::string& method,
                         const std::string& path) {
  Result<const fb::ExecutionPlan*> plan = program.plan(method);
  if (!plan.ok()) return plan.error();
  Result<MethodMeta> meta = program.method_meta(method);
  if (!meta.ok()) return meta.error();
  PlanPicture picture;
  picture.method = method;
  for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    Result<int64_t> size = meta->memory_planned_buffer_size(i);
    if (!size.ok()) return size.error();
    picture.arena_bytes.push_back(*size);
  }
  picture.buffers = plan_lifetimes(*plan, &picture.instructions);
  return write_plan_svg(picture, path);
}

Result<std::vector<std::string>> executorch_blockers(const Program& program) {
  Result<std::vector<MethodReport>> reports = method_reports(program);
  if (!reports.ok()) return reports.error();
  std::vector<std::string> why;
  for (const MethodReport& r : *reports) {
    for (const std::string& b : r.executorch_blockers) {
      const std::string item = "method '" + r.name + "': " + b;
      if (std::find(why.begin(), why.end(), item) == why.end()) why.push_back(item);
    }
  }
  return why;
}

Result<std::string> inspect_program(const Program& program, bool json) {
  const fb::Program* root = program.flatbuffer();
  Result<std::vector<MethodReport>> collected = method_reports(program);
  if (!collected.ok()) return collected.error();
  const std::vector<MethodReport>& reports = *collected;

  const fb::SubsegmentOffsets* cs = root->constant_segment();
  const bool deprecated_constants =
      cs == nullptr || cs->offsets() == nullptr || cs->offsets()->size() == 0;
  const char* constant_location =
      deprecated_constants ? "inline constant_buffer (deprecated)" : "constant segment";
  // The program's own named data: key and stored bytes (the segment it names).
  std::vector<std::pair<std::string, int64_t>> named;
  if (root->named_data() != nullptr) {
    for (const fb::NamedData* nd : *root->named_data()) {
      int64_t bytes = -1;
      if (root->segments() != nullptr && nd->segment_index() < root->segments()->size()) {
        bytes = static_cast<int64_t>(root->segments()->Get(nd->segment_index())->size());
      }
      named.emplace_back(nd->key() ? nd->key()->str() : "?", bytes);
    }
  }
  std::ostringstream out;
  const ExtendedHeader& h = program.header();
  if (json) {
    out << "{\"file_size\": " << program.file_size()
        << ", \"extended_header\": " << (h.present ? "true" : "false")
        << ", \"segments\": " << (root->segments() ? root->segments()->size() : 0)
        << ", \"named_data\": [";
    for (size_t i = 0; i < named.size(); ++i) {
      out << (i ? ", " : "") << "{\"key\": " << json_string(named[i].first)
          << ", \"bytes\": " << named[i].second << "}";
    }
    out << "], \"methods\": [";
    for (size_t m = 0; m < reports.size(); ++m) {
      const MethodReport& r = reports[m];
      out << (m ? ", " : "") << "{\"name\": " << json_string(r.name);
      for (int pass = 0; pass < 2; ++pass) {
        const auto& list = pass == 0 ? r.inputs : r.outputs;
        out << ", \"" << (pass == 0 ? "inputs" : "outputs") << "\": [";
        for (size_t i = 0; i < list.size(); ++i) {
          const IoInfo& io = list[i];
          out << (i ? ", " : "") << "{\"kind\": " << json_string(io.tag);
          if (io.is_tensor) {
            out << ", \"dtype\": " << json_string(to_string(io.tensor.dtype)) << ", \"shape\": [";
            for (size_t d = 0; d < io.tensor.sizes.size(); ++d)
              out << (d ? ", " : "") << io.tensor.sizes[d];
            out << "], \"dim_order\": [";
            for (size_t d = 0; d < io.tensor.dim_order.size(); ++d)
              out << (d ? ", " : "") << static_cast<int>(io.tensor.dim_order[d]);
            out << "], \"dynamism\": " << json_string(dynamism_name(io.tensor.dynamism))
                << ", \"memory_planned\": " << (io.tensor.memory_planned ? "true" : "false");
          }
          out << "}";
        }
        out << "]";
      }
      out << ", \"executorch\": {\"version\": " << json_string(executorch_version())
          << ", \"runs\": " << (r.executorch_blockers.empty() ? "true" : "false")
          << ", \"blockers\": [";
      for (size_t i = 0; i < r.executorch_blockers.size(); ++i)
        out << (i ? ", " : "") << json_string(r.executorch_blockers[i]);
      out << "]}";
      out << ", \"operators\": [";
      for (size_t i = 0; i < r.operator_calls.size(); ++i) {
        out << (i ? ", " : "") << "{\"name\": " << json_string(r.operator_calls[i].first)
            << ", \"calls\": " << r.operator_calls[i].second << "}";
      }
      out << "], \"quantization\": [";
      for (size_t i = 0; i < r.quant_calls.size(); ++i) {
        const QuantCall& q = r.quant_calls[i];
        out << (i ? ", " : "") << "{\"op\": " << json_string(q.op) << ", \"input\": " << q.input
            << ", \"output\": " << q.output << ", \"from\": " << json_string(q.from)
            << ", \"to\": " << json_string(q.to) << ", \"shape\": [";
        for (size_t d = 0; d < q.shape.size(); ++d) out << (d ? ", " : "") << q.shape[d];
        out << "], \"scale\": " << json_string(q.scale)
            << ", \"zero_point\": " << json_string(q.zero_point) << ", \"axis\": " << q.axis
            << ", \"quant_min\": " << q.quant_min << ", \"quant_max\": " << q.quant_max << "}";
      }
      out << "], \"delegates\": [";
      for (size_t i = 0; i < r.delegates.size(); ++i) {
        const DelegateInfo& d = r.delegates[i];
        out << (i ? ", " : "") << "{\"backend\": " << json_string(d.backend)
            << ", \"processed\": " << json_string(d.where) << ", \"blob_bytes\": " << d.blob_bytes
            << ", \"compile_specs\": [";
        for (size_t k = 0; k < d.spec_keys.size(); ++k)
          out << (k ? ", " : "") << json_string(d.spec_keys[k]);
        out << "], \"nodes\": [";
        for (size_t k = 0; k < d.nodes.size(); ++k) {
          out << (k ? ", " : "") << "{\"name\": " << json_string(d.nodes[k].first)
              << ", \"op\": " << json_string(d.nodes[k].second) << "}";
        }
        out << "]";
        if (!d.xnnpack_json.empty()) out << ", \"xnnpack\": " << d.xnnpack_json;
        out << "}";
      }
      out << "], \"constants\": {\"count\": " << r.num_constants
          << ", \"bytes\": " << r.constant_bytes
          << ", \"location\": " << json_string(constant_location)
          << ", \"external_count\": " << r.num_external
          << ", \"external_bytes\": " << r.external_bytes << "}, \"planned_arenas\": [";
      for (size_t i = 0; i < r.arenas.size(); ++i) {
        out << (i ? ", " : "") << "{\"memory_id\": " << i + 1 << ", \"bytes\": " << r.arenas[i]
            << "}";
      }
      out << "], \"memory\": {\"planned_bytes\": " << r.memory.planned
          << ", \"activation_bytes\": " << r.memory.activations
          << ", \"lower_bound_bytes\": " << r.memory.lower_bound << "}";
      out << ", \"instructions\": " << r.num_instructions << "}";
    }
    out << "]}\n";
    return out.str();
  }
  out << "file: " << program.file_size() << " bytes, "
      << (h.present ? "extended header, segment base " + std::to_string(h.segment_base_offset)
                    : std::string("no extended header"))
      << ", " << (root->segments() ? root->segments()->size() : 0) << " segment(s)\n";
  if (!named.empty()) {
    out << "named data (backends' weights, one copy per key): " << named.size() << " key(s)\n";
    for (const auto& [key, bytes] : named) out << "  " << key << ": " << bytes << " bytes\n";
  }
  for (const MethodReport& r : reports) {
    out << "method '" << r.name << "': " << r.num_instructions << " instruction(s)\n";
    for (int pass = 0; pass < 2; ++pass) {
      const auto& list = pass == 0 ? r.inputs : r.outputs;
      out << "  " << (pass == 0 ? "inputs" : "outputs") << ":" << (list.empty() ? " none" : "")
          << "\n";
      for (size_t i = 0; i < list.size(); ++i) {
        const IoInfo& io = list[i];
        out << "    " << i << ": " << io.tag;
        if (io.is_tensor) {
          out << " " << to_string(io.tensor.dtype) << " " << shape_text(io.tensor.sizes) << " ";
          bool permuted = false;
          for (size_t d = 0; d < io.tensor.dim_order.size(); ++d)
            permuted = permuted || io.tensor.dim_order[d] != d;
          if (permuted) {
            out << "dim order";
            for (uint8_t d : io.tensor.dim_order) out << " " << static_cast<int>(d);
            out << ", ";
          }
          out << dynamism_name(io.tensor.dynamism)
              << (io.tensor.dynamism == ShapeDynamism::Static ? "" : " (sizes are upper bounds)")
              << (io.tensor.memory_planned ? ", planned" : ", caller-provided");
        }
        out << "\n";
      }
    }
    out << "  operators:" << (r.operator_calls.empty() ? " none" : "") << "\n";
    for (const auto& [op, n] : r.operator_calls) out << "    " << op << " x" << n << "\n";
    if (!r.quant_calls.empty()) {
      out << "  quantization: " << r.quant_calls.size() << " quantize/dequantize call(s)\n";
      for (const QuantCall& q : r.quant_calls) {
        out << "    v" << q.input << " " << q.from << " " << shape_text(q.shape) << " -> v"
            << q.output << " " << q.to << ": " << q.op;
        if (q.axis >= 0) out << " (axis " << q.axis << ")";
        out << ", scale " << q.scale << ", zero point " << q.zero_point << ", range ["
            << q.quant_min << ", " << q.quant_max << "]\n";
      }
    }
    out << "  delegates:" << (r.delegates.empty() ? " none" : "") << "\n";
    for (size_t i = 0; i < r.delegates.size(); ++i) {
      const DelegateInfo& d = r.delegates[i];
      out << "    " << i << ": " << d.backend << " (" << d.where;
      if (d.blob_bytes >= 0) out << ", " << d.blob_bytes << " bytes";
      out << ")";
      for (const std::string& k : d.spec_keys) out << " spec " << k;
      out << (d.nodes.empty() ? "\n" : ", " + std::to_string(d.nodes.size()) + " node(s):\n");
      for (const auto& [name, op] : d.nodes) out << "      " << name << " (" << op << ")\n";
      out << d.xnnpack_text;
    }
    out << "  constants: " << r.num_constants << " (" << r.constant_bytes << " bytes, "
        << constant_location << ")";
    if (r.num_external > 0)
      out << "; external: " << r.num_external << " (" << r.external_bytes << " bytes, .ptd)";
    out << "\n  planned memory:";
    if (r.arenas.empty()) out << " none";
    for (size_t i = 0; i < r.arenas.size(); ++i)
      out << (i ? "," : "") << " arena " << i + 1 << ": " << r.arenas[i] << " bytes";
    out << "\n  memory: planned " << r.memory.planned << " bytes, activations "
        << r.memory.activations << " bytes, lower bound " << r.memory.lower_bound << " bytes\n";
    out << "  ExecuTorch " << executorch_version()
        << "'s runtime: " << (r.executorch_blockers.empty() ? "runs it" : "cannot run it (");
    for (size_t i = 0; i < r.executorch_blockers.size(); ++i)
      out << (i ? "; " : "") << r.executorch_blockers[i];
    out << (r.executorch_blockers.empty() ? "\n" : ")\n");
  }
  return out.str();
}

}  // namespace ember::tools
