// SHA-256 (FIPS 180-4), for the keys of external weights (contract C21: `fqn:sha256:<hex>`).
//
//   std::string hex = sha256_hex(bytes);   // 64 lowercase hex digits
//   std::array<uint8_t, 32> d = sha256(bytes);
//
// A small self-contained implementation: the compiler hashes each weight once while writing it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace ember::partition {

std::array<uint8_t, 32> sha256(std::span<const uint8_t> data);
std::string sha256_hex(std::span<const uint8_t> data);

}  // namespace ember::partition
