// AVX2 + F16C kernels: eight floats per step, the scalar reference's operations lane by
// lane, and the scalar code for the tail, called only where a tail is left (an empty call into
// the baseline code cost a 512-value group's codes 12% through quantize()). Compiled for AVX2 and
// F16C between ZCCL_BEGIN_TARGET and ZCCL_END_TARGET only (common/target.h): the headers' inline
// functions and the cpuid check stay baseline code; chosen at run time from cpuid.
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/target.h"
#include "quant/kernels.h"

// The butterflies' template is defined inside the region, so its code is this set's too.
ZCCL_BEGIN_TARGET("avx2,f16c")
#include "quant/butterflies_between_vectors.h"

namespace zccl {
namespace {

const QuantKernels& scalar() { return scalarQuantKernels(); }

// As the AVX-512 kernel: two sets of running min / max, absmax from the larger magnitude of
// min and max, and v - v, NaN exactly for NaN and +-Inf, or-ed into one poison register.
void stats(const float* x, size_t n, GroupStats* s) {
  if (n < 16) return scalar().stats(x, n, s);
  __m256 lo0 = _mm256_loadu_ps(x), hi0 = lo0, lo1 = lo0, hi1 = lo0;
  __m256 poison = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    poison = _mm256_or_ps(poison, _mm256_or_ps(_mm256_sub_ps(v0, v0), _mm256_sub_ps(v1, v1)));
    lo0 = _mm256_min_ps(lo0, v0);
    hi0 = _mm256_max_ps(hi0, v0);
    lo1 = _mm256_min_ps(lo1, v1);
    hi1 = _mm256_max_ps(hi1, v1);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, _mm256_min_ps(lo0, lo1));
  _mm256_store_ps(h, _mm256_max_ps(hi0, hi1));
  GroupStats result{0.0f, l[0], h[0],
                    _mm256_movemask_ps(_mm256_cmp_ps(poison, poison, _CMP_UNORD_Q)) != 0};
  for (int k = 1; k < 8; ++k) {
    result.min = std::min(result.min, l[k]);
    result.max = std::max(result.max, h[k]);
  }
  if (i < n) {
    GroupStats rest;
    scalar().stats(x + i, n - i, &rest);
    result = GroupStats{0.0f, std::min(result.min, rest.min), std::max(result.max, rest.max),
                        result.nonFinite || rest.nonFinite};
  }
  result.absmax = std::max(std::fabs(result.min), std::fabs(result.max));
  *s = result;
}

// The largest of eight lanes by halving: a tree, not a chain, since the group's scale waits
// on it.
inline uint32_t largestLane(__m256i v) {
  __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(1, 0, 3, 2)));
  m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(2, 3, 0, 1)));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(m4));
}

// Two running maxima of the magnitudes' bits (magnitudeBits).
void absmaxStats(const float* x, size_t n, GroupStats* s) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  const auto bitsAt = [&](size_t i) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), magnitude);
  };
  __m256i largest0 = _mm256_setzero_si256(), largest1 = largest0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    largest0 = _mm256_max_epu32(largest0, bitsAt(i));
    largest1 = _mm256_max_epu32(largest1, bitsAt(i + 8));
  }
  uint32_t largest = largestLane(_mm256_max_epu32(largest0, largest1));
  for (; i < n; ++i) largest = std::max(largest, magnitudeBits(x[i]));
  *s = statsOfLargestMagnitude(largest);
}

// Clamping before rounding equals rounding before clamping (integer bounds, monotonic
// rounding), so the conversion rounds, in the current mode as rintf does.
struct CodeRange {
  __m256 lo, hi;
  __m256i loBytes;
  bool isSigned;
  __m256i convert(__m256 v) const {
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
  }
  // Rounded and capped at hi only, as the AVX-512 kernels do: the packs saturate and
  // raiseToLow finishes the clamp (a NaN, like a value too negative for int32, converts to
  // INT32_MIN).
  __m256i convertCapped(__m256 v) const { return _mm256_cvtps_epi32(_mm256_min_ps(hi, v)); }
  __m256i narrow(__m256i words01, __m256i words23) const {
    return isSigned ? _mm256_packs_epi16(words01, words23) : _mm256_packus_epi16(words01, words23);
  }
  __m256i raiseToLow(__m256i bytes) const {
    return isSigned ? _mm256_max_epi8(bytes, loBytes) : _mm256_max_epu8(bytes, loBytes);
  }
};

