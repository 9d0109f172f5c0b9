// Reads the archive torch.export.save writes (`.pt2`) into the IR, with no Python involved.
//
//   StatusOr<std::unique_ptr<ir::Program>> p = import_pt2_file("model.pt2");
//   if (!p.ok()) { std::cerr << p.status().message() << "\n"; return 1; }
//   std::cout << ir::print_program(**p);
//
// The archive (a stored ZIP, zip.h) holds torch's serialized ExportedProgram (models/model.json,
// schema in torch/_export/serde/schema.py) and the weights and constants as raw bytes. The reader
// translates it into Ember's own exported-program document (docs/exported-program.md) and hands
// that to the `.ep` importer (exported_program.h), so both formats share every later check and
// pass. Refused, with a message naming what: another schema major version or archive version,
// node targets outside the ATen, symbolic-int and higher-order ops Ember has schemas for (all
// listed at once), argument kinds and signature entries Ember has no form for, missing or short
// weight files, unbounded dynamic dims. Never throws or aborts on a malformed archive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::importer {

// The serialized-ExportedProgram schema major version and the archive version this reader knows.
inline constexpr int64_t kPt2SchemaMajor = 8;
inline constexpr const char* kPt2ArchiveVersion = "0";

// The archive as an exported-program file (header, JSON, weights: exported_program.h's input).
// The result owns its bytes; `archive` is only read.
ir::StatusOr<std::shared_ptr<std::vector<uint8_t>>> pt2_to_exported_program(
    std::shared_ptr<const std::vector<uint8_t>> archive);

ir::StatusOr<std::unique_ptr<ir::Program>> import_pt2(
    std::shared_ptr<const std::vector<uint8_t>> archive);
ir::StatusOr<std::unique_ptr<ir::Program>> import_pt2_file(const std::string& path);

// True when `path` names a .pt2 archive: its extension, or the ZIP magic at its start.
bool is_pt2_file(const std::string& path);
// A .pt2 archive (is_pt2_file) or an exported-program file (.ep), by what `path` holds.
ir::StatusOr<std::unique_ptr<ir::Program>> import_program_file(const std::string& path);

// Appended to the support check's report for programs read from a .pt2: torch.export's default
// (training) IR holds ops that ExportedProgram.run_decompositions() turns into core ATen.
inline constexpr const char* kPt2DecomposeHint =
    "\nhint: this .pt2 holds ops Ember cannot lower; decompose them to core ATen before saving: "
    "`ep = ep.run_decompositions(); torch.export.save(ep, path)`";

}  // namespace ember::importer
