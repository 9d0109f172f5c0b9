#include "runtime/executor/header.h"

namespace ember {

Result<ExtendedHeader> ExtendedHeader::parse(const uint8_t* data, size_t size) {
  ExtendedHeader h;
  if (size < 12 || std::memcmp(data + 8, "eh00", 4) != 0) return h;
  EMBER_CHECK(size >= 8 + kMinLength, Error::InvalidProgram, "extended header cut short: %zu bytes",
              size);
  h.present = true;
  h.length = read_le<uint32_t>(data + 12);
  EMBER_CHECK(h.length >= kMinLength, Error::InvalidProgram,
              "extended header length %u is below the minimum of %u", h.length, kMinLength);
  h.program_size = read_le<uint64_t>(data + 16);
  h.segment_base_offset = read_le<uint64_t>(data + 24);
  if (h.length >= 32) {
    EMBER_CHECK(size >= 40, Error::InvalidProgram, "extended header cut short: %zu bytes", size);
    h.segment_data_size = read_le<uint64_t>(data + 32);
  }
  return h;
}

}  // namespace ember
