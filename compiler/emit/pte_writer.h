// Writers of the .pte program and .ptd data files, following docs/pte-format.md §8 so that
// ExecuTorch's runtime loads what Ember writes.
//
//   Result<WrittenProgram> w = write_program(spec);
//   write_file("model.pte", w->pte);  if (!w->ptd.empty()) write_file("model.ptd", w->ptd);
//
// Constants go in one constant segment (each aligned to 16), initial values of mutable tensors in
// a mutable-data segment, delegate blobs in segments of their own (identical blobs stored once),
// backends' named data (ProgramSpec::named_data) in segments named by the program's named_data
// (one per distinct byte string) or, when external, in the .ptd;
// the 32-byte eh00 header is written whenever there is segment data. External tensors go to the
// .ptd, one segment per distinct byte string, keyed by their `fqn`.
#pragma once

#include <string>
#include <vector>

#include "compiler/emit/program_spec.h"
#include "runtime/core/result.h"

namespace ember::emit {

struct WrittenProgram {
  std::vector<uint8_t> pte;
  std::vector<uint8_t> ptd;  // empty when no tensor is External
};

// InvalidArgument (with a message naming the method and value) for a spec the format cannot hold:
// an index out of range, a list member after its list, constant bytes of the wrong size, two
// External tensors with one key but different bytes or layouts.
Result<WrittenProgram> write_program(const ProgramSpec& spec);

struct NamedTensor {
  std::string key;
  ScalarType dtype;
  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;  // empty: contiguous
  std::vector<uint8_t> data;
};

// A .ptd file holding `tensors` (identical bytes share one segment).
std::vector<uint8_t> write_ptd(const std::vector<NamedTensor>& tensors);

// Writes `bytes` to `path`. AccessFailed naming the path on failure.
Error write_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace ember::emit
