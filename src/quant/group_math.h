// The arithmetic of one quantization group, shared by the CPU kernels and the CUDA kernels
// so that both perform the same float32 operations in the same order. Host files that
// include it compile with -ffp-contract=off and CUDA files with --fmad=false: no fused
// multiply-add anywhere, which is what keeps the outputs bit-identical.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/host_device.h"
#include "quant/wire_format.h"

namespace zccl {

struct GroupStats {
  float absmax;
  float min;
  float max;
  bool nonFinite;  // any NaN or +-Inf (then the other fields are meaningless)
};

// Where the parts of a message lie, from its element count and format.
struct QuantLayout {
  size_t groups;
  size_t payloadBytes;
  size_t parametersOffset;  // header + payload padded to 4 bytes
  size_t totalBytes;
};

// Callers validate groupSize first (checkQuantParams); 0 is only guarded against.
ZCCL_HOST_DEVICE inline QuantLayout quantLayoutOf(uint64_t count, int bits, QuantScheme scheme,
                                                  uint32_t groupSize) {
  QuantLayout l;
  l.groups = groupSize == 0 ? 0 : static_cast<size_t>((count + groupSize - 1) / groupSize);
  l.payloadBytes = static_cast<size_t>((count * static_cast<uint64_t>(bits) + 7) / 8);
  l.parametersOffset = sizeof(QuantHeader) + (l.payloadBytes + 3) / 4 * 4;
  const size_t perGroup = scheme == QuantScheme::kSymmetric ? 4 : 8;
  l.totalBytes = l.parametersOffset + l.groups * perGroup;
  return l;
}

ZCCL_HOST_DEVICE inline bool isFiniteBits(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof(bits));
  return (bits & 0x7f800000u) != 0x7f800000u;
}

// |v|'s bits. Magnitudes order as their bits do, and NaN's lie above Inf's, so the largest
// bits of a group are its absmax, or tell that it holds NaN or Inf.
ZCCL_HOST_DEVICE inline uint32_t magnitudeBits(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof(bits));
  return bits & 0x7fffffffu;
}

// A symmetric group's statistics from its largest magnitudeBits: min and max are -absmax and
// absmax (a symmetric scale reads absmax only).
ZCCL_HOST_DEVICE inline GroupStats statsOfLargestMagnitude(uint32_t largestBits) {
  float absmax;
  memcpy(&absmax, &largestBits, sizeof(absmax));
  return GroupStats{absmax, -absmax, absmax, largestBits >= 0x7f800000u};
}

// Codes range: symmetric [-Q, Q] with Q = 2^(bits-1) - 1 (127, 7, 1: the most negative
// code stays unused, so that zero is exact and the range symmetric), asymmetric [0, L] with
// L = 2^bits - 1 (255, 15, 3).
ZCCL_HOST_DEVICE inline int codeLow(int bits, QuantScheme scheme) {
  return scheme == QuantScheme::kSymmetric ? -((1 << (bits - 1)) - 1) : 0;
}
ZCCL_HOST_DEVICE inline int codeHigh(int bits, QuantScheme scheme) {
  return scheme == QuantScheme::kSymmetric ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
}

// Packed codes: 8 / bits to a byte, the first in the lowest bits (INT4: low nibble first).
// Groups hold a multiple of 32 elements, so every group starts on a byte.
ZCCL_HOST_DEVICE inline uint32_t codesPerByte(int bits) { return 8u / static_cast<uint32_t>(bits); }

// Code `slot` of a packed byte; signed codes sign-extend from `bits`.
ZCCL_HOST_DEVICE inline uint8_t unpackCode(uint8_t byte, uint32_t slot, int bits, bool isSigned) {
  const unsigned mask = (1u << bits) - 1u;
  const unsigned code = (byte >> (slot * static_cast<unsigned>(bits))) & mask;
  const bool negative = isSigned && code > (mask >> 1);
  return static_cast<uint8_t>(negative ? code | ~mask : code);
}

// Code `code` in its place `slot` of a packed byte (two's complement for signed codes).
ZCCL_HOST_DEVICE inline uint8_t packedCode(uint8_t code, uint32_t slot, int bits) {
  const unsigned mask = (1u << bits) - 1u;
  return static_cast<uint8_t>((code & mask) << (slot * static_cast<unsigned>(bits)));
}