// The codes of valueAt(i) to valueAt(i + 24) (eight values ready to convert each), 32 bytes
// in order: the in-lane packs leave each eight's halves four bytes apart, which one
// permutation puts back in order.
template <typename ValueAt>
__m256i codeBytes32(ValueAt valueAt, size_t i, const CodeRange& range) {
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i words01 =
      _mm256_packs_epi32(range.convertCapped(valueAt(i)), range.convertCapped(valueAt(i + 8)));
  const __m256i words23 = _mm256_packs_epi32(range.convertCapped(valueAt(i + 16)),
                                             range.convertCapped(valueAt(i + 24)));
  return _mm256_permutevar8x32_epi32(range.raiseToLow(range.narrow(words01, words23)), order);
}

// Stores the codes of valueAt(i) (eight values ready to convert) for every whole eight of n;
// returns where the tail begins.
template <typename ValueAt>
size_t storeCodes(size_t n, ValueAt valueAt, const CodeRange& range, uint8_t* codes) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), codeBytes32(valueAt, i, range));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i ints = range.convert(valueAt(i));
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(ints), _mm256_extracti128_si256(ints, 1));
    const __m128i bytes =
        range.isSigned ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), bytes);
  }
  return i;
}

CodeRange codeRange(int lo, int hi) {
  return CodeRange{_mm256_set1_ps(static_cast<float>(lo)), _mm256_set1_ps(static_cast<float>(hi)),
                   _mm256_set1_epi8(static_cast<char>(lo)), lo < 0};
}

void codesNearest(const float* x, size_t n, float offset, float inv, float center, int lo, int hi,
                  uint8_t* codes) {
  const __m256 vOffset = _mm256_set1_ps(offset), vInv = _mm256_set1_ps(inv);
  const __m256 vCenter = _mm256_set1_ps(center);
  const CodeRange range = codeRange(lo, hi);
  size_t i;
  if (offset == 0.0f && center == 0.0f) {
    // Symmetric codes: subtracting and adding zero are exact, so they are left out.
    i = storeCodes(
        n, [&](size_t j) { return _mm256_mul_ps(_mm256_loadu_ps(x + j), vInv); }, range, codes);
  } else {
    i = storeCodes(
        n,
        [&](size_t j) {
          return _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vOffset), vInv),
                               vCenter);
        },
        range, codes);
  }
  if (i < n) scalar().codesNearest(x + i, n - i, offset, inv, center, lo, hi, codes + i);
}

// codesNearest's symmetric loop with the next group's loads beside it, 32 values of each a step:
// the next group's loads wait on memory while this group's codes are made. magnitudesAt(j)
// gives the magnitudes' bits of the next group's eight values from j; restStats(from, &stats)
// the statistics of its values from `from` on, where the loop stops short of them.
template <typename MagnitudesAt, typename RestStats>
void codesBesideNextGroup(const float* x, size_t n, float inv, int lo, int hi, uint8_t* codes,
                          size_t nextN, MagnitudesAt magnitudesAt, RestStats restStats,
                          GroupStats* nextStats) {
  const __m256 vInv = _mm256_set1_ps(inv);
  const CodeRange range = codeRange(lo, hi);
  const auto valueAt = [&](size_t j) { return _mm256_mul_ps(_mm256_loadu_ps(x + j), vInv); };
  __m256i largest0 = _mm256_setzero_si256(), largest1 = largest0;
  const size_t both = std::min(n, nextN) / 32 * 32;
  for (size_t i = 0; i < both; i += 32) {
    largest0 = _mm256_max_epu32(largest0, _mm256_max_epu32(magnitudesAt(i), magnitudesAt(i + 16)));
    largest1 =
        _mm256_max_epu32(largest1, _mm256_max_epu32(magnitudesAt(i + 8), magnitudesAt(i + 24)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), codeBytes32(valueAt, i, range));
  }
  if (both < n) codesNearest(x + both, n - both, 0.0f, inv, 0.0f, lo, hi, codes + both);
  uint32_t largest = largestLane(_mm256_max_epu32(largest0, largest1));
  if (both < nextN) {
    GroupStats rest;
    restStats(both, &rest);
    largest = std::max(largest, magnitudeBits(rest.absmax));
  }
  *nextStats = statsOfLargestMagnitude(largest);
}

