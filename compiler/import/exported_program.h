// Reads an exported-program file (docs/exported-program.md) into the IR, weights included.
//
//   StatusOr<std::unique_ptr<ir::Program>> p = import_exported_program_file("model.ep");
//   if (!p.ok()) { std::cerr << p.status().message() << "\n"; return 1; }
//   std::cout << ir::print_program(**p);
//
// Every field is validated (header offsets, JSON types, names, shapes, byte ranges, signature
// against weights); a malformed file gives an error naming the field, never a crash. Weights
// keep pointing into the file's bytes, which the program shares ownership of.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace ember::importer {

// The first bytes of every exported-program file.
inline constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'E', 'P', '\0'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kHeaderSize = 64;
inline constexpr size_t kAlignment = 64;

ir::StatusOr<std::unique_ptr<ir::Program>> import_exported_program(
    std::shared_ptr<const std::vector<uint8_t>> file);
ir::StatusOr<std::unique_ptr<ir::Program>> import_exported_program_file(const std::string& path);

// The whole of `path`, which must be a regular file (a directory, FIFO or device is refused,
// naming it, without blocking); for the importers of .ep and .pt2 files.
ir::StatusOr<std::shared_ptr<std::vector<uint8_t>>> read_whole_file(const std::string& path);

}  // namespace ember::importer
