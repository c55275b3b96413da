// The reference kernels: plain C++, one element at a time. The SIMD sets must match them
// bit for bit.
#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "quant/kernels.h"

namespace zccl {
namespace {

void stats(const float* x, size_t n, GroupStats* s) {
  float absmax = 0.0f, lo = x[0], hi = x[0];
  bool nonFinite = false;
  for (size_t i = 0; i < n; ++i) {
    nonFinite |= !isFiniteBits(x[i]);
    absmax = std::max(absmax, std::fabs(x[i]));
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *s = GroupStats{absmax, lo, hi, nonFinite};
}

void absmaxStats(const float* x, size_t n, GroupStats* s) {
  uint32_t largest = 0;
  for (size_t i = 0; i < n; ++i) largest = std::max(largest, magnitudeBits(x[i]));
  *s = statsOfLargestMagnitude(largest);
}

void codesNearest(const float* x, size_t n, float offset, float inv, float center, int lo, int hi,
                  uint8_t* codes) {
  for (size_t i = 0; i < n; ++i) {
    codes[i] = codeNearest(x[i], offset, inv, center, lo, hi);
  }
}

void codesSymmetricBesideAbsmax(const float* x, size_t n, float inv, int lo, int hi, uint8_t* codes,
                                const float* next, size_t nextN, GroupStats* nextStats) {
  codesNearest(x, n, 0.0f, inv, 0.0f, lo, hi, codes);
  absmaxStats(next, nextN, nextStats);
}

void codesStochastic(const float* x, size_t n, float offset, float inv, float center, int lo,
                     int hi, uint32_t seed, uint32_t index0, uint8_t* codes) {
  for (size_t i = 0; i < n; ++i) {
    codes[i] =
        codeStochastic(x[i], offset, inv, center, lo, hi, seed, index0 + static_cast<uint32_t>(i));
  }
}

void decodeSigned(const int8_t* codes, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = decodeSignedCode(codes[i], scale);
}

void decodeUnsigned(const uint8_t* codes, size_t n, float scale, float offset, float center,
                    float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = decodeUnsignedCode(codes[i], scale, offset, center);
}

void packNibbles(const uint8_t* codes, size_t n, uint8_t* packed) {
  for (size_t i = 0; i + 1 < n; i += 2)
    packed[i / 2] = static_cast<uint8_t>((codes[i] & 0x0f) | (codes[i + 1] << 4));
  if (n % 2) packed[n / 2] = static_cast<uint8_t>(codes[n - 1] & 0x0f);
}

// Signed nibbles sign-extend through an arithmetic shift of the byte.
void unpackNibbles(const uint8_t* packed, size_t n, bool isSigned, uint8_t* codes) {
  const size_t pairs = n / 2;
  for (size_t j = 0; j < pairs; ++j) {
    const unsigned byte = packed[j];
    const auto low = static_cast<int8_t>(static_cast<uint8_t>(byte << 4));
    const auto high = static_cast<int8_t>(byte);
    codes[2 * j] = static_cast<uint8_t>(isSigned ? low >> 4 : byte & 0x0fu);
    codes[2 * j + 1] = static_cast<uint8_t>(isSigned ? high >> 4 : byte >> 4);
  }
  if (n % 2) {
    const unsigned nibble = packed[pairs] & 0x0fu;
    codes[n - 1] = static_cast<uint8_t>(isSigned && nibble >= 8 ? nibble | 0xf0u : nibble);
  }
}

void packCrumbs(const uint8_t* codes, size_t n, uint8_t* packed) {
  for (size_t j = 0; 4 * j < n; ++j) {
    uint8_t byte = 0;
    for (uint32_t slot = 0; slot < 4 && 4 * j + slot < n; ++slot)
      byte |= packedCode(codes[4 * j + slot], slot, 2);
    packed[j] = byte;
  }
}

void unpackCrumbs(const uint8_t* packed, size_t n, bool isSigned, uint8_t* codes) {
  for (size_t i = 0; i < n; ++i) codes[i] = unpackCode(packed[i / 4], i % 4, 2, isSigned);
}

void widenFloat16(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = toFloat(float16_t{in[i]});
}

void widenBfloat16(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = toFloat(bfloat16_t{in[i]});
}

void codesSymmetricBesideWidenAbsmax(const float* x, size_t n, float inv, int lo, int hi,
                                     uint8_t* codes, const uint16_t* next, bool bfloat16,
                                     size_t nextN, float* nextWidened, GroupStats* nextStats) {
  (bfloat16 ? widenBfloat16 : widenFloat16)(next, nextN, nextWidened);
  codesSymmetricBesideAbsmax(x, n, inv, lo, hi, codes, nextWidened, nextN, nextStats);
}

void narrowFloat16(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = toFloat16(in[i]).bits;
}

void narrowBfloat16(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = toBfloat16(in[i]).bits;
}

void accumulate(float* accumulator, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) accumulator[i] += x[i];
}

void sumIntoBfloat16(const uint16_t* x, const float* addend, size_t n, uint16_t* out,
                     uint16_t* copy) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = toBfloat16(toFloat(bfloat16_t{x[i]}) + addend[i]).bits;
    if (copy != nullptr) copy[i] = out[i];
  }
}

void divide(float* values, size_t n, float divisor) {
  for (size_t i = 0; i < n; ++i) values[i] /= divisor;
}

void codeResidualBlocks(const float* x, size_t n, int8_t* codes, float* scales) {
  for (size_t begin = 0; begin < n; begin += kResidualBlock) {
    const size_t end = std::min(n, begin + kResidualBlock);
    float largest = 0.0f;
    bool nonFinite = false;
    for (size_t i = begin; i < end; ++i) {
      nonFinite |= !isFiniteBits(x[i]);
      largest = std::max(largest, std::fabs(x[i]));
    }
    const ResidualScale r = residualScale(largest, nonFinite);
    for (size_t i = begin; i < end; ++i) {
      codes[i] =
          static_cast<int8_t>(r.inv == 0.0f ? 0 : clampToCode(rintf(x[i] * r.inv), -127, 127));
    }
    scales[begin / kResidualBlock] = r.scale;
  }
}

void addResidualBlocks(const int8_t* codes, const float* scales, size_t n, float* values) {
  for (size_t i = 0; i < n; ++i)
    values[i] += decodeSignedCode(codes[i], scales[i / kResidualBlock]);
}

void flipSigns(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  for (uint32_t i = 0; i < n; ++i) {
    if (smoothingFlips(seed, first, i)) v[i] = -v[i];
  }
}

}  // namespace

const QuantKernels& scalarQuantKernels() {
  // The kernels by kind, a row each: codes, packing, conversions, residuals and rotation.
  // clang-format off
  static const QuantKernels kernels{
      "scalar",
      stats, absmaxStats, codesNearest, codesSymmetricBesideAbsmax,
      codesSymmetricBesideWidenAbsmax, codesStochastic,
      decodeSigned, decodeUnsigned,
      packNibbles, unpackNibbles, packCrumbs, unpackCrumbs,
      widenFloat16, widenBfloat16, narrowFloat16, narrowBfloat16, accumulate, sumIntoBfloat16,
      divide,
      codeResidualBlocks, addResidualBlocks, walshHadamard, flipSigns};
  // clang-format on
  return kernels;
}

}  // namespace zccl
