// Test-side encoding of element values, independent of the library's own conversions:
// float16 goes through the compiler's _Float16, bfloat16 through truncation of values that
// are exactly representable (the tests only encode such values).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "zccl/zccl.h"

namespace zccl_harness {

inline size_t sizeOf(zcclDataType_t type) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return sizes[type];
}

inline bool isFloat(zcclDataType_t type) { return type >= zcclFloat16; }

inline double bf16ToDouble(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

// Reads element i of a buffer of `type` as a double (exact for every type but 64-bit
// integers beyond 2^53, which the tests never produce).
inline double load(zcclDataType_t type, const void* buffer, size_t i) {
  switch (type) {
    case zcclInt8:
      return static_cast<const int8_t*>(buffer)[i];
    case zcclUint8:
      return static_cast<const uint8_t*>(buffer)[i];
    case zcclInt32:
      return static_cast<const int32_t*>(buffer)[i];
    case zcclUint32:
      return static_cast<const uint32_t*>(buffer)[i];
    case zcclInt64:
      return static_cast<double>(static_cast<const int64_t*>(buffer)[i]);
    case zcclUint64:
      return static_cast<double>(static_cast<const uint64_t*>(buffer)[i]);
    case zcclFloat16:
      return static_cast<double>(static_cast<const _Float16*>(buffer)[i]);
    case zcclBfloat16:
      return bf16ToDouble(static_cast<const uint16_t*>(buffer)[i]);
    case zcclFloat32:
      return static_cast<const float*>(buffer)[i];
    case zcclFloat64:
      return static_cast<const double*>(buffer)[i];
    default:
      return std::nan("");
  }
}

// Writes `value`, which must be exactly representable in `type`.
inline void store(zcclDataType_t type, void* buffer, size_t i, double value) {
  switch (type) {
    case zcclInt8:
      static_cast<int8_t*>(buffer)[i] = static_cast<int8_t>(value);
      break;
    case zcclUint8:
      static_cast<uint8_t*>(buffer)[i] = static_cast<uint8_t>(value);
      break;
    case zcclInt32:
      static_cast<int32_t*>(buffer)[i] = static_cast<int32_t>(value);
      break;
    case zcclUint32:
      static_cast<uint32_t*>(buffer)[i] = static_cast<uint32_t>(value);
      break;
    case zcclInt64:
      static_cast<int64_t*>(buffer)[i] = static_cast<int64_t>(value);
      break;
    case zcclUint64:
      static_cast<uint64_t*>(buffer)[i] = static_cast<uint64_t>(value);
      break;
    case zcclFloat16:
      static_cast<_Float16*>(buffer)[i] = static_cast<_Float16>(value);
      break;
    case zcclBfloat16: {
      const float f = static_cast<float>(value);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      static_cast<uint16_t*>(buffer)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
    case zcclFloat32:
      static_cast<float*>(buffer)[i] = static_cast<float>(value);
      break;
    case zcclFloat64:
      static_cast<double*>(buffer)[i] = value;
      break;
    default:
      break;
  }
}

// The spacing of `type`'s values near `value`: one final rounding is within it.
inline double ulp(zcclDataType_t type, double value) {
  const int mantissaBits = type == zcclFloat16    ? 10
                           : type == zcclBfloat16 ? 7
                           : type == zcclFloat32  ? 23
                                                  : 52;
  const int minExponent = type == zcclFloat16    ? -14
                          : type == zcclBfloat16 ? -126
                          : type == zcclFloat32  ? -126
                                                 : -1022;
  int exponent = 0;
  std::frexp(value, &exponent);
  return std::ldexp(1.0, std::max(exponent - 1, minExponent) - mantissaBits);
}

// a op b for the reference results (avg accumulates as a sum).
inline double foldReference(zcclRedOp_t op, double a, double b) {
  switch (op) {
    case zcclProd:
      return a * b;
    case zcclMax:
      return std::max(a, b);
    case zcclMin:
      return std::min(a, b);
    default:
      return a + b;
  }
}

// A deterministic pseudo-random 64-bit value per (seed, a, b).
inline uint64_t mix(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ (a + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
               (b + 0x1234567ull) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xd6e8feb86cd93c35ull;
  x ^= x >> 29;
  return x;
}

}  // namespace zccl_harness