void codesSymmetricBesideAbsmax(const float* x, size_t n, float inv, int lo, int hi, uint8_t* codes,
                                const float* next, size_t nextN, GroupStats* nextStats) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  codesBesideNextGroup(
      x, n, inv, lo, hi, codes, nextN,
      [&](size_t j) {
        return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(next + j)),
                                magnitude);
      },
      [&](size_t from, GroupStats* rest) { absmaxStats(next + from, nextN - from, rest); },
      nextStats);
}

inline __m256i hash8(__m256i index, __m256i seed) {
  __m256i h = _mm256_xor_si256(
      _mm256_mullo_epi32(index, _mm256_set1_epi32(static_cast<int>(0x9e3779b1u))), seed);
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
  h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0x85ebca6bu)));
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
  h = _mm256_mullo_epi32(h, _mm256_set1_epi32(static_cast<int>(0xc2b2ae35u)));
  return _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
}

void codesStochastic(const float* x, size_t n, float offset, float inv, float center, int lo,
                     int hi, uint32_t seed, uint32_t index0, uint8_t* codes) {
  const __m256 vOffset = _mm256_set1_ps(offset), vInv = _mm256_set1_ps(inv);
  const __m256 vCenter = _mm256_set1_ps(center);
  const __m256i vSeed = _mm256_set1_epi32(static_cast<int>(seed));
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 unit = _mm256_set1_ps(0x1p-24f);
  const auto valueAt = [&](size_t j) {
    const __m256i index = _mm256_add_epi32(
        _mm256_set1_epi32(static_cast<int>(index0 + static_cast<uint32_t>(j))), lanes);
    const __m256 u =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(hash8(index, vSeed), 8)), unit);
    const __m256 scaled = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vOffset), vInv);
    return _mm256_floor_ps(_mm256_add_ps(_mm256_add_ps(scaled, vCenter), u));
  };
  const size_t i = storeCodes(n, valueAt, codeRange(lo, hi), codes);
  if (i < n)
    scalar().codesStochastic(x + i, n - i, offset, inv, center, lo, hi, seed,
                             index0 + static_cast<uint32_t>(i), codes + i);
}

void decodeSigned(const int8_t* codes, size_t n, float scale, float* out) {
  const __m256 vScale = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i c =
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_cvtepi32_ps(c), vScale));
  }
  if (i < n) scalar().decodeSigned(codes + i, n - i, scale, out + i);
}

void decodeUnsigned(const uint8_t* codes, size_t n, float scale, float offset, float center,
                    float* out) {
  const __m256 vScale = _mm256_set1_ps(scale), vOffset = _mm256_set1_ps(offset);
  const __m256 vCenter = _mm256_set1_ps(center);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i c =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i)));
    const __m256 centered = _mm256_sub_ps(_mm256_cvtepi32_ps(c), vCenter);
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_mul_ps(centered, vScale), vOffset));
  }
  if (i < n) scalar().decodeUnsigned(codes + i, n - i, scale, offset, center, out + i);
}

// Sixty-four codes per step: each 16-bit lane holds a pair, folded into its low byte, and
// the two halves narrowed with unsigned saturation (exact: every folded lane is < 256).
void packNibbles(const uint8_t* codes, size_t n, uint8_t* packed) {
  const __m256i lowMask = _mm256_set1_epi16(0x000f), highMask = _mm256_set1_epi16(0x00f0);
  const auto fold = [&](const uint8_t* p) {
    const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_or_si256(_mm256_and_si256(pairs, lowMask),
                           _mm256_and_si256(_mm256_srli_epi16(pairs, 4), highMask));
  };
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    // packus works within 128-bit lanes; the permute puts the quarters back in order.
    const __m256i narrowed = _mm256_packus_epi16(fold(codes + i), fold(codes + i + 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + i / 2),
                        _mm256_permute4x64_epi64(narrowed, 0xd8));
  }
  if (i < n) scalar().packNibbles(codes + i, n - i, packed + i / 2);
}

// Sixteen bytes per step, each widened to a 16-bit lane that receives its two codes.
void unpackNibbles(const uint8_t* packed, size_t n, bool isSigned, uint8_t* codes) {
  const __m256i byteMask = _mm256_set1_epi16(0x00ff);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i bytes =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + i / 2)));
    __m256i low, high;
    if (isSigned) {
      low = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(bytes, 12), 12), byteMask);
      high = _mm256_slli_epi16(_mm256_srai_epi16(_mm256_slli_epi16(bytes, 8), 12), 8);
    } else {
      low = _mm256_and_si256(bytes, _mm256_set1_epi16(0x000f));
      high = _mm256_slli_epi16(_mm256_srli_epi16(bytes, 4), 8);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), _mm256_or_si256(low, high));
  }
  if (i < n) scalar().unpackNibbles(packed + i / 2, n - i, isSigned, codes + i);
}

