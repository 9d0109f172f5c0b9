// `ember run`: load a program, bind inputs (from .npy files or random), execute, write outputs.
//
//   RunOptions o; o.model = "add.pte"; o.inputs = {"a.npy", "b.npy"}; o.repeat = 20;
//   int status = run_command(o);   // prints outputs and latency; 0 on success
#pragma once

#include <string>
#include <vector>

#include "runtime/executor/module.h"

namespace ember::tools {

struct RunOptions {
  std::string model;
  std::string method = "forward";
  std::string ptd;
  std::vector<std::string> inputs;
  std::string output_dir;
  int repeat = 0;
  int threads = 0;
  unsigned seed = 0;
  std::string load_mode = "mmap";  // file | mmap | mlock | mlock-ignore
  bool profile = false;            // print per-op-kind and per-instruction times
  std::string trace;               // write Chrome trace events here (empty: none)
};

// Returns the process exit status; prints one line "error: ..." on failure.
int run_command(const RunOptions& options);

// Registers what the `ember` command's runtime carries beyond the portable kernels (which Module
// registers): the built-in backends and the kernel libraries ExecuTorch's flows write.
Error register_runtime();

// A method's inputs: from .npy files (C order, laid out as the method declares), or, with none,
// random values of the declared shapes from `seed` (floats in [-1, 1), integers in [0, 10)).
// Tensor inputs only: another kind is NotSupported, with the reason set.
Result<std::vector<OwnedTensor>> method_inputs(const MethodMeta& meta,
                                               const std::vector<std::string>& npy_files,
                                               unsigned seed);

}  // namespace ember::tools
