// `ember compile --verify`: the numerics of a delegated program against the portable kernels, at
// compile time, on sample inputs.
//
//   VerifyOptions v; v.tolerance = 1e-4;
//   ir::StatusOr<VerifyReport> r = verify_delegates(model, options, compiled, v);
//   std::fputs(format_report(*r, v).c_str(), stdout);
//
// The reference is the same model compiled without backends (every op on the portable kernels),
// run on the same inputs: the given .npy files, or random values of the declared shapes. Each
// delegate is checked alone: the model compiled with only that partition delegated (the lowering
// spec `partitions`, compiler/partition/to_backend.h), so its error is its own, seen at the
// program's outputs; then the whole delegated program. An error is the largest |delegated -
// reference| over an output's elements divided by the output's scale (its largest |reference|, at
// least 1); NaN against a number, or infinities of other signs, is an infinite error.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/lower/pipeline.h"

namespace ember::tools {

struct VerifyOptions {
  double tolerance = 1e-4;          // largest error a delegate may have
  std::vector<std::string> inputs;  // .npy files, one per input; empty: random
  unsigned seed = 0;                // for random inputs
};

struct VerifyReport {
  struct Row {
    size_t delegate = 0;  // index of the delegate call in the compiled program
    std::string backend;
    size_t partition = 0;
    size_t nodes = 0;
    double error = 0;   // worst over the outputs (see above)
    size_t output = 0;  // the output it occurs at
  };
  std::vector<Row> delegates;
  double whole = 0;  // the whole delegated program
  size_t whole_output = 0;
  size_t inputs = 0;
  bool random_inputs = true;
};

// Checks each delegate of `compiled` (compiled from `model` with `options`) and the whole program.
ir::StatusOr<VerifyReport> verify_delegates(const std::string& model,
                                            const lower::CompileOptions& options,
                                            const lower::CompileResult& compiled,
                                            const VerifyOptions& verify);

// The report as `ember compile --verify` prints it: a line per delegate, then the whole program.
std::string format_report(const VerifyReport& report, const VerifyOptions& verify);

// `options` with each backend limited to its partitions whose delegates pass `tolerance` (the
// `partitions` spec): what --verify=fallback recompiles. `failed` receives the count left out.
lower::CompileOptions without_failing(const lower::CompileOptions& options,
                                      const lower::CompileResult& compiled,
                                      const VerifyReport& report, double tolerance, size_t* failed);

}  // namespace ember::tools
