// libFuzzer target: any bytes as a .pte program -> Program::load, then for every method:
// load_method, bind zero inputs of the declared shapes and buffers for unplanned outputs, execute.
// Nothing may crash, hang, leak or read out of bounds (ASan + UBSan in the fuzz build).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/loaders.h"

namespace {

constexpr size_t kMaxBytes = 1 << 20;  // planned arenas, inputs and outputs: far above the seeds

struct Aligned {
  explicit Aligned(size_t n)
      : size(n), data(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 64) / 64 * 64))) {
    std::memset(data, 0, (n + 64) / 64 * 64);
  }
  ~Aligned() { std::free(data); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  size_t size;
  uint8_t* data;
};

void run_method(const ember::Program& program, std::string_view name) {
  ember::Result<ember::MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) return;
  std::vector<std::unique_ptr<Aligned>> buffers;
  std::vector<std::span<uint8_t>> arenas;
  size_t total = 0;
  for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
    ember::Result<int64_t> size = meta->memory_planned_buffer_size(i);
    if (!size.ok() || *size < 0 || (total += static_cast<size_t>(*size)) > kMaxBytes) return;
    buffers.push_back(std::make_unique<Aligned>(static_cast<size_t>(*size)));
    arenas.emplace_back(buffers.back()->data, buffers.back()->size);
  }
  const size_t pool_bytes = meta->method_allocator_bytes();
  if (pool_bytes > kMaxBytes) return;
  Aligned pool(pool_bytes);
  Aligned scratch(4096);
  ember::MemoryAllocator method_allocator(pool.data, pool.size);
  ember::MemoryAllocator temp(scratch.data, scratch.size);
  ember::HierarchicalAllocator planned(arenas);
  ember::MemoryManager memory{&method_allocator, &planned, &temp};
  ember::Result<ember::Method> method = program.load_method(name, &memory);
  if (!method.ok()) return;
  std::vector<ember::Tensor> inputs(meta->num_inputs());
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    ember::Result<ember::TensorInfo> info = meta->input_tensor_info(i);
    if (!info.ok() || info->nbytes > kMaxBytes) continue;
    buffers.push_back(std::make_unique<Aligned>(info->nbytes));
    ember::Result<ember::Tensor> t =
        ember::Tensor::make(info->dtype, info->sizes, info->dim_order, buffers.back()->data);
    if (!t.ok()) continue;
    inputs[i] = *t;
    (void)method->set_input(inputs[i], i);
  }
  for (size_t i = 0; i < meta->num_outputs(); ++i) {
    ember::Result<ember::TensorInfo> info = meta->output_tensor_info(i);
    if (!info.ok() || info->memory_planned || info->nbytes > kMaxBytes) continue;
    buffers.push_back(std::make_unique<Aligned>(info->nbytes));
    (void)method->set_output_data_ptr(buffers.back()->data, info->nbytes, i);
  }
  // A program may loop through JumpFalse: stop it long before libFuzzer's timeout would.
  method->set_max_instructions(100'000);
  (void)method->execute();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = ember::register_portable_kernels() == ember::Error::Ok;
  if (!registered) std::abort();  // a broken build, not an input
  Aligned bytes(size);
  if (size > 0) std::memcpy(bytes.data, data, size);
  ember::BufferDataLoader loader(bytes.data, size);
  ember::Result<ember::Program> program = ember::Program::load(&loader);
  if (!program.ok()) return 0;
  for (size_t m = 0; m < program->num_methods(); ++m) {
    ember::Result<std::string_view> name = program->get_method_name(m);
    if (name.ok()) run_method(*program, *name);
  }
  return 0;
}
