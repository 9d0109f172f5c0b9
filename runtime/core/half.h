// IEEE binary16 (Half) and bfloat16 (BFloat16) value types with float conversion.
//
//   Half h(1.5f);            // round to nearest, ties to even
//   float f = h;             // exact
//   BFloat16 b = BFloat16::from_bits(0x3f80);  // 1.0
//
// Conversions follow ATen's: float -> half/bfloat16 rounds to nearest even, NaN stays NaN,
// overflow goes to infinity.
#pragma once

#include <bit>
#include <cstdint>

namespace ember {

struct Half {
  uint16_t bits = 0;

  Half() = default;
  Half(float value) : bits(from_float(value)) {}  // NOLINT: implicit like c10::Half
  static constexpr Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  operator float() const { return to_float(bits); }  // NOLINT

  static uint16_t from_float(float value);
  static float to_float(uint16_t bits);
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  BFloat16(float value) : bits(from_float(value)) {}  // NOLINT: implicit like c10::BFloat16
  static constexpr BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  operator float() const {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
  }  // NOLINT

  static uint16_t from_float(float value) {
    const uint32_t u = std::bit_cast<uint32_t>(value);
    if ((u & 0x7fffffffu) > 0x7f800000u)
      return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
    const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding) >> 16);
  }
};

inline float Half::to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // Subnormal half: normalise into a float.
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    out = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(out);
}

inline uint16_t Half::from_float(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: scale so that rounding happens at the half subnormal step.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal: +-0
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent, round the mantissa to 10 bits (ties to even).
  uint32_t result = abs - 0x38000000u;
  result += 0xfffu + ((result >> 13) & 1u);
  return static_cast<uint16_t>(sign | (result >> 13));
}

}  // namespace ember
