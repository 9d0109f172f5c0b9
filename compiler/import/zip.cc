#include "compiler/import/zip.h"

#include <array>
#include <set>

namespace ember::importer {
namespace {

using ir::Status;
using ir::StatusOr;

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kEndOfDirectorySize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndOfDirectorySize = 56;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;

// Bounds-checked little-endian reads over the archive; `ok` turns false on the first read past
// the end, and every read then gives 0.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool has(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  uint64_t le(uint64_t offset, int width) {
    if (!has(offset, static_cast<uint64_t>(width))) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | bytes_[offset + static_cast<size_t>(i)];
    return v;
  }
  uint16_t u16(uint64_t offset) { return static_cast<uint16_t>(le(offset, 2)); }
  uint32_t u32(uint64_t offset) { return static_cast<uint32_t>(le(offset, 4)); }
  uint64_t u64(uint64_t offset) { return le(offset, 8); }
  bool ok() const { return ok_; }

 private:
  std::span<const uint8_t> bytes_;
  bool ok_ = true;
};

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

struct Directory {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

StatusOr<Directory> find_directory(Reader& r, uint64_t file_size) {
  if (file_size < kEndOfDirectorySize) {
    return Status::error("not a ZIP archive: " + std::to_string(file_size) +
                         " bytes, too few for an end-of-central-directory record");
  }
  // The record sits at the end, followed by a comment of at most 65535 bytes.
  uint64_t eocd = file_size - kEndOfDirectorySize;
  const uint64_t lowest = eocd > 0xFFFF ? eocd - 0xFFFF : 0;
  for (;; --eocd) {
    if (r.u32(eocd) == kEndOfDirectory &&
        eocd + kEndOfDirectorySize + r.u16(eocd + 20) == file_size) {
      break;
    }
    if (eocd == lowest) {
      return Status::error(
          "not a ZIP archive (no end-of-central-directory record): truncated or not a .pt2");
    }
  }
  if (r.u16(eocd + 4) != 0 || r.u16(eocd + 6) != 0) {
    return Status::error("multi-disk ZIP archives are not supported");
  }
  Directory d{r.u16(eocd + 10), r.u32(eocd + 12), r.u32(eocd + 16)};
  const bool saturated = d.entries == 0xFFFF || d.size == 0xFFFFFFFF || d.offset == 0xFFFFFFFF;
  if (saturated) {
    // ZIP64: the locator right before the record points at the 64-bit record.
    if (eocd < kZip64LocatorSize || r.u32(eocd - kZip64LocatorSize) != kZip64Locator) {
      return Status::error("ZIP64 archive without a ZIP64 end-of-central-directory locator");
    }
    const uint64_t at = r.u64(eocd - kZip64LocatorSize + 8);
    if (!r.has(at, kZip64EndOfDirectorySize) || r.u32(at) != kZip64EndOfDirectory) {
      return Status::error("the ZIP64 end-of-central-directory record lies outside the file");
    }
    if (r.u32(at + 16) != 0 || r.u32(at + 20) != 0) {
      return Status::error("multi-disk ZIP archives are not supported");
    }
    d = Directory{r.u64(at + 32), r.u64(at + 40), r.u64(at + 48)};
  }
  if (!r.has(d.offset, d.size)) {
    return Status::error("the central directory [" + std::to_string(d.offset) + ", +" +
                         std::to_string(d.size) + ") lies outside the file (" +
                         std::to_string(file_size) + " bytes)");
  }
  // Each entry takes at least a fixed header: a count beyond that is a corrupt record.
  if (d.entries > d.size / kCentralHeaderSize) {
    return Status::error("the central directory claims " + std::to_string(d.entries) +
                         " entries in " + std::to_string(d.size) + " bytes");
  }
  return d;
}

}  // namespace

bool is_zip_archive(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' && bytes[2] == 3 && bytes[3] == 4;
}

uint32_t crc32(std::span<const uint8_t> bytes) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