// Thirty-two codes per step: each 32-bit lane folds its four codes into its low byte, then
// a byte shuffle and a lane permute gather the eight bytes.
void packCrumbs(const uint8_t* codes, size_t n, uint8_t* packed) {
  const __m256i crumbMask = _mm256_set1_epi32(0x03030303);
  const __m256i pairMask = _mm256_set1_epi32(0x000f000f);
  const __m256i lowBytes =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i adjacent = _mm256_setr_epi32(0, 4, 1, 2, 3, 5, 6, 7);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i c = _mm256_and_si256(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i)), crumbMask);
    const __m256i pairs = _mm256_and_si256(_mm256_or_si256(c, _mm256_srli_epi32(c, 6)), pairMask);
    const __m256i quads = _mm256_or_si256(pairs, _mm256_srli_epi32(pairs, 12));
    const __m256i gathered =
        _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(quads, lowBytes), adjacent);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(packed + i / 4), _mm256_castsi256_si128(gathered));
  }
  if (i < n) scalar().packCrumbs(codes + i, n - i, packed + i / 4);
}

// Eight bytes per step, each widened to a 32-bit lane that receives its four codes; signed
// codes sign-extend bytewise as (c ^ 2) - 2.
void unpackCrumbs(const uint8_t* packed, size_t n, bool isSigned, uint8_t* codes) {
  const __m256i two = _mm256_set1_epi8(2);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i bytes =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed + i / 4)));
    const __m256i nibbles =
        _mm256_or_si256(_mm256_and_si256(bytes, _mm256_set1_epi32(0x0f)),
                        _mm256_slli_epi32(_mm256_and_si256(bytes, _mm256_set1_epi32(0xf0)), 12));
    __m256i crumbs = _mm256_or_si256(
        _mm256_and_si256(nibbles, _mm256_set1_epi32(0x00030003)),
        _mm256_slli_epi32(_mm256_and_si256(nibbles, _mm256_set1_epi32(0x000c000c)), 6));
    if (isSigned) crumbs = _mm256_sub_epi8(_mm256_xor_si256(crumbs, two), two);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + i), crumbs);
  }
  if (i < n) scalar().unpackCrumbs(packed + i / 4, n - i, isSigned, codes + i);
}

inline __m128i load8Halves(const uint16_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

inline __m256 widen8Float16(const uint16_t* p) { return _mm256_cvtph_ps(load8Halves(p)); }

inline __m256 widen8Bfloat16(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load8Halves(p)), 16));
}

void widenFloat16(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, widen8Float16(in + i));
  if (i < n) scalar().widenFloat16(in + i, n - i, out + i);
}

void widenBfloat16(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, widen8Bfloat16(in + i));
  if (i < n) scalar().widenBfloat16(in + i, n - i, out + i);
}

// The same loop with the next group's half-precision values widened and stored beside it.
template <__m256 (*widen8)(const uint16_t*), void (*widen)(const uint16_t*, size_t, float*)>
void codesBesideWidenAbsmax(const float* x, size_t n, float inv, int lo, int hi, uint8_t* codes,
                            const uint16_t* next, size_t nextN, float* nextWidened,
                            GroupStats* nextStats) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  codesBesideNextGroup(
      x, n, inv, lo, hi, codes, nextN,
      [&](size_t j) {
        const __m256 wide = widen8(next + j);
        _mm256_storeu_ps(nextWidened + j, wide);
        return _mm256_and_si256(_mm256_castps_si256(wide), magnitude);
      },
      [&](size_t from, GroupStats* rest) {
        widen(next + from, nextN - from, nextWidened + from);
        absmaxStats(nextWidened + from, nextN - from, rest);
      },
      nextStats);
}

void codesSymmetricBesideWidenAbsmax(const float* x, size_t n, float inv, int lo, int hi,
                                     uint8_t* codes, const uint16_t* next, bool bfloat16,
                                     size_t nextN, float* nextWidened, GroupStats* nextStats) {
  (bfloat16 ? codesBesideWidenAbsmax<widen8Bfloat16, widenBfloat16>
            : codesBesideWidenAbsmax<widen8Float16, widenFloat16>)(x, n, inv, lo, hi, codes, next,
                                                                   nextN, nextWidened, nextStats);
}

