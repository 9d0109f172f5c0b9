// The .pte extended header (docs/pte-format.md §2.2) and little-endian reads.
//
//   Result<ExtendedHeader> h = ExtendedHeader::parse(first_64_bytes, n);
//   if (h.ok() && h->present) use(h->segment_base_offset);
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/result.h"

namespace ember {

template <typename T>
inline T read_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // this runtime targets little-endian machines only
  return v;
}

struct ExtendedHeader {
  static constexpr size_t kNumHeadBytes = 64;
  static constexpr uint32_t kMinLength = 24;

  bool present = false;
  uint32_t length = 0;
  uint64_t program_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;

  // Parses the header from the first bytes of a file. present is false when bytes 8..11 are not
  // "eh00". InvalidProgram for a header whose length is below 24 or that is cut short.
  static Result<ExtendedHeader> parse(const uint8_t* data, size_t size);
};

}  // namespace ember
