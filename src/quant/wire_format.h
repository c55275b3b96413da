// The wire format of quantized messages and the parameters that choose it.
//
// Message layout (little-endian), one contiguous buffer:
//   QuantHeader (24 bytes) | payload | padding to 4 bytes | per-group parameters
//   payload: one code per element; INT8 one byte each, INT4 two per byte (low nibble first),
//   INT2 four per byte (the first in the lowest two bits)
//   symmetric: one float32 scale per group; asymmetric: float32 scale then float32 offset
//   per group, stored as all scales followed by all offsets.
// Any element count: the last group may be short; nothing must divide by 8.
#pragma once

#include <cstdint>

namespace zccl {

enum class QuantScheme : uint8_t { kSymmetric = 0, kAsymmetric = 1 };
enum class Rounding : uint8_t { kNearestEven = 0, kStochastic = 1 };

// 512 elements per group: from there on the kernels run near their best speed (smaller groups
// pay a scale per few elements; docs/measurements.md), the scale costs 4 / 512 bytes per
// element (0.8% of an INT8 payload), and larger groups buy little speed and track outliers
// worse.
constexpr uint32_t kDefaultGroupSize = 512;
constexpr uint32_t kMinGroupSize = 32;
constexpr uint32_t kMaxGroupSize = 4096;

struct QuantParams {
  int bits = 8;  // 8, 4 or 2
  QuantScheme scheme = QuantScheme::kSymmetric;
  uint32_t groupSize = kDefaultGroupSize;  // a power of two in [32, 4096]
  Rounding rounding = Rounding::kNearestEven;
  uint64_t seed = 0;  // stochastic rounding, and smoothing's signs
  // Smoothing: every full group is rotated by a random-sign Walsh-Hadamard transform before it
  // is quantized, and back after it is decoded (group_math.h), so that an outlier no longer
  // sets the scale of its whole group.
  bool smoothing = false;
};

struct QuantHeader {
  uint32_t magic;
  uint8_t version;
  uint8_t bits;
  uint8_t scheme;
  uint8_t flags;  // kQuantSmoothed
  uint32_t groupSize;
  uint32_t smoothingSeed;  // the signs of a smoothed message's rotations
  uint64_t count;
};
static_assert(sizeof(QuantHeader) == 24, "the header is part of the wire format");
constexpr uint8_t kQuantSmoothed = 1;
constexpr uint32_t kQuantMagic = 0x544e515au;  // "ZQNT"
constexpr uint8_t kQuantVersion = 1;

}  // namespace zccl
