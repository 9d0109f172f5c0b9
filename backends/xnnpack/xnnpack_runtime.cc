#include "backends/xnnpack/xnnpack_runtime.h"

#include <memory>
#include <new>
#include <utility>

#include "backends/cpu/cpu_runtime.h"
#include "backends/xnnpack/payload.h"
#include "backends/xnnpack/translate.h"

namespace ember::xnn {
namespace {

// The engine's handle and what its builds read: the weight table, which views the blob.
struct XnnHandle {
  std::unique_ptr<WeightTable> weights;
  DelegateHandle* engine = nullptr;
};

class XnnpackBackend final : public Backend {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec> specs) const override {
    if (processed == nullptr || processed->data() == nullptr) {
      return fail(Error::InvalidArgument, "XNNPACK delegate: no processed blob");
    }
    const std::span<const uint8_t> blob(processed->bytes(), processed->size());
    Result<Payload> p = read_payload(blob);
    if (!p.ok()) return p.error();
    Result<Translation> t = translate(*p, context.named_data);
    if (!t.ok()) return t.error();
    // The engine trusts graphs its parser verified: the translation goes through the same checks
    // as a blob of Ember's compiler (a round trip of the small graph; weights are keys only).
    Result<cpu::CpuGraph> g = cpu::parse(cpu::serialize(t->graph));
    if (!g.ok()) {
      return add_error_context(g.error(), "XNNPACK delegate: the translated graph is invalid");
    }
    auto h = std::make_unique<XnnHandle>();
    h->weights = std::move(t->weights);
    Result<DelegateHandle*> engine =
        cpu::init_graph(std::move(*g), context, specs, h->weights.get());
    if (!engine.ok()) return add_error_context(engine.error(), "XNNPACK delegate");
    h->engine = *engine;
    return reinterpret_cast<DelegateHandle*>(h.release());
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                std::span<EValue*> args) const override {
    if (handle == nullptr) return fail(Error::DelegateInvalidHandle, "XNNPACK delegate: no handle");
    return cpu::runtime_backend()->execute(context, reinterpret_cast<XnnHandle*>(handle)->engine,
                                           args);
  }

  void destroy(DelegateHandle* handle) const override {
    auto* h = reinterpret_cast<XnnHandle*>(handle);
    if (h == nullptr) return;
    cpu::runtime_backend()->destroy(h->engine);
    delete h;
  }
};

}  // namespace

const Backend* runtime_backend() {
  static const XnnpackBackend backend;
  return &backend;
}

Error register_runtime_backend() { return register_backend(kBackendName, runtime_backend()); }

}  // namespace ember::xnn
