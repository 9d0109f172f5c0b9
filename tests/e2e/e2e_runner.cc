// The end-to-end test's runner: loads a program once and executes it several times in a row, so a
// test can check state that persists across executions (buffers written in place, a KV cache).
//
//   ember_e2e_runner model.pte [--ptd model.ptd] --out DIR --call a.npy,b.npy --call c.npy,d.npy
//   // writes DIR/call<K>_out<I>.npy, and DIR/heap.txt: each call's heap allocations inside
//   // Method::execute; exit status 1 with "error: ..." on stderr on failure
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backends/builtin_runtime.h"
#include "runtime/executor/module.h"
#include "tests/support/heap_count.h"
#include "tools/npy.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "error: %s: %s\n", what.c_str(), ember::last_error_message());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, ptd, out_dir = ".";
  std::vector<std::vector<std::string>> calls;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--ptd" || a == "--out" || a == "--call") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--ptd") ptd = v;
      if (a == "--out") out_dir = v;
      if (a == "--call") calls.push_back(split(v));
    } else {
      model = a;
    }
  }
  if (ember::backends::register_builtin_runtime_backends() != ember::Error::Ok)
    return fail("register");
  ember::ModuleOptions options;
  options.data_path = ptd;
  ember::Module module(model, options);
  if (module.load() != ember::Error::Ok) return fail("load " + model);
  if (module.load_method("forward") != ember::Error::Ok) return fail("load method forward");
  ember::Result<ember::MethodMeta> meta = module.method_meta("forward");
  if (!meta.ok()) return fail("method meta");
  ember::Result<ember::Method*> found = module.method("forward");
  if (!found.ok()) return fail("method forward");
  ember::Method* method = *found;
  // Each call's heap allocations inside Method::execute (runtime rule 3: none), those oneDNN's
  // own execute made, and whether every input had the sizes the method declares (else a dynamic
  // size below the bound): "call C: N M B" lines.
  const std::string heap_path = out_dir + "/heap.txt";
  const std::unique_ptr<FILE, int (*)(FILE*)> heap_log(std::fopen(heap_path.c_str(), "w"),
                                                       &std::fclose);
  if (heap_log == nullptr) return fail("open " + heap_path);
  for (size_t c = 0; c < calls.size(); ++c) {
    std::vector<ember::OwnedTensor> tensors;
    std::vector<ember::EValue> inputs;
    bool at_bound = true;  // every input at the sizes the method declares (a dynamic one's bound)
    for (size_t i = 0; i < calls[c].size(); ++i) {
      const std::string& path = calls[c][i];
      ember::Result<ember::tools::NpyArray> a = ember::tools::read_npy(path);
      if (!a.ok()) return fail("read " + path);
      // In the layout the method declares (a channels-last input of ExecuTorch's exporter).
      ember::Result<ember::TensorInfo> info = meta->input_tensor_info(i);
      std::span<const uint8_t> order;
      if (info.ok()) order = info->dim_order;
      if (info.ok() &&
          !std::equal(a->shape.begin(), a->shape.end(), info->sizes.begin(), info->sizes.end())) {
        at_bound = false;
      }
      ember::Result<ember::OwnedTensor> t = ember::tools::npy_in_layout(*a, order);
      if (!t.ok()) return fail("tensor " + path);
      tensors.push_back(std::move(*t));
    }
    for (ember::OwnedTensor& t : tensors) inputs.push_back(t.evalue());
    if (inputs.size() != method->num_inputs()) return fail("call " + std::to_string(c) + " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (method->set_input(inputs[i], i) != ember::Error::Ok) return fail("set input");
    }
    int64_t allocations = 0, in_onednn = 0;
    {
      const ember::testing::HeapCount heap;
      if (method->execute() != ember::Error::Ok) return fail("execute call " + std::to_string(c));
      allocations = heap.count();
      in_onednn = heap.onednn();
    }
    std::fprintf(heap_log.get(), "call %zu: %lld %lld %d\n", c, static_cast<long long>(allocations),
                 static_cast<long long>(in_onednn), at_bound ? 1 : 0);
    for (size_t i = 0; i < method->num_outputs(); ++i) {
      ember::Result<ember::EValue> out = method->get_output(i);
      if (!out.ok()) return fail("output " + std::to_string(i));
      if (!out->is_tensor()) continue;
      const std::string path =
          out_dir + "/call" + std::to_string(c) + "_out" + std::to_string(i) + ".npy";
      if (ember::tools::write_npy(path, out->to_tensor()) != ember::Error::Ok) {
        return fail("write " + path);
      }
    }
  }
  return 0;
}
