// A reader for ZIP archives whose entries are stored (uncompressed), as torch.export.save writes.
//
//   StatusOr<ZipArchive> zip = ZipArchive::open(bytes);     // reads and checks the directory
//   if (!zip.ok()) { std::cerr << zip.status().message(); return 1; }
//   std::span<const uint8_t> json = zip->find("m/models/model.json")->data;
//
// `open` reads the central directory (ZIP64 records included), checks every entry's local header,
// byte range and CRC-32, and refuses compressed or encrypted entries, multi-disk archives and
// duplicate names, each with a message naming the entry. It never throws or aborts on malformed
// input. Entries point into `bytes`, which the archive shares ownership of.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"

namespace ember::importer {

// The first four bytes of a ZIP file that starts with a local file header ("PK\3\4").
bool is_zip_archive(std::span<const uint8_t> bytes);

// CRC-32 (ISO-HDLC, the ZIP checksum) of `bytes`.
uint32_t crc32(std::span<const uint8_t> bytes);

struct ZipEntry {
  std::string name;
  std::span<const uint8_t> data;  // the stored bytes, inside the archive's buffer
};

class ZipArchive {
 public:
  static ir::StatusOr<ZipArchive> open(std::shared_ptr<const std::vector<uint8_t>> bytes);

  // In central-directory order.
  const std::vector<ZipEntry>& entries() const { return entries_; }
  // The entry named exactly `name`, or null.
  const ZipEntry* find(std::string_view name) const;
  // The buffer the entries point into.
  const std::shared_ptr<const std::vector<uint8_t>>& bytes() const { return bytes_; }

 private:
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
  std::vector<ZipEntry> entries_;
};

}  // namespace ember::importer
