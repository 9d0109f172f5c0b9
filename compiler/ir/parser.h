// The IR's text form (parser): reads what print_program writes.
//
//   StatusOr<std::unique_ptr<Program>> p = parse_program(text);
//   if (!p.ok()) std::cerr << p.status().message();  // "line 4, column 17: unknown value %y"
//   std::string again = print_program(**p);           // identical to `text` when it was printed
//
// Values must be defined before they are used; subgraphs see only their own inputs and values.
// Weights parsed without hex data have no bytes (has_data() is false).
#pragma once

#include <memory>
#include <string_view>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::ir {

StatusOr<std::unique_ptr<Program>> parse_program(std::string_view text);

}  // namespace ember::ir
