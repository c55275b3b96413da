// The per-group building blocks of quantization, implemented once per instruction set.
// Every implementation performs the same float32 operations in the same order (no fused
// multiply-add, round-to-nearest-even conversions), so their outputs are bit-identical.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/group_math.h"

namespace zccl {

struct QuantKernels {
  const char* name;
  void (*stats)(const float* x, size_t n, GroupStats* stats);
  // absmax and nonFinite alone (statsOfLargestMagnitude): what a symmetric group needs, found
  // from the values' bits with two integer operations a vector.
  void (*absmaxStats)(const float* x, size_t n, GroupStats* stats);
  // codes[i] = clamp(rne((x[i] - offset) * inv + center), lo, hi), stored as one byte each
  // (two's complement when lo < 0).
  void (*codesNearest)(const float* x, size_t n, float offset, float inv, float center, int lo,
                       int hi, uint8_t* codes);
  // codesNearest of a symmetric group (offset and center 0) and absmaxStats of the next
  // group's nextN values: one call, so that a set may read the next group while it codes this
  // one (each result as the two calls give it).
  void (*codesSymmetricBesideAbsmax)(const float* x, size_t n, float inv, int lo, int hi,
                                     uint8_t* codes, const float* next, size_t nextN,
                                     GroupStats* nextStats);
  // The same with the next group given as nextN half-precision values (bfloat16, else IEEE
  // float16), widened into nextWidened as widenBfloat16 / widenFloat16 do in the same pass:
  // half-precision input then costs one pass a group instead of three.
  void (*codesSymmetricBesideWidenAbsmax)(const float* x, size_t n, float inv, int lo, int hi,
                                          uint8_t* codes, const uint16_t* next, bool bfloat16,
                                          size_t nextN, float* nextWidened, GroupStats* nextStats);
  // As codesNearest with floor(v + u[i]), u[i] = (stochasticHash(seed, index0 + i) >> 8) / 2^24.
  void (*codesStochastic)(const float* x, size_t n, float offset, float inv, float center, int lo,
                          int hi, uint32_t seed, uint32_t index0, uint8_t* codes);
  // out[i] = code * scale
  void (*decodeSigned)(const int8_t* codes, size_t n, float scale, float* out);
  // out[i] = (code - center) * scale + offset
  void (*decodeUnsigned)(const uint8_t* codes, size_t n, float scale, float offset, float center,
                         float* out);
  // Two codes per byte, low nibble first (an odd last code fills the low nibble alone).
  void (*packNibbles)(const uint8_t* codes, size_t n, uint8_t* packed);
  // The inverse; signed codes sign-extend from four bits.
  void (*unpackNibbles)(const uint8_t* packed, size_t n, bool isSigned, uint8_t* codes);
  // INT2: four codes per byte, the first in the lowest two bits (a short last byte is
  // zero-filled); the inverse sign-extends signed codes from two bits.
  void (*packCrumbs)(const uint8_t* codes, size_t n, uint8_t* packed);
  void (*unpackCrumbs)(const uint8_t* packed, size_t n, bool isSigned, uint8_t* codes);
  void (*widenFloat16)(const uint16_t* in, size_t n, float* out);
  void (*widenBfloat16)(const uint16_t* in, size_t n, float* out);
  void (*narrowFloat16)(const float* in, size_t n, uint16_t* out);
  void (*narrowBfloat16)(const float* in, size_t n, uint16_t* out);
  void (*accumulate)(float* accumulator, const float* x, size_t n);
  // out[i] = narrowBfloat16(widenBfloat16(x[i]) + addend[i]), and the same into copy unless it
  // is null: a reference plus a change, rounded once (the weight differences' gathers), in one
  // pass where the three kernels and a copy took four.
  void (*sumIntoBfloat16)(const uint16_t* x, const float* addend, size_t n, uint16_t* out,
                          uint16_t* copy);
  // values[i] /= divisor: a division each (an average's), not a product with the reciprocal,
  // which rounds differently.
  void (*divide)(float* values, size_t n, float divisor);
  // Error feedback's int8 residuals (group_math.h's residualScale): n values as codes, and the
  // scale of each kResidualBlock from the first (the last block may be short).
  void (*codeResidualBlocks)(const float* x, size_t n, int8_t* codes, float* scales);
  // values[i] += codes[i] * scales[i / kResidualBlock]: the product rounded, then the sum.
  void (*addResidualBlocks)(const int8_t* codes, const float* scales, size_t n, float* values);
  // walshHadamard() of group_math.h on n values (a power of two, at least 32): the same
  // butterflies, stage after stage, several at a time (smoothing's rotation, rotation.h).
  void (*walshHadamard)(float* v, uint32_t n);
  // v[i] = -v[i] where smoothingFlips(seed, first, i) (group_math.h), n a multiple of 32: the
  // rotation's random signs, 32 from each hash.
  void (*flipSigns)(float* v, uint32_t n, uint32_t seed, uint64_t first);
};

const QuantKernels& scalarQuantKernels();
// nullptr when the CPU lacks AVX2 or F16C.
const QuantKernels* avx2QuantKernels();
// nullptr when the CPU lacks AVX-512 F, BW or VL.
const QuantKernels* avx512QuantKernels();

// The fastest set this CPU runs, unless ZCCL_QUANT_ISA=scalar|avx2 asks for a lower one.
const QuantKernels& activeQuantKernels();

}  // namespace zccl