void narrowFloat16(const float* in, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) scalar().narrowFloat16(in + i, n - i, out + i);
}

// Round to nearest even on the bit pattern; NaN keeps its top bits and is made quiet.
inline __m128i narrow8Bfloat16(__m256 values) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff), infBits = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x0040);
  const __m256i bits = _mm256_castps_si256(values);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), one);
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(bias, lsb)), 16);
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), quiet);
  const __m256i isNan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, absMask), infBits);
  const __m256i result = _mm256_blendv_epi8(rounded, nan, isNan);
  return _mm_packus_epi32(_mm256_castsi256_si128(result), _mm256_extracti128_si256(result, 1));
}

void narrowBfloat16(const float* in, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), narrow8Bfloat16(_mm256_loadu_ps(in + i)));
  }
  if (i < n) scalar().narrowBfloat16(in + i, n - i, out + i);
}

void accumulate(float* accumulator, const float* x, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(accumulator + i,
                     _mm256_add_ps(_mm256_loadu_ps(accumulator + i), _mm256_loadu_ps(x + i)));
  }
  if (i < n) scalar().accumulate(accumulator + i, x + i, n - i);
}

void sumIntoBfloat16(const uint16_t* x, const float* addend, size_t n, uint16_t* out,
                     uint16_t* copy) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i sum =
        narrow8Bfloat16(_mm256_add_ps(widen8Bfloat16(x + i), _mm256_loadu_ps(addend + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), sum);
    if (copy != nullptr) _mm_storeu_si128(reinterpret_cast<__m128i*>(copy + i), sum);
  }
  if (i < n) {
    scalar().sumIntoBfloat16(x + i, addend + i, n - i, out + i,
                             copy != nullptr ? copy + i : nullptr);
  }
}

void divide(float* values, size_t n, float divisor) {
  const __m256 d = _mm256_set1_ps(divisor);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(values + i, _mm256_div_ps(_mm256_loadu_ps(values + i), d));
  }
  if (i < n) scalar().divide(values + i, n - i, divisor);
}

// A block's magnitudes by their bits (non-negative floats order as their bits do); a
// non-finite one has every exponent bit set. Its 32 codes packed to bytes in two steps, whose
// lane-wise order one permutation restores.
void codeResidualBlocks(const float* x, size_t n, int8_t* codes, float* scales) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t b = 0;
  for (; b + kResidualBlock <= n; b += kResidualBlock) {
    __m256 v[4];
    __m256i largest = _mm256_setzero_si256(), nonFinite = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(x + b + 8 * j);
      const __m256i a = _mm256_and_si256(_mm256_castps_si256(v[j]), magnitude);
      largest = _mm256_max_epu32(largest, a);
      nonFinite =
          _mm256_or_si256(nonFinite, _mm256_cmpeq_epi32(_mm256_and_si256(a, exponent), exponent));
    }
    __m128i half =
        _mm_max_epu32(_mm256_castsi256_si128(largest), _mm256_extracti128_si256(largest, 1));
    half = _mm_max_epu32(half, _mm_shuffle_epi32(half, _MM_SHUFFLE(1, 0, 3, 2)));
    half = _mm_max_epu32(half, _mm_shuffle_epi32(half, _MM_SHUFFLE(2, 3, 0, 1)));
    const uint32_t largestBits = static_cast<uint32_t>(_mm_cvtsi128_si32(half));
    float largestValue;
    std::memcpy(&largestValue, &largestBits, sizeof(largestValue));
    const ResidualScale r = residualScale(largestValue, _mm256_movemask_epi8(nonFinite) != 0);
    __m256i packed = _mm256_setzero_si256();
    if (r.inv != 0.0f) {
      const __m256 inv = _mm256_set1_ps(r.inv);
      __m256i ints[4];
      for (int j = 0; j < 4; ++j) {
        const __m256 rounded = _mm256_round_ps(_mm256_mul_ps(v[j], inv),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        ints[j] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(rounded, lo), hi));
      }
      packed = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(_mm256_packs_epi32(ints[0], ints[1]),
                                                              _mm256_packs_epi32(ints[2], ints[3])),
                                           order);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + b), packed);
    scales[b / kResidualBlock] = r.scale;
  }
  if (b < n) scalar().codeResidualBlocks(x + b, n - b, codes + b, scales + b / kResidualBlock);
}

