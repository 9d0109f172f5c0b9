// Module: the convenient front door. Owns the loader, the program, the weights file and every
// buffer a method needs, allocated on the heap.
//
//   ember::Module module("model.pte");                      // mmap by default
//   // or, from bytes in memory: ember::Module module(std::span<const uint8_t>(bytes));
//   ember::OwnedTensor x = *ember::OwnedTensor::zeros(ScalarType::Float, {1, 3});
//   Result<std::vector<EValue>> out = module.forward({EValue::from_tensor(&x.tensor())});
//
// The core runtime (Program, Method) never allocates; Module does, and is the layer to bypass on
// targets that must control every byte. Outputs point into memory the Module owns and stay valid
// until the method runs again or the Module is destroyed. Not thread-safe: use one Module per
// thread, or share a Program and load one Method per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
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

// How a Module made from a program in memory holds its bytes.
enum class BufferMode {
  // The Module copies the bytes (into 64-byte-aligned memory) when it is constructed and owns the
  // copy: the caller's buffer may go away at once.
  Copy,
  // The Module reads the caller's bytes in place, never copying them: they must stay valid and
  // unchanged until the Module is destroyed (methods and delegates point into them), and be
  // aligned as ExecuTorch's writer aligns a file's start (16 bytes or more).
  Borrow,
};

struct ModuleOptions {
  LoadMode load_mode = LoadMode::Mmap;  // for the .pte path and the .ptd (data_path)
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
  // A program in the file `path`, loaded as options.load_mode says.
  explicit Module(std::string path, ModuleOptions options = {});
  // A program already in memory (a .pte's bytes), held as `mode` says; options.data_path still
  // names a .ptd file. Nothing is parsed here: a malformed program is reported by load() (and so
  // by every call that loads), as InvalidProgram or another Error with a message that names the
  // buffer. Copy mode's allocation failing is reported there too (MemoryAllocationFailed).
  explicit Module(std::span<const uint8_t> pte, ModuleOptions options = {},
                  BufferMode mode = BufferMode::Copy);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Loads the program (and the .ptd, when given), after registering the portable kernels and the
  // llm ones (llama::*, runtime/kernels/llm/llm.h). Idempotent.
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
  struct FreeDeleter {
    void operator()(void* p) const;
  };

  std::string path_;                                   // empty for a program in memory
  std::span<const uint8_t> buffer_;                    // the program's bytes when made from memory
  std::unique_ptr<uint8_t, FreeDeleter> buffer_copy_;  // BufferMode::Copy: the bytes buffer_ views
  bool from_buffer_ = false;
  bool copy_failed_ = false;
  ModuleOptions options_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<DataLoader> data_loader_;
  std::unique_ptr<FlatTensorDataMap> data_map_;
  std::unique_ptr<Program> program_;
  std::map<std::string, std::unique_ptr<LoadedMethod>> methods_;
};

}  // namespace ember
