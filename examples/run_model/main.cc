// Runs the "forward" method of a .pte with all-ones inputs and prints the first output values,
// using only the installed Ember package (find_package(ember)). Programs compiled with
// `ember compile --backend loopback` or `--backend cpu` (when the package has it) run too.
//
//   run_model model.pte [weights.ptd]
#include <cstdio>
#include <vector>

#include "backends/loopback/loopback_runtime.h"
#include "runtime/executor/module.h"
#if RUN_MODEL_CPU_BACKEND
#include "backends/cpu/cpu_runtime.h"
#endif

namespace {

// Backends are registered explicitly, once, before a program that delegates to them loads: a
// program whose delegate names an unregistered backend fails to load, naming it.
ember::Error register_backends() {
  if (ember::Error e = ember::loopback::register_loopback_backend(); e != ember::Error::Ok) {
    return e;
  }
#if RUN_MODEL_CPU_BACKEND
  if (ember::Error e = ember::cpu::register_runtime_backend(); e != ember::Error::Ok) return e;
#endif
  return ember::Error::Ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: run_model MODEL.pte [WEIGHTS.ptd]\n");
    return 2;
  }
  if (register_backends() != ember::Error::Ok) {
    std::fprintf(stderr, "error: %s\n", ember::last_error_message());
    return 1;
  }
  ember::ModuleOptions options;
  if (argc > 2) options.data_path = argv[2];
  ember::Module module(argv[1], options);
  ember::Result<ember::MethodMeta> meta = module.method_meta("forward");
  if (!meta.ok()) {
    std::fprintf(stderr, "error: %s\n", ember::last_error_message());
    return 1;
  }
  std::vector<ember::OwnedTensor> inputs;
  std::vector<ember::EValue> values;
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    ember::Result<ember::TensorInfo> info = meta->input_tensor_info(i);
    if (!info.ok() || info->dtype != ember::ScalarType::Float) {
      std::fprintf(stderr, "error: input %zu is not a float tensor\n", i);
      return 1;
    }
    ember::Result<ember::OwnedTensor> t =
        ember::OwnedTensor::zeros(info->dtype, {info->sizes.begin(), info->sizes.end()});
    if (!t.ok()) return 1;
    float* p = t->tensor().data<float>();
    for (int64_t k = 0; k < t->tensor().numel(); ++k) p[k] = 1.0f;
    inputs.push_back(std::move(*t));
  }
  for (ember::OwnedTensor& t : inputs) values.push_back(t.evalue());
  ember::Result<std::vector<ember::EValue>> outputs = module.forward(values);
  if (!outputs.ok()) {
    std::fprintf(stderr, "error: %s\n", ember::last_error_message());
    return 1;
  }
  const ember::Tensor& out = (*outputs)[0].to_tensor();
  std::printf("output 0: %lld elements, first %g\n", static_cast<long long>(out.numel()),
              static_cast<double>(out.data<float>()[0]));
  return 0;
}