void addResidualBlocks(const int8_t* codes, const float* scales, size_t n, float* values) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 scale = _mm256_set1_ps(scales[i / kResidualBlock]);
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i));
    const __m256 decoded = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), scale);
    _mm256_storeu_ps(values + i, _mm256_add_ps(_mm256_loadu_ps(values + i), decoded));
  }
  if (i < n) scalar().addResidualBlocks(codes + i, scales + i / kResidualBlock, n - i, values + i);
}

// a + b in the lanes of kDifferenceLanes' clear bits, a - b in its set ones (a - b itself,
// not a + -b, which differs for a NaN b in its sign bit).
template <int kDifferenceLanes>
__m256 butterfly(__m256 a, __m256 b) {
  return _mm256_blend_ps(_mm256_add_ps(a, b), _mm256_sub_ps(a, b), kDifferenceLanes);
}

// The vector operations the butterflies between vectors take (butterflies_between_vectors.h).
struct Avx2Vectors {
  using Vector = __m256;
  static constexpr uint32_t kLanes = 8;
  static Vector load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vector x) { _mm256_storeu_ps(p, x); }
  static Vector add(Vector a, Vector b) { return _mm256_add_ps(a, b); }
  static Vector sub(Vector a, Vector b) { return _mm256_sub_ps(a, b); }
};

// The butterflies of the first three stages inside each eight-lane vector, the later ones
// between vectors, two at a time.
void walshHadamardLanes(float* v, uint32_t n) {
  for (uint32_t at = 0; at < n; at += 8) {
    __m256 x = _mm256_loadu_ps(v + at);
    x = butterfly<0xaa>(_mm256_shuffle_ps(x, x, _MM_SHUFFLE(2, 2, 0, 0)),
                        _mm256_shuffle_ps(x, x, _MM_SHUFFLE(3, 3, 1, 1)));
    x = butterfly<0xcc>(_mm256_shuffle_ps(x, x, _MM_SHUFFLE(1, 0, 1, 0)),
                        _mm256_shuffle_ps(x, x, _MM_SHUFFLE(3, 2, 3, 2)));
    x = butterfly<0xf0>(_mm256_permute2f128_ps(x, x, 0x00), _mm256_permute2f128_ps(x, x, 0x11));
    _mm256_storeu_ps(v + at, x);
  }
  butterfliesBetweenVectors<Avx2Vectors>(v, n, Avx2Vectors::kLanes);
}

// Eight signs a vector: each lane tests its bit of the word's octet and XORs the sign bit.
void flipSigns(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  const __m256i laneBits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 signBit = _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN));
  for (uint32_t word = 0; word < n / 32; ++word) {
    const uint32_t signs = smoothingSignWord(seed, first, word);
    for (uint32_t octet = 0; octet < 4; ++octet) {
      const __m256i octetBits = _mm256_set1_epi32(static_cast<int>(signs >> (8 * octet)));
      const __m256i flips = _mm256_cmpeq_epi32(_mm256_and_si256(octetBits, laneBits), laneBits);
      float* at = v + 32 * word + 8 * octet;
      _mm256_storeu_ps(at, _mm256_xor_ps(_mm256_loadu_ps(at),
                                         _mm256_and_ps(_mm256_castsi256_ps(flips), signBit)));
    }
  }
}

}  // namespace
}  // namespace zccl
ZCCL_END_TARGET

namespace zccl {

const QuantKernels* avx2QuantKernels() {
  // The kernels by kind, a row each: codes, packing, conversions, residuals and rotation.
  // clang-format off
  static const QuantKernels kernels{
      "avx2",
      stats, absmaxStats, codesNearest, codesSymmetricBesideAbsmax,
      codesSymmetricBesideWidenAbsmax, codesStochastic,
      decodeSigned, decodeUnsigned,
      packNibbles, unpackNibbles, packCrumbs, unpackCrumbs,
      widenFloat16, widenBfloat16, narrowFloat16, narrowBfloat16, accumulate, sumIntoBfloat16,
      divide,
      codeResidualBlocks, addResidualBlocks, walshHadamardLanes, flipSigns};
  // clang-format on
  // F16C from cpuid directly: clang's __builtin_cpu_supports does not know it.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  return cpuHasAvx2() && f16c ? &kernels : nullptr;
}

}  // namespace zccl