StatusOr<ZipArchive> ZipArchive::open(std::shared_ptr<const std::vector<uint8_t>> bytes) {
  if (bytes == nullptr) return Status::error("no archive");
  const std::span<const uint8_t> all(bytes->data(), bytes->size());
  Reader r(all);
  StatusOr<Directory> dir = find_directory(r, all.size());
  if (!dir.ok()) return dir.status();
  ZipArchive archive;
  archive.bytes_ = bytes;
  std::set<std::string, std::less<>> names;
  uint64_t at = dir->offset;
  const uint64_t end = dir->offset + dir->size;
  for (uint64_t i = 0; i < dir->entries; ++i) {
    const std::string where = "ZIP central directory entry " + std::to_string(i);
    if (at + kCentralHeaderSize > end || r.u32(at) != kCentralHeader) {
      return Status::error(where + ": bad signature or past the directory's end");
    }
    const uint16_t flags = r.u16(at + 8);
    const uint16_t method = r.u16(at + 10);
    const uint32_t crc = r.u32(at + 16);
    uint64_t compressed = r.u32(at + 20);
    uint64_t size = r.u32(at + 24);
    const uint16_t name_len = r.u16(at + 28);
    const uint16_t extra_len = r.u16(at + 30);
    const uint16_t comment_len = r.u16(at + 32);
    uint64_t local = r.u32(at + 42);
    const uint64_t next = at + kCentralHeaderSize + name_len + extra_len + comment_len;
    if (next > end) return Status::error(where + ": its name or extra fields run past the end");
    const auto* name_begin = reinterpret_cast<const char*>(all.data() + at + kCentralHeaderSize);
    std::string name(name_begin, name_len);
    const std::string entry = "ZIP entry '" + name + "'";
    // ZIP64 extended information: the 64-bit values of the fields saturated above, in order.
    uint64_t extra = at + kCentralHeaderSize + name_len;
    const uint64_t extra_end = extra + extra_len;
    while (extra + 4 <= extra_end) {
      const uint16_t id = r.u16(extra);
      const uint16_t len = r.u16(extra + 2);
      if (extra + 4 + len > extra_end) return Status::error(entry + ": malformed extra field");
      if (id == kZip64ExtraId) {
        uint64_t field = extra + 4;
        for (uint64_t* v : {&size, &compressed, &local}) {
          if (*v != 0xFFFFFFFF) continue;
          if (field + 8 > extra + 4 + len) return Status::error(entry + ": short ZIP64 field");
          *v = r.u64(field);
          field += 8;
        }
      }
      extra += 4 + len;
    }
    if ((flags & 1) != 0) return Status::error(entry + " is encrypted; not supported");
    if (method != 0) {
      return Status::error(entry + " is compressed (method " + std::to_string(method) +
                           "); Ember reads stored (uncompressed) entries only, as "
                           "torch.export.save writes them");
    }
    if (compressed != size) {
      return Status::error(entry + ": stored, but its compressed size " +
                           std::to_string(compressed) + " differs from its size " +
                           std::to_string(size));
    }
    if (r.u16(at + 34) != 0) return Status::error(entry + ": on another disk");
    if (!names.insert(name).second) return Status::error(entry + " appears twice");
    // The local header repeats the name; its own extra field (alignment padding) may differ.
    if (!r.has(local, kLocalHeaderSize) || r.u32(local) != kLocalHeader) {
      return Status::error(entry + ": no local file header at offset " + std::to_string(local));
    }
    const uint16_t local_name_len = r.u16(local + 26);
    const uint16_t local_extra_len = r.u16(local + 28);
    if (local_name_len != name_len || !r.has(local + kLocalHeaderSize, name_len) ||
        std::string_view(reinterpret_cast<const char*>(all.data() + local + kLocalHeaderSize),
                         name_len) != name) {
      return Status::error(entry + ": the local header names another entry");
    }
    const uint64_t data = local + kLocalHeaderSize + local_name_len + local_extra_len;
    if (!r.has(data, size)) {
      return Status::error(entry + ": its " + std::to_string(size) + " bytes at offset " +
                           std::to_string(data) + " lie outside the file (" +
                           std::to_string(all.size()) + " bytes)");
    }
    std::span<const uint8_t> content = all.subspan(data, size);
    const uint32_t actual = crc32(content);
    if (actual != crc) {
      return Status::error(entry + ": CRC-32 mismatch (the directory says " + std::to_string(crc) +
                           ", the data gives " + std::to_string(actual) + "): corrupt archive");
    }
    archive.entries_.push_back({std::move(name), content});
    at = next;
  }
  if (!r.ok()) return Status::error("ZIP: a record lies outside the file");
  return archive;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  for (const ZipEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace ember::importer