// Asymmetric codes are centred on the group's midpoint, so that neither x - offset nor
// (code - center) * scale can overflow even when max - min exceeds FLT_MAX.
ZCCL_HOST_DEVICE inline float centerOf(int bits, QuantScheme scheme) {
  return scheme == QuantScheme::kSymmetric ? 0.0f : static_cast<float>(codeHigh(bits, scheme)) / 2;
}

struct GroupScale {
  float scale;   // stored
  float offset;  // stored (asymmetric)
  float inv;     // applied to prescaled values
  float prescaledOffset;
  float prescale;  // a power of two, applied exactly, that keeps 1/scale finite for tiny ranges
};

// What a group holding NaN or Inf stores: one quiet-NaN bit pattern (0x7fc00000) for scale
// and offset on every device, so that messages compare byte for byte.
ZCCL_HOST_DEVICE inline GroupScale nonFiniteScale() {
  const uint32_t bits = 0x7fc00000u;
  float nan;
  memcpy(&nan, &bits, sizeof(nan));
  return GroupScale{nan, nan, 0.0f, 0.0f, 1.0f};
}

ZCCL_HOST_DEVICE inline GroupScale chooseScale(const GroupStats& s, int bits, QuantScheme scheme) {
  const float levels = static_cast<float>(scheme == QuantScheme::kSymmetric
                                              ? codeHigh(bits, scheme)
                                              : codeHigh(bits, scheme) - codeLow(bits, scheme));
  // +0.0f turns -0 into +0, so that every kernel set stores the same bits: SIMD and CUDA
  // reductions may find either zero as a group's min or max (an all-zero group's range
  // would otherwise be -0 - +0 = -0, a scale with its sign bit set on one device only).
  const float lo = s.min + 0.0f;
  const float hi = s.max + 0.0f;
  const double rangeExact = scheme == QuantScheme::kSymmetric
                                ? static_cast<double>(s.absmax)
                                : static_cast<double>(hi) - static_cast<double>(lo);
  const float rangeFloat = static_cast<float>(rangeExact);
  const float p = rangeFloat > 0.0f && rangeFloat < 0x1p-60f ? 0x1p64f : 1.0f;
  const float range = static_cast<float>(rangeExact * p);
  GroupScale g;
  g.prescale = p;
  g.scale = static_cast<float>(rangeExact * p / levels / p);
  g.inv = range > 0.0f ? static_cast<float>(levels / (rangeExact * p)) : 0.0f;
  g.offset = scheme == QuantScheme::kSymmetric ? 0.0f : lo * 0.5f + hi * 0.5f;
  g.prescaledOffset = g.offset * p;
  // Near FLT_MAX the rounded scale can make the extreme codes decode to Inf: step the
  // (positive) scale down one ulp at a time.
  const float half = scheme == QuantScheme::kSymmetric ? levels : levels / 2;
  while (g.scale > 0.0f && !isFiniteBits(half * g.scale + fabsf(g.offset))) {
    uint32_t bitsOfScale;
    memcpy(&bitsOfScale, &g.scale, sizeof(bitsOfScale));
    bitsOfScale -= 1;
    memcpy(&g.scale, &bitsOfScale, sizeof(bitsOfScale));
  }
  return g;
}

