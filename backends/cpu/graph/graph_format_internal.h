// The blob format's pieces shared between its files: the version serialize writes and parse
// requires (graph_serialize.cc, graph_parse.cc), the size limit parse and checked_numel share
// (graph_format.cc), and the per-op parameter checks parse runs (graph_verify.cc).
//
//   EMBER_TRY(internal::check_params(op, i));  // after read_params, before the op is trusted
//   if (root->version() != internal::kVersion) return internal::invalid_blob("...");
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/cpu/graph/graph_format.h"
#include "runtime/core/error.h"

namespace ember::cpu::internal {

// 2: dynamic batch symbols; 3: quantized convolutions; 4: grouped int8/int4 linears; 5: a
// flatbuffer (graph/cpu_graph.fbs) instead of the hand-written layout that began with "EMBRCPU1";
// 6: each op's parameters in a table of its kind's (Op.params), named fields instead of Op's
// positional lists of ints and floats, which a version-5 blob holds and this parse never reads.
inline constexpr uint32_t kVersion = 6;

// The most elements a tensor may hold (checked_numel), and so a weight's bytes, at most four each.
inline constexpr int64_t kMaxNumel = int64_t{1} << 40;

// Every refusal of a blob is an InvalidProgram whose message says what is wrong: `why` becomes
// this thread's error message (last_error_message()).
inline Error invalid_blob(const std::string& why) {
  return fail(Error::InvalidProgram, "%s", why.c_str());
}

// Checks one op's inputs and parameter values (`op_index` names it in the message); tensor ids
// were checked by the caller, and that the parameters are of the kind's type by parse's reader.
// InvalidProgram with the reason where one is out of range, or the kind has no check (an OpKind
// appended without one is refused, never built unchecked).
Error check_params(const OpDesc& op, size_t op_index);

}  // namespace ember::cpu::internal
