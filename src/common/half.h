// IEEE binary16 and bfloat16 storage types with float conversions.
// float -> half rounds to nearest, ties to even; NaN stays NaN (quiet); overflow gives Inf.
// The same code on the CPU and in CUDA kernels (bit for bit, NaN payloads included).
#pragma once

#include <cstdint>
#include <cstring>

#include "common/host_device.h"

namespace zccl {

struct float16_t {
  uint16_t bits;
};
struct bfloat16_t {
  uint16_t bits;
};

ZCCL_HOST_DEVICE inline uint32_t floatBits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

ZCCL_HOST_DEVICE inline float bitsToFloat(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

ZCCL_HOST_DEVICE inline float toFloat(bfloat16_t value) {
  return bitsToFloat(static_cast<uint32_t>(value.bits) << 16);
}

ZCCL_HOST_DEVICE inline bfloat16_t toBfloat16(float value) {
  // A select rather than an early return, so that loops of conversions vectorize.
  const uint32_t bits = floatBits(value);
  const uint32_t quietNan = (bits >> 16) | 0x0040u;  // sign kept
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return bfloat16_t{static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded)};
}

ZCCL_HOST_DEVICE inline float toFloat(float16_t value) {
  const uint32_t sign = static_cast<uint32_t>(value.bits & 0x8000u) << 16;
  const uint32_t exponent = (value.bits >> 10) & 0x1fu;
  uint32_t mantissa = value.bits & 0x3ffu;
  if (exponent == 0x1f) {
    // NaN comes out quiet, as the F16C instruction makes it.
    return bitsToFloat(sign | (mantissa != 0 ? 0x7fc00000u : 0x7f800000u) | (mantissa << 13));
  }
  if (exponent != 0) return bitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bitsToFloat(sign);
  // Subnormal half: every one is a normal float; shift the leading one into place.
  int shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  mantissa &= 0x3ffu;
  return bitsToFloat(sign | ((113u - static_cast<uint32_t>(shift)) << 23) | (mantissa << 13));
}

ZCCL_HOST_DEVICE inline float16_t toFloat16(float value) {
  const uint32_t bits = floatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    return float16_t{static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  }
  if (magnitude >= 0x477ff000u) return float16_t{static_cast<uint16_t>(sign | 0x7c00u)};
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= -14) {
    // Normal half: drop 13 mantissa bits, rounding to nearest even; a carry may bump
    // the exponent, which is still correct (and the overflow case was handled above).
    const uint32_t rebased = magnitude - (112u << 23);
    const uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
    return float16_t{static_cast<uint16_t>(sign | (rounded >> 13))};
  }
  if (exponent < -25) return float16_t{sign};  // below half the smallest subnormal
  // Subnormal half: value = mantissa * 2^-24 with the implicit one made explicit.
  const uint32_t full = (magnitude & 0x7fffffu) | 0x800000u;
  const int shift = -exponent - 1;  // 14..24: bits to drop so that the unit is 2^-24
  const uint32_t kept = full >> shift;
  const uint32_t rest = full & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t roundUp = (rest > half || (rest == half && (kept & 1u))) ? 1u : 0u;
  return float16_t{static_cast<uint16_t>(sign | (kept + roundUp))};
}

}  // namespace zccl
