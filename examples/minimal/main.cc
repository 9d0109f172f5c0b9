// The smallest Ember application: load a .pte (fully verified), load its "forward", feed each
// float tensor input ones, run it, and print the first output's values. No heap of its own: the
// method's memory and arena are static buffers. Built against a selective kernel library
// (EMBER_SELECT_OPS_FROM, docs/runtime.md) it links only the kernels the program uses; its
// stripped size is in docs/runtime.md (scripts/size-report measures it).
//
//   ember_minimal model.pte
#include <cstdio>

#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/loaders.h"

namespace {

alignas(64) uint8_t g_pool[64 << 10];
alignas(64) uint8_t g_arena[1 << 20];
alignas(64) uint8_t g_scratch[64 << 10];
alignas(64) float g_inputs[1 << 16];

int fail(const char* what) {
  std::fprintf(stderr, "ember_minimal: %s: %s\n", what, ember::last_error_message());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ember_minimal model.pte\n");
    return 2;
  }
  if (ember::register_portable_kernels() != ember::Error::Ok) return fail("kernels");
  ember::Result<ember::FileDataLoader> file = ember::FileDataLoader::from(argv[1]);
  if (!file.ok()) return fail(argv[1]);
  ember::Result<ember::Program> program = ember::Program::load(&*file);
  if (!program.ok()) return fail("load");
  ember::Result<ember::MethodMeta> meta = program->method_meta("forward");
  if (!meta.ok()) return fail("forward");
  if (meta->num_memory_planned_buffers() > 1) {
    std::fprintf(stderr, "ember_minimal: the program plans %zu arenas; this app has one\n",
                 meta->num_memory_planned_buffers());
    return 1;
  }
  ember::MemoryAllocator method_allocator(g_pool, sizeof g_pool);
  ember::MemoryAllocator temp(g_scratch, sizeof g_scratch);
  std::span<uint8_t> arenas[] = {{g_arena, sizeof g_arena}};
  ember::HierarchicalAllocator planned(arenas);
  ember::MemoryManager memory{&method_allocator, &planned, &temp};
  ember::Result<ember::Method> method = program->load_method("forward", &memory);
  if (!method.ok()) return fail("load_method");

  // Every float tensor input: ones at its declared (upper-bound) sizes, one shared buffer.
  for (float& v : g_inputs) v = 1.f;
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    ember::Result<ember::TensorInfo> info = meta->input_tensor_info(i);
    if (!info.ok()) continue;  // a non-tensor input keeps its exported value
    if (info->dtype != ember::ScalarType::Float || info->nbytes > sizeof g_inputs) {
      std::fprintf(stderr, "ember_minimal: input %zu is not a float tensor of at most %zu bytes\n",
                   i, sizeof g_inputs);
      return 1;
    }
    ember::Result<ember::Tensor> t =
        ember::Tensor::make(ember::ScalarType::Float, info->sizes, info->dim_order, g_inputs);
    if (!t.ok() || method->set_input(*t, i) != ember::Error::Ok) return fail("set_input");
  }
  if (method->execute() != ember::Error::Ok) return fail("execute");
  ember::Result<ember::EValue> out = method->get_output(0);
  if (!out.ok() || !out->is_tensor()) return fail("output 0");
  const ember::Tensor& y = out->to_tensor();
  std::printf("output 0: %lld elements of %s:", static_cast<long long>(y.numel()),
              ember::to_string(y.dtype()));
  if (y.dtype() == ember::ScalarType::Float) {
    for (int64_t k = 0; k < y.numel() && k < 8; ++k) std::printf(" %g", y.data<float>()[k]);
  }
  std::printf("\n");
  return 0;
}
