// IEEE binary16 and bfloat16 storage types with float conversions.
// float -> half rounds to nearest, ties to even; NaN stays NaN (quiet); overflow gives Inf.
#pragma once

#include <cstdint>
#include <cstring>

namespace zccl {

struct float16_t {
  uint16_t bits;
};
struct bfloat16_t {
  uint16_t bits;
};

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline float toFloat(bfloat16_t value) {
  return bitsToFloat(static_cast<uint32_t>(value.bits) << 16);
}

inline bfloat16_t toBfloat16(float value) {
  const uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return bfloat16_t{static_cast<uint16_t>((bits >> 16) | 0x0040u)};  // quiet NaN, sign kept
  }
  const uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return bfloat16_t{static_cast<uint16_t>((bits + roundingBias) >> 16)};
}

float toFloat(float16_t value);
float16_t toFloat16(float value);

}  // namespace zccl
