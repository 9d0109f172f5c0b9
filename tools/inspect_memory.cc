#include "tools/inspect_memory.h"

#include <sstream>

#include "backends/builtin_runtime.h"

namespace ember::tools {

Result<std::string> inspect_memory(Module& module, bool json) {
  if (Error e = backends::register_builtin_runtime_backends(); e != Error::Ok) return e;
  Result<std::vector<std::string>> names = module.method_names();
  if (!names.ok()) return names.error();
  std::ostringstream out;
  if (json) out << "{\"methods\": [";
  for (size_t m = 0; m < names->size(); ++m) {
    const std::string& name = (*names)[m];
    Result<MethodMeta> meta = module.method_meta(name);
    if (!meta.ok()) return meta.error();
    Result<Method*> method = module.method(name);  // loads it: delegates init, weights read
    if (!method.ok()) return method.error();
    uint64_t planned = 0;
    for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
      Result<int64_t> size = meta->memory_planned_buffer_size(i);
      if (!size.ok()) return size.error();
      planned += static_cast<uint64_t>(*size);
    }
    const size_t own = meta->method_allocator_bytes();
    size_t delegated = 0;
    std::vector<Method::DelegateInfo> infos;
    for (size_t d = 0; d < (*method)->num_delegates(); ++d) {
      Result<Method::DelegateInfo> info = (*method)->delegate_info(d);
      if (!info.ok()) return info.error();
      delegated += info->method_allocator_bytes;
      infos.push_back(*info);
    }
    if (json) {
      out << (m ? ", " : "") << "{\"name\": \"" << name
          << "\", \"method_allocator_bytes\": " << own + delegated << ", \"method_bytes\": " << own
          << ", \"planned_bytes\": " << planned
          << ", \"delegate_scratch_bytes\": " << (*method)->delegate_scratch_bytes()
          << ", \"delegates\": [";
    } else {
      out << "method '" << name << "':\n  method allocator: " << own + delegated << " bytes ("
          << own << " for the method's values and instructions, " << delegated
          << " taken by delegates at init)\n  planned arenas: " << planned << " bytes\n";
      if (const size_t shared = (*method)->delegate_scratch_bytes(); shared > 0) {
        out << "  delegate scratch: " << shared
            << " bytes, what the delegates compute in during a call, shared by them (they run "
               "one at a time: the largest one's share)\n";
      }
    }
    for (size_t d = 0; d < infos.size(); ++d) {
      const Method::DelegateInfo& info = infos[d];
      const backends::DelegateMemory dm = backends::delegate_memory(info.backend, info.handle);
      if (json) {
        out << (d ? ", " : "") << "{\"index\": " << d << ", \"backend\": \"" << info.backend
            << "\", \"method_allocator_bytes\": " << info.method_allocator_bytes;
        if (dm.known) {
          out << ", \"weight_bytes\": " << dm.weights
              << ", \"activation_bytes\": " << dm.activations
              << ", \"scratchpad_bytes\": " << dm.scratchpad << ", \"heap_bytes\": " << dm.heap
              << ", \"shared_scratch_bytes\": " << dm.shared_scratch;
        }
        out << "}";
        continue;
      }
      out << "  delegate " << d << " (" << info.backend << "): " << info.method_allocator_bytes
          << " bytes of the method allocator";
      if (dm.known) {
        out << ": weights " << dm.weights << ", activations " << dm.activations << ", scratchpad "
            << dm.scratchpad << " (of these two, " << dm.shared_scratch
            << " in the delegate scratch); the heap grew by " << dm.heap
            << " bytes during its init (weights read as stored, oneDNN's primitives and JIT "
               "code)";
      }
      out << "\n";
    }
    if (json) out << "]}";
  }
  if (json) out << "]}\n";
  return out.str();
}

}  // namespace ember::tools
