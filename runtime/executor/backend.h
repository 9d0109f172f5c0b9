// The backend interface: how a delegate's processed blob becomes something that runs.
//
//   class MyBackend final : public Backend { ... };
//   static MyBackend backend;
//   EMBER_TRY(register_backend("MyBackend", &backend));  // explicit, before loading methods
//
// Lifecycle, for every DelegateCall target of a method: is_available() and init() at method
// load, execute() for each call, destroy() when the Method is destroyed. A backend that keeps
// pointers into its processed blob after init leaves it alone and the runtime keeps it alive until
// destroy(); a backend that copies what it needs calls `processed->free()` during init so the
// model is not held twice.
#pragma once

#include <span>
#include <string_view>

#include "runtime/core/evalue.h"
#include "runtime/executor/memory.h"
#include "runtime/executor/named_data_map.h"
#include "runtime/executor/observer.h"

namespace ember {

struct CompileSpec {
  std::string_view key;
  std::span<const uint8_t> value;
};

struct BackendInitContext {
  // The method allocator: lives as long as the Method. What a delegate keeps should come from
  // here (the caller owns memory); Method measures what each init takes (delegate_info) and
  // `ember inspect --memory` reports it. May be null when a backend is driven directly (tests).
  MemoryAllocator* allocator;
  std::string_view method_name;
  // The caller's .ptd map, or the program's; may be null. It outlives the method, so a delegate
  // may keep it and read it again in execute (the cpu backend does, for a new batch size).
  const NamedDataMap* named_data;
  // Memory the method's delegates share for what lives only within one of their calls (see
  // DelegateScratch); may be null. A delegate may take it from its start at every call, in init
  // and in execute (a build for a new size), and must keep nothing in it between calls.
  DelegateScratch* scratch = nullptr;
};

struct BackendExecuteContext {
  MemoryAllocator* temp;  // scratch, may be null
  // A profiler watching this execution, or null (the usual case). A backend may report the steps
  // it runs with on_delegate_step; it must cost nothing measurable when this is null.
  ExecutionObserver* observer = nullptr;
};

// Opaque per-delegate state a backend returns from init.
struct DelegateHandle;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual bool is_available() const = 0;
  virtual Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                                       std::span<const CompileSpec> compile_specs) const = 0;
  // `args`: the delegate's inputs then its outputs, as the DelegateCall lists them.
  virtual Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                        std::span<EValue*> args) const = 0;
  virtual void destroy(DelegateHandle* handle) const = 0;
};

// Registers `backend` under `name` (both must outlive every method that uses them). InvalidArgument
// for a name already registered; OutOfResources when the table (64 entries) is full.
Error register_backend(const char* name, const Backend* backend);

// The backend registered under `name`, or null.
const Backend* find_backend(std::string_view name);

}  // namespace ember
