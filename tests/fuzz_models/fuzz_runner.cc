// The differential fuzzer's batch driver: compiles and runs many exported programs in one process,
// so that a case costs its compile and run rather than a process start (fuzz_models.py).
//
//   ember_fuzz_runner MANIFEST
//   // MANIFEST: one case a line, "DIR FLOW CALLS INPUTS" (FLOW: portable, cpu or loopback); reads
//   // DIR/model.ep and DIR/in<C>_<I>.npy, writes DIR/<FLOW>.pte and DIR/<FLOW>_call<C>_out<I>.npy
//   // stdout: "@@ <line> ok|refused|invalid <message>" per case, flushed as each case ends
//
// A refusal is the compiler's error; "invalid" is a program the compiler wrote and the runtime
// would not load or run. A crash ends the process: the caller reruns the cases that have no line.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/builtin_compiler.h"
#include "backends/builtin_runtime.h"
#include "compiler/lower/pipeline.h"
#include "runtime/executor/module.h"
#include "tools/npy.h"

namespace {

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

void report(size_t line, const char* status, const std::string& message) {
  std::printf("@@ %zu %s %s\n", line, status, one_line(message).c_str());
  std::fflush(stdout);
}

// .npy has no bfloat16: the fuzzer writes a bfloat16 input as float32 (exact), made bfloat16 again
// here (its upper half, exact for such values).
void to_bfloat16(ember::tools::NpyArray& a) {
  const size_t n = a.data.size() / 4;
  std::vector<uint8_t> out(n * 2);
  for (size_t k = 0; k < n; ++k) {
    uint32_t bits = 0;
    std::memcpy(&bits, a.data.data() + 4 * k, 4);
    const uint16_t half = static_cast<uint16_t>(bits >> 16);
    std::memcpy(out.data() + 2 * k, &half, 2);
  }
  a.data = std::move(out);
  a.dtype = ember::ScalarType::BFloat16;
}

// Runs DIR/<flow>.pte on the calls' inputs; an empty string on success, else the reason.
std::string run_case(const std::string& dir, const std::string& flow, int calls, int inputs) {
  ember::Module module(dir + "/" + flow + ".pte");
  if (module.load() != ember::Error::Ok) {
    return std::string("load: ") + ember::last_error_message();
  }
  if (module.load_method("forward") != ember::Error::Ok) {
    return std::string("load method: ") + ember::last_error_message();
  }
  ember::Result<ember::MethodMeta> meta = module.method_meta("forward");
  if (!meta.ok()) return std::string("method meta: ") + ember::last_error_message();
  for (int c = 0; c < calls; ++c) {
    std::vector<ember::OwnedTensor> tensors;
    std::vector<ember::EValue> values;
    for (int i = 0; i < inputs; ++i) {
      const std::string path = dir + "/in" + std::to_string(c) + "_" + std::to_string(i) + ".npy";
      ember::Result<ember::tools::NpyArray> a = ember::tools::read_npy(path);
      if (!a.ok()) return "read " + path + ": " + ember::last_error_message();
      ember::Result<ember::TensorInfo> info = meta->input_tensor_info(static_cast<size_t>(i));
      std::span<const uint8_t> order;
      if (info.ok()) order = info->dim_order;
      if (info.ok() && info->dtype == ember::ScalarType::BFloat16 &&
          a->dtype == ember::ScalarType::Float) {
        to_bfloat16(*a);
      }
      ember::Result<ember::OwnedTensor> t = ember::tools::npy_in_layout(*a, order);
      if (!t.ok()) return "tensor " + path + ": " + ember::last_error_message();
      tensors.push_back(std::move(*t));
    }
    for (ember::OwnedTensor& t : tensors) values.push_back(t.evalue());
    ember::Result<std::vector<ember::EValue>> outs = module.forward(values);
    if (!outs.ok()) {
      return "execute call " + std::to_string(c) + ": " + ember::last_error_message();
    }
    for (size_t i = 0; i < outs->size(); ++i) {
      if (!(*outs)[i].is_tensor()) continue;
      const std::string path =
          dir + "/" + flow + "_call" + std::to_string(c) + "_out" + std::to_string(i) + ".npy";
      if (ember::tools::write_npy(path, (*outs)[i].to_tensor()) != ember::Error::Ok) {
        return "write " + path + ": " + ember::last_error_message();
      }
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ember_fuzz_runner MANIFEST\n");
    return 2;
  }
  if (const ember::ir::Status s = ember::backends::register_builtin_compiler_backends(); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (ember::backends::register_builtin_runtime_backends() != ember::Error::Ok) {
    std::fprintf(stderr, "error: register: %s\n", ember::last_error_message());
    return 1;
  }
  std::ifstream manifest(argv[1]);
  if (!manifest) {
    std::fprintf(stderr, "error: cannot read %s\n", argv[1]);
    return 1;
  }
  std::string text;
  for (size_t line = 0; std::getline(manifest, text); ++line) {
    std::istringstream fields(text);
    std::string dir, flow;
    int calls = 0, inputs = 0;
    if (!(fields >> dir >> flow >> calls >> inputs)) {
      report(line, "invalid", "bad manifest line: " + text);
      continue;
    }
    ember::lower::CompileOptions options;
    if (flow != "portable") options.backends.push_back(flow);
    ember::ir::StatusOr<ember::lower::CompileResult> r =
        ember::lower::compile_file(dir + "/model.ep", options);
    if (!r.ok()) {
      report(line, "refused", r.status().message());
      continue;
    }
    const std::string pte = dir + "/" + flow + ".pte";
    if (ember::emit::write_file(pte, r->files.pte) != ember::Error::Ok) {
      report(line, "invalid", "cannot write " + pte);
      continue;
    }
    const std::string failure = run_case(dir, flow, calls, inputs);
    if (failure.empty()) {
      report(line, "ok", "");
    } else {
      report(line, "invalid", failure);
    }
  }
  return 0;
}
