// Module: the convenient front door. Owns the loader, the program, the weights file and every
// buffer a method needs, allocated on the heap.
//
//   ember::Module module("model.pte");                      // mmap by default
//   ember::OwnedTensor x = *ember::OwnedTensor::zeros(ScalarType::Float, {1, 3});
//   Result<std::vector<EValue>> out = module.forward({EValue::from_tensor(&x.tensor())});
//
// The core runtime (Program, Method) never allocates; Module does, and is the layer to bypass on
// targets that must control every byte. Outputs point into memory the Module owns and stay valid
// until the method runs again or the Module is destroyed. Not thread-safe: use one Module per
// thread, or share a Program and load one Method per thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/executor/flat_tensor_data_map.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/platform/loaders.h"

namespace ember {

enum class LoadMode {
  File,                      // read into memory
  Mmap,                      // memory-map
  MmapUseMlock,              // memory-map and lock; failing to lock is an error
  MmapUseMlockIgnoreErrors,  // memory-map and try to lock
};

struct ModuleOptions {
  LoadMode load_mode = LoadMode::Mmap;
  std::string data_path;  // a .ptd with the program's external weights; empty for none
  int num_threads = 0;    // threads for kernels; 0 keeps the current setting
  // The most memory a method may plan (its arenas together); a method planning more is refused
  // before anything is allocated. 0: no limit.
  size_t max_planned_bytes = 0;
};

// A tensor that owns its storage (16-byte aligned). Movable; the Tensor's address is stable.
class OwnedTensor {
 public:
  static Result<OwnedTensor> zeros(ScalarType dtype, std::vector<int32_t> sizes,
                                   std::vector<uint8_t> dim_order = {});
  Tensor& tensor() { return *tensor_; }
  const Tensor& tensor() const { return *tensor_; }
  EValue evalue() { return EValue::from_tensor(tensor_.get()); }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<Tensor> tensor_;
  std::unique_ptr<void, FreeDeleter> storage_;
};

class Module {
 public:
  explicit Module(std::string path, ModuleOptions options = {});
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Loads the program (and the .ptd, when given). Idempotent.
  Error load();
  const Program* program() const { return program_.get(); }
  const NamedDataMap* data_map() const { return data_map_.get(); }

  Result<std::vector<std::string>> method_names();
  Result<MethodMeta> method_meta(const std::string& name);
  // Loads a method with heap-allocated arenas and output buffers. Idempotent.
  Error load_method(const std::string& name);
  // The loaded method (loading it first when needed).
  Result<Method*> method(const std::string& name);

  // Sets the inputs, executes, and returns the outputs.
  Result<std::vector<EValue>> execute(const std::string& name, const std::vector<EValue>& inputs);
  Result<std::vector<EValue>> forward(const std::vector<EValue>& inputs) {
    return execute("forward", inputs);
  }

 private:
  struct LoadedMethod;

  std::string path_;
  ModuleOptions options_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<DataLoader> data_loader_;
  std::unique_ptr<FlatTensorDataMap> data_map_;
  std::unique_ptr<Program> program_;
  std::map<std::string, std::unique_ptr<LoadedMethod>> methods_;
};

}  // namespace ember
