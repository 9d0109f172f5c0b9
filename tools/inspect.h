// `ember inspect`: what a program holds, as text or JSON.
//
//   Result<std::string> report = inspect_program(program, file_size, /*json=*/true);
#pragma once

#include <string>
#include <vector>

#include "runtime/executor/program.h"

namespace ember::tools {

// A report of every method: inputs and outputs (dtype, shape, dynamism), operator calls with
// counts, delegates, constants (count, bytes, where stored) and planned bytes per arena.
// Each method also says whether ExecuTorch's runtime runs it (tools/executorch_ops.h).
Result<std::string> inspect_program(const Program& program, bool json);

// Draws the memory plan of `method` as SVG at `path` (tools/plan_svg.h). NotFound for a method the
// program lacks, AccessFailed when the file cannot be written.
Error write_plan_picture(const Program& program, const std::string& method,
                         const std::string& path);

// What stops ExecuTorch's runtime from running `program`, one line per method and cause
// ("method 'forward': operator aten::cumprod.out", "method 'forward': delegate backend cpu");
// empty when it runs every method.
Result<std::vector<std::string>> executorch_blockers(const Program& program);

}  // namespace ember::tools
