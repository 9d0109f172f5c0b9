// Loads a program from bytes and runs what it can: the corruption tests' probe
// (corruption_test.cc, xnnpack_corruption_test.cc) and their fuzz regressions.
#pragma once

#include <string>
#include <vector>

#include "tests/runtime/test_util.h"

namespace ember::testing {

struct Outcome {
  bool loaded = false;         // Program::load succeeded
  bool method_loaded = false;  // and load_method, for at least one method
  bool ran = false;            // and execute
  // Whether load_method or execute returned an Error (not a method this probe skipped: arenas
  // too large, inputs it cannot bind), and the first such Error's message.
  bool refused = false;
  std::string error;
};

// Loads, loads every method, binds zero inputs of the declared shapes and executes.
// `max_instructions` (when not 0) caps each execute, as the fuzz target does.
inline Outcome load_and_run(const std::vector<uint8_t>& file, size_t max_instructions = 0) {
  Outcome outcome;
  AlignedBytes bytes(file);
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    EXPECT_NE(std::string(last_error_message()), "") << "an error without a message";
    return outcome;
  }
  outcome.loaded = true;
  for (size_t m = 0; m < program->num_methods(); ++m) {
    Result<std::string_view> name = program->get_method_name(m);
    if (!name.ok()) continue;
    Result<MethodMeta> meta = program->method_meta(*name);
    if (!meta.ok()) continue;
    // Arenas as the (possibly corrupted) file asks, but capped: a corrupt size is refused.
    bool sane = true;
    for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
      Result<int64_t> size = meta->memory_planned_buffer_size(i);
      sane = sane && size.ok() && *size >= 0 && *size < (1 << 20);
    }
    if (!sane) continue;
    MethodMemory memory(*meta);
    Result<Method> method = program->load_method(*name, &memory.manager);
    if (!method.ok()) {
      if (!outcome.refused) outcome.error = last_error_message();
      outcome.refused = true;
      continue;
    }
    outcome.method_loaded = true;
    std::vector<std::vector<uint8_t>> storage;
    std::vector<Tensor> inputs;
    inputs.reserve(meta->num_inputs());
    bool bound = true;
    for (size_t i = 0; i < meta->num_inputs(); ++i) {
      Result<TensorInfo> info = meta->input_tensor_info(i);
      if (!info.ok() || info->nbytes > (1 << 20)) {
        bound = false;
        break;
      }
      storage.emplace_back(info->nbytes + 16, 0);
      Result<Tensor> t =
          Tensor::make(info->dtype, info->sizes, info->dim_order, storage.back().data());
      if (!t.ok()) {
        bound = false;
        break;
      }
      inputs.push_back(*t);
      if (method->set_input(inputs.back(), i) != Error::Ok) bound = false;
    }
    std::vector<std::vector<uint8_t>> outputs;
    for (size_t i = 0; i < meta->num_outputs(); ++i) {
      Result<TensorInfo> info = meta->output_tensor_info(i);
      if (!info.ok() || info->memory_planned || info->nbytes > (1 << 20)) continue;
      outputs.emplace_back(info->nbytes + 16, 0);
      (void)method->set_output_data_ptr(outputs.back().data(), info->nbytes, i);
    }
    if (max_instructions != 0) method->set_max_instructions(max_instructions);
    if (bound && method->execute() == Error::Ok) {
      outcome.ran = true;
    } else if (bound) {
      if (!outcome.refused) outcome.error = last_error_message();
      outcome.refused = true;
    }
  }
  return outcome;
}

}  // namespace ember::testing
