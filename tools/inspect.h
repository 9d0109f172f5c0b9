// `ember inspect`: what a program holds, as text or JSON.
//
//   Result<std::string> report = inspect_program(program, file_size, /*json=*/true);
#pragma once

#include <string>

#include "runtime/executor/program.h"

namespace ember::tools {

// A report of every method: inputs and outputs (dtype, shape, dynamism), operator calls with
// counts, delegates, constants (count, bytes, where stored) and planned bytes per arena.
Result<std::string> inspect_program(const Program& program, bool json);

}  // namespace ember::tools