// murmur3's finalizer over (index * golden ratio) ^ seed: cheap, vectorizable, and
// uniform enough that the rounding stays unbiased (tested).
ZCCL_HOST_DEVICE inline uint32_t stochasticHash(uint32_t seed, uint32_t index) {
  uint32_t h = (index * 0x9e3779b1u) ^ seed;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// The stochastic-rounding seed of the group starting at element `first`: groups never
// straddle a multiple of 2^32 elements, so the high part folds into the seed.
ZCCL_HOST_DEVICE inline uint32_t groupSeed(uint64_t seed, uint64_t first) {
  return static_cast<uint32_t>(seed ^ (seed >> 32)) ^
         stochasticHash(0x5eedu, static_cast<uint32_t>(first >> 32));
}

ZCCL_HOST_DEVICE inline uint8_t clampToCode(float rounded, int lo, int hi) {
  const float clamped = fminf(fmaxf(rounded, static_cast<float>(lo)), static_cast<float>(hi));
  return static_cast<uint8_t>(static_cast<int>(clamped));
}

// x is already multiplied by the group's prescale.
ZCCL_HOST_DEVICE inline uint8_t codeNearest(float x, float offset, float inv, float center, int lo,
                                            int hi) {
  return clampToCode(rintf((x - offset) * inv + center), lo, hi);
}

ZCCL_HOST_DEVICE inline uint8_t codeStochastic(float x, float offset, float inv, float center,
                                               int lo, int hi, uint32_t seed, uint32_t index) {
  const float u = static_cast<float>(stochasticHash(seed, index) >> 8) * 0x1p-24f;
  return clampToCode(floorf((x - offset) * inv + center + u), lo, hi);
}

// Error feedback's int8 residuals (quantize.h's Residuals): blocks of kResidualBlock values
// as int8 codes, each block's scale its largest magnitude over 127 and its codes
// clamp(rne(x * (127 / largest)), -127, 127), both divisions in float32. A block holding NaN or
// Inf keeps codes 0 and the NaN scale of nonFiniteScale(); one whose largest magnitude is 0, or
// so small that its inverse overflows (below 2^-119), codes 0 and scale 0.
constexpr size_t kResidualBlock = 32;  // divides every message's groups (kMinGroupSize)
struct ResidualScale {
  float scale;
  float inv;  // 0: codes 0
};
ZCCL_HOST_DEVICE inline ResidualScale residualScale(float largest, bool nonFinite) {
  if (nonFinite) return ResidualScale{nonFiniteScale().scale, 0.0f};
  const float inv = largest > 0.0f ? 127.0f / largest : 0.0f;
  if (!isFiniteBits(inv) || inv == 0.0f) return ResidualScale{0.0f, 0.0f};
  return ResidualScale{largest / 127.0f, inv};
}

ZCCL_HOST_DEVICE inline float decodeSignedCode(int8_t code, float scale) {
  return static_cast<float>(code) * scale;
}

ZCCL_HOST_DEVICE inline float decodeUnsignedCode(uint8_t code, float scale, float offset,
                                                 float center) {
  return (static_cast<float>(code) - center) * scale + offset;
}

// Smoothing of a full group of n values (n a power of two): y = H D x / n before quantizing,
// x = D H y after decoding, where H is the n x n Walsh-Hadamard matrix (H H = n I) and D a
// diagonal of random signs drawn from (seed, index of the group's first element), 32 from each
// hash. Dividing by n, a power of two, is exact, so the rotation back undoes it up to the
// additions' rounding, which every implementation performs alike: per butterfly a + b and
// a - b, stage after stage (the CPU's SIMD version, quant/rotation.h, and the GPU's too).
ZCCL_HOST_DEVICE inline uint32_t smoothingSignWord(uint32_t seed, uint64_t first, uint32_t word) {
  uint32_t h = seed ^ (static_cast<uint32_t>(first >> 5) * 0x9e3779b1u) ^ (word * 0x85ebca6bu);
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

ZCCL_HOST_DEVICE inline bool smoothingFlips(uint32_t seed, uint64_t first, uint32_t i) {
  return ((smoothingSignWord(seed, first, i / 32) >> (i % 32)) & 1u) != 0;
}

ZCCL_HOST_DEVICE inline void walshHadamard(float* v, uint32_t n) {
  for (uint32_t half = 1; half < n; half *= 2) {
    for (uint32_t start = 0; start < n; start += 2 * half) {
      for (uint32_t i = start; i < start + half; ++i) {
        const float a = v[i];
        const float b = v[i + half];
        v[i] = a + b;
        v[i + half] = a - b;
      }
    }
  }
}

ZCCL_HOST_DEVICE inline void smoothGroup(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  for (uint32_t i = 0; i < n; ++i) {
    if (smoothingFlips(seed, first, i)) v[i] = -v[i];
  }
  walshHadamard(v, n);
  const float inverse = 1.0f / static_cast<float>(n);
  for (uint32_t i = 0; i < n; ++i) v[i] *= inverse;
}

ZCCL_HOST_DEVICE inline void unsmoothGroup(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  walshHadamard(v, n);
  for (uint32_t i = 0; i < n; ++i) {
    if (smoothingFlips(seed, first, i)) v[i] = -v[i];
  }
}

}  // namespace zccl
