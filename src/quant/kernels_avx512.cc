// AVX-512 (F, BW, VL) kernels: sixteen floats per step, the scalar reference's operations lane
// by lane, and the scalar code for the tail, called only where a tail is left (as AVX2's). Compiled
// for AVX-512 between ZCCL_BEGIN_TARGET and ZCCL_END_TARGET only (common/target.h): the headers'
// inline functions and the cpuid check stay baseline code; chosen at run time from cpuid.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/target.h"
#include "quant/kernels.h"

// The butterflies' template is defined inside the region, so its code is this set's too.
ZCCL_BEGIN_TARGET("avx512f,avx512bw,avx512vl,f16c")
#include "quant/butterflies_between_vectors.h"

namespace zccl {
namespace {

constexpr size_t kLanes = 16;
constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
constexpr int kFloor = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;

const QuantKernels& scalar() { return scalarQuantKernels(); }

inline __m512 orBits(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}

// Two sets of running min / max halve the loop's dependency chains. A group's absmax is the
// larger magnitude of its min and max, and v - v, NaN exactly for NaN and +-Inf (+0 else), is
// or-ed into the poison registers, as the AVX2 kernel does. (A multiply-add by zero did it in
// one operation, but GCC then folded a load into each of the three uses of a vector: 45 GB/s
// in L2 on an AMD host against 68 with one load.)
void stats(const float* x, size_t n, GroupStats* s) {
  if (n < 2 * kLanes) return scalar().stats(x, n, s);
  __m512 lo0 = _mm512_loadu_ps(x), hi0 = lo0, lo1 = lo0, hi1 = lo0;
  __m512 poison0 = _mm512_setzero_ps(), poison1 = poison0;
  size_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + kLanes);
    poison0 = orBits(poison0, _mm512_sub_ps(v0, v0));
    poison1 = orBits(poison1, _mm512_sub_ps(v1, v1));
    lo0 = _mm512_min_ps(lo0, v0);
    hi0 = _mm512_max_ps(hi0, v0);
    lo1 = _mm512_min_ps(lo1, v1);
    hi1 = _mm512_max_ps(hi1, v1);
  }
  const __m512 poison = orBits(poison0, poison1);
  GroupStats result{0.0f, _mm512_reduce_min_ps(_mm512_min_ps(lo0, lo1)),
                    _mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1)),
                    _mm512_cmp_ps_mask(poison, poison, _CMP_UNORD_Q) != 0};
  if (i < n) {
    GroupStats rest;
    scalar().stats(x + i, n - i, &rest);
    result = GroupStats{0.0f, std::min(result.min, rest.min), std::max(result.max, rest.max),
                        result.nonFinite || rest.nonFinite};
  }
  result.absmax = std::max(std::fabs(result.min), std::fabs(result.max));
  *s = result;
}

// The largest of sixteen lanes by halving: a tree, not a chain, since the group's scale waits
// on it.
inline uint32_t largestLane(__m512i v) {
  const __m256i m8 = _mm256_max_epu32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(m8), _mm256_extracti128_si256(m8, 1));
  m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(1, 0, 3, 2)));
  m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(2, 3, 0, 1)));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(m4));
}

// Two running maxima of the magnitudes' bits (magnitudeBits), started from the first two
// vectors (GCC 12 misreads the intrinsics' undefined pass-through when they start from zeros).
void absmaxStats(const float* x, size_t n, GroupStats* s) {
  if (n < 2 * kLanes) return scalar().absmaxStats(x, n, s);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  const auto bitsAt = [&](size_t i) {
    return _mm512_and_si512(_mm512_loadu_si512(x + i), magnitude);
  };
  __m512i largest0 = bitsAt(0), largest1 = bitsAt(kLanes);
  size_t i = 2 * kLanes;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    largest0 = _mm512_max_epu32(largest0, bitsAt(i));
    largest1 = _mm512_max_epu32(largest1, bitsAt(i + kLanes));
  }
  uint32_t largest = std::max(largestLane(largest0), largestLane(largest1));
  for (; i < n; ++i) largest = std::max(largest, magnitudeBits(x[i]));
  *s = statsOfLargestMagnitude(largest);
}

// Clamping before rounding equals rounding before clamping (the bounds are integers and
// rounding is monotonic), and lets one conversion round.
template <int kRounding>
struct CodeRange {
  __m512 lo, hi;
  __m512i loBytes;
  bool isSigned;
  __m512i convert(__m512 v) const {
    return _mm512_cvt_roundps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi), kRounding);
  }
  // Rounded and capped at hi only: the packs saturate and raiseToLow finishes the clamp. A
  // NaN passes the cap (the second operand is returned) and, as values too negative for int32,
  // converts to INT32_MIN, which saturates and is raised to lo as the reference's clamp does.
  __m512i convertCapped(__m512 v) const {
    return _mm512_cvt_roundps_epi32(_mm512_min_ps(hi, v), kRounding);
  }
  __m512i narrow(__m512i words01, __m512i words23) const {
    return isSigned ? _mm512_packs_epi16(words01, words23) : _mm512_packus_epi16(words01, words23);
  }
  __m512i raiseToLow(__m512i bytes) const {
    return isSigned ? _mm512_max_epi8(bytes, loBytes) : _mm512_max_epu8(bytes, loBytes);
  }
  // Sixteen codes with one narrowing conversion (the bounds make truncation exact).
  void store16(__m512 v, uint8_t* out) const {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(convert(v)));
  }
};

template <int kRounding>
CodeRange<kRounding> codeRange(int lo, int hi) {
  return {_mm512_set1_ps(static_cast<float>(lo)), _mm512_set1_ps(static_cast<float>(hi)),
          _mm512_set1_epi8(static_cast<char>(lo)), lo < 0};
}

// Stores the codes of valueAt(i) (sixteen values ready to convert) for every whole sixteen of
// n; returns where the tail begins. Sixty-four at a time through saturating packs, as the
// AVX2 kernels do: a value then needs only its cap before converting, and one raiseToLow
// clamps sixty-four codes (the narrowing conversion truncates, so it needs both bounds). The
// packs leave each sixteen's quarters sixteen bytes apart; the permutation puts them back.
template <int kRounding, typename ValueAt>
size_t storeCodes(size_t n, ValueAt valueAt, const CodeRange<kRounding>& range, uint8_t* codes) {
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  size_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const __m512i words01 = _mm512_packs_epi32(range.convertCapped(valueAt(i)),
                                               range.convertCapped(valueAt(i + kLanes)));
    const __m512i words23 = _mm512_packs_epi32(range.convertCapped(valueAt(i + 2 * kLanes)),
                                               range.convertCapped(valueAt(i + 3 * kLanes)));
    const __m512i bytes =
        _mm512_permutexvar_epi32(order, range.raiseToLow(range.narrow(words01, words23)));
    _mm512_storeu_si512(codes + i, bytes);
  }
  for (; i + kLanes <= n; i += kLanes) range.store16(valueAt(i), codes + i);
  return i;
}

void codesNearest(const float* x, size_t n, float offset, float inv, float center, int lo, int hi,
                  uint8_t* codes) {
  const __m512 vOffset = _mm512_set1_ps(offset), vInv = _mm512_set1_ps(inv);
  const __m512 vCenter = _mm512_set1_ps(center);
  const auto range = codeRange<kNearest>(lo, hi);
  size_t i;
  if (offset == 0.0f && center == 0.0f) {
    // Symmetric codes: subtracting and adding zero are exact, so they are left out.
    i = storeCodes(
        n, [&](size_t j) { return _mm512_mul_ps(_mm512_loadu_ps(x + j), vInv); }, range, codes);
  } else {
    i = storeCodes(
        n,
        [&](size_t j) {
          return _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vOffset), vInv),
                               vCenter);
        },
        range, codes);
  }
  if (i < n) scalar().codesNearest(x + i, n - i, offset, inv, center, lo, hi, codes + i);
}

inline __m512i hash16(__m512i index, __m512i seed) {
  __m512i h = _mm512_xor_si512(
      _mm512_mullo_epi32(index, _mm512_set1_epi32(static_cast<int>(0x9e3779b1u))), seed);
  h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
  h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int>(0x85ebca6bu)));
  h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 13));
  h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int>(0xc2b2ae35u)));
  return _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
}

// Its own two kernels in turn: a pass beside the codes, as AVX2's, was not measured on a CPU
// with AVX-512.
void codesSymmetricBesideAbsmax(const float* x, size_t n, float inv, int lo, int hi, uint8_t* codes,
                                const float* next, size_t nextN, GroupStats* nextStats) {
  absmaxStats(next, nextN, nextStats);
  codesNearest(x, n, 0.0f, inv, 0.0f, lo, hi, codes);
}

void codesStochastic(const float* x, size_t n, float offset, float inv, float center, int lo,
                     int hi, uint32_t seed, uint32_t index0, uint8_t* codes) {
  const __m512 vOffset = _mm512_set1_ps(offset), vInv = _mm512_set1_ps(inv);
  const __m512 vCenter = _mm512_set1_ps(center);
  const __m512i vSeed = _mm512_set1_epi32(static_cast<int>(seed));
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 unit = _mm512_set1_ps(0x1p-24f);
  const auto valueAt = [&](size_t j) {
    const __m512i index = _mm512_add_epi32(
        _mm512_set1_epi32(static_cast<int>(index0 + static_cast<uint32_t>(j))), lanes);
    const __m512 u =
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(hash16(index, vSeed), 8)), unit);
    const __m512 scaled = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vOffset), vInv);
    return _mm512_add_ps(_mm512_add_ps(scaled, vCenter), u);
  };
  const size_t i = storeCodes(n, valueAt, codeRange<kFloor>(lo, hi), codes);
  if (i < n)
    scalar().codesStochastic(x + i, n - i, offset, inv, center, lo, hi, seed,
                             index0 + static_cast<uint32_t>(i), codes + i);
}

inline __m128i load16Bytes(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

inline __m256i load32Bytes(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

void decodeSigned(const int8_t* codes, size_t n, float scale, float* out) {
  const __m512 vScale = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512i c = _mm512_cvtepi8_epi32(load16Bytes(codes + i));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_cvtepi32_ps(c), vScale));
  }
  if (i < n) scalar().decodeSigned(codes + i, n - i, scale, out + i);
}

void decodeUnsigned(const uint8_t* codes, size_t n, float scale, float offset, float center,
                    float* out) {
  const __m512 vScale = _mm512_set1_ps(scale), vOffset = _mm512_set1_ps(offset);
  const __m512 vCenter = _mm512_set1_ps(center);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512i c = _mm512_cvtepu8_epi32(load16Bytes(codes + i));
    const __m512 centered = _mm512_sub_ps(_mm512_cvtepi32_ps(c), vCenter);
    _mm512_storeu_ps(out + i, _mm512_add_ps(_mm512_mul_ps(centered, vScale), vOffset));
  }
  if (i < n) scalar().decodeUnsigned(codes + i, n - i, scale, offset, center, out + i);
}

// Sixty-four codes per step: each 16-bit lane holds a pair, folded into its low byte.
void packNibbles(const uint8_t* codes, size_t n, uint8_t* packed) {
  const __m512i lowMask = _mm512_set1_epi16(0x000f), highMask = _mm512_set1_epi16(0x00f0);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i pairs = _mm512_loadu_si512(codes + i);
    const __m512i folded = _mm512_or_si512(_mm512_and_si512(pairs, lowMask),
                                           _mm512_and_si512(_mm512_srli_epi16(pairs, 4), highMask));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + i / 2), _mm512_cvtepi16_epi8(folded));
  }
  if (i < n) scalar().packNibbles(codes + i, n - i, packed + i / 2);
}

// Thirty-two bytes per step, each widened to a 16-bit lane that receives its two codes.
void unpackNibbles(const uint8_t* packed, size_t n, bool isSigned, uint8_t* codes) {
  const __m512i byteMask = _mm512_set1_epi16(0x00ff);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i bytes = _mm512_cvtepu8_epi16(load32Bytes(packed + i / 2));
    __m512i low, high;
    if (isSigned) {
      low = _mm512_and_si512(_mm512_srai_epi16(_mm512_slli_epi16(bytes, 12), 12), byteMask);
      high = _mm512_slli_epi16(_mm512_srai_epi16(_mm512_slli_epi16(bytes, 8), 12), 8);
    } else {
      low = _mm512_and_si512(bytes, _mm512_set1_epi16(0x000f));
      high = _mm512_slli_epi16(_mm512_srli_epi16(bytes, 4), 8);
    }
    _mm512_storeu_si512(codes + i, _mm512_or_si512(low, high));
  }
  if (i < n) scalar().unpackNibbles(packed + i / 2, n - i, isSigned, codes + i);
}

inline __m256i load16Halves(const uint16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

void widenFloat16(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(load16Halves(in + i)));
  if (i < n) scalar().widenFloat16(in + i, n - i, out + i);
}

inline __m512 widen16Bfloat16(const uint16_t* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load16Halves(p)), 16));
}

void widenBfloat16(const uint16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm512_storeu_ps(out + i, widen16Bfloat16(in + i));
  if (i < n) scalar().widenBfloat16(in + i, n - i, out + i);
}

// Its own kernels in turn, as codesSymmetricBesideAbsmax.
void codesSymmetricBesideWidenAbsmax(const float* x, size_t n, float inv, int lo, int hi,
                                     uint8_t* codes, const uint16_t* next, bool bfloat16,
                                     size_t nextN, float* nextWidened, GroupStats* nextStats) {
  (bfloat16 ? widenBfloat16 : widenFloat16)(next, nextN, nextWidened);
  codesSymmetricBesideAbsmax(x, n, inv, lo, hi, codes, nextWidened, nextN, nextStats);
}

void narrowFloat16(const float* in, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) scalar().narrowFloat16(in + i, n - i, out + i);
}

// Round to nearest even on the bit pattern; NaN keeps its top bits and is made quiet.
inline __m256i narrow16Bfloat16(__m512 values) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i absMask = _mm512_set1_epi32(0x7fffffff), infBits = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x0040);
  const __m512i bits = _mm512_castps_si512(values);
  const __m512i high = _mm512_srli_epi32(bits, 16);
  const __m512i lsb = _mm512_and_si512(high, one);
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(bias, lsb)), 16);
  const __mmask16 isNan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(bits, absMask), infBits);
  return _mm512_cvtepi32_epi16(_mm512_mask_or_epi32(rounded, isNan, high, quiet));
}

void narrowBfloat16(const float* in, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        narrow16Bfloat16(_mm512_loadu_ps(in + i)));
  }
  if (i < n) scalar().narrowBfloat16(in + i, n - i, out + i);
}

void accumulate(float* accumulator, const float* x, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm512_storeu_ps(accumulator + i,
                     _mm512_add_ps(_mm512_loadu_ps(accumulator + i), _mm512_loadu_ps(x + i)));
  }
  if (i < n) scalar().accumulate(accumulator + i, x + i, n - i);
}

void sumIntoBfloat16(const uint16_t* x, const float* addend, size_t n, uint16_t* out,
                     uint16_t* copy) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256i sum =
        narrow16Bfloat16(_mm512_add_ps(widen16Bfloat16(x + i), _mm512_loadu_ps(addend + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), sum);
    if (copy != nullptr) _mm256_storeu_si256(reinterpret_cast<__m256i*>(copy + i), sum);
  }
  if (i < n) {
    scalar().sumIntoBfloat16(x + i, addend + i, n - i, out + i,
                             copy != nullptr ? copy + i : nullptr);
  }
}

void divide(float* values, size_t n, float divisor) {
  const __m512 d = _mm512_set1_ps(divisor);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm512_storeu_ps(values + i, _mm512_div_ps(_mm512_loadu_ps(values + i), d));
  }
  if (i < n) scalar().divide(values + i, n - i, divisor);
}

// A block's magnitudes by their bits (non-negative floats order as their bits do); a
// non-finite one has every exponent bit set.
void codeResidualBlocks(const float* x, size_t n, int8_t* codes, float* scales) {
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff), exponent = _mm512_set1_epi32(0x7f800000);
  const auto range = codeRange<kNearest>(-127, 127);
  size_t b = 0;
  for (; b + kResidualBlock <= n; b += kResidualBlock) {
    const __m512 v0 = _mm512_loadu_ps(x + b), v1 = _mm512_loadu_ps(x + b + kLanes);
    const __m512i a0 = _mm512_and_si512(_mm512_castps_si512(v0), magnitude);
    const __m512i a1 = _mm512_and_si512(_mm512_castps_si512(v1), magnitude);
    const bool nonFinite =
        (_mm512_cmpge_epu32_mask(a0, exponent) | _mm512_cmpge_epu32_mask(a1, exponent)) != 0;
    const uint32_t largestBits = _mm512_reduce_max_epu32(_mm512_max_epu32(a0, a1));
    float largest;
    std::memcpy(&largest, &largestBits, sizeof(largest));
    const ResidualScale r = residualScale(largest, nonFinite);
    auto* out = reinterpret_cast<uint8_t*>(codes + b);
    if (r.inv == 0.0f) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_setzero_si256());
    } else {
      const __m512 inv = _mm512_set1_ps(r.inv);
      range.store16(_mm512_mul_ps(v0, inv), out);
      range.store16(_mm512_mul_ps(v1, inv), out + kLanes);
    }
    scales[b / kResidualBlock] = r.scale;
  }
  if (b < n) scalar().codeResidualBlocks(x + b, n - b, codes + b, scales + b / kResidualBlock);
}

void addResidualBlocks(const int8_t* codes, const float* scales, size_t n, float* values) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 scale = _mm512_set1_ps(scales[i / kResidualBlock]);
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i));
    const __m512 decoded = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)), scale);
    _mm512_storeu_ps(values + i, _mm512_add_ps(_mm512_loadu_ps(values + i), decoded));
  }
  if (i < n) scalar().addResidualBlocks(codes + i, scales + i / kResidualBlock, n - i, values + i);
}

// The vector operations the butterflies between vectors take (butterflies_between_vectors.h).
struct Avx512Vectors {
  using Vector = __m512;
  static constexpr uint32_t kLanes = zccl::kLanes;
  static Vector load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vector x) { _mm512_storeu_ps(p, x); }
  static Vector add(Vector a, Vector b) { return _mm512_add_ps(a, b); }
  static Vector sub(Vector a, Vector b) { return _mm512_sub_ps(a, b); }
};

// One butterfly stage inside a vector: a + b, or a - b in `differenceLanes` (a - b itself, not
// a + -b, which differs for a NaN b in its sign bit).
__m512 butterfly(__m512 a, __m512 b, __mmask16 differenceLanes) {
  return _mm512_mask_blend_ps(differenceLanes, _mm512_add_ps(a, b), _mm512_sub_ps(a, b));
}

// The butterflies of the first four stages inside each sixteen-lane vector, then the later
// stages between vectors, two at a time.
void walshHadamardLanes(float* v, uint32_t n) {
  for (uint32_t at = 0; at < n; at += kLanes) {
    __m512 x = _mm512_loadu_ps(v + at);
    x = butterfly(_mm512_shuffle_ps(x, x, _MM_SHUFFLE(2, 2, 0, 0)),
                  _mm512_shuffle_ps(x, x, _MM_SHUFFLE(3, 3, 1, 1)), 0xaaaa);
    x = butterfly(_mm512_shuffle_ps(x, x, _MM_SHUFFLE(1, 0, 1, 0)),
                  _mm512_shuffle_ps(x, x, _MM_SHUFFLE(3, 2, 3, 2)), 0xcccc);
    x = butterfly(_mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(2, 2, 0, 0)),
                  _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(3, 3, 1, 1)), 0xf0f0);
    x = butterfly(_mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(1, 0, 1, 0)),
                  _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(3, 2, 3, 2)), 0xff00);
    _mm512_storeu_ps(v + at, x);
  }
  butterfliesBetweenVectors<Avx512Vectors>(v, n, Avx512Vectors::kLanes);
}

// Sixteen signs a vector: the word's half is the mask of the lanes whose sign bit flips.
void flipSigns(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  const __m512i signBit = _mm512_set1_epi32(INT32_MIN);
  for (uint32_t word = 0; word < n / 32; ++word) {
    const uint32_t signs = smoothingSignWord(seed, first, word);
    for (uint32_t half = 0; half < 2; ++half) {
      float* at = v + 32 * word + kLanes * half;
      const __m512i x = _mm512_castps_si512(_mm512_loadu_ps(at));
      const auto lanes = static_cast<__mmask16>(signs >> (kLanes * half));
      _mm512_storeu_ps(at, _mm512_castsi512_ps(_mm512_mask_xor_epi32(x, lanes, x, signBit)));
    }
  }
}

}  // namespace
}  // namespace zccl
ZCCL_END_TARGET

namespace zccl {

const QuantKernels* avx512QuantKernels() {
  if (!cpuHasAvx512() || avx2QuantKernels() == nullptr) return nullptr;
  // INT2's packing moves a quarter of a byte per code: AVX2's version keeps up with the rest.
  static const QuantKernels kernels{"avx512",
                                    stats,
                                    absmaxStats,
                                    codesNearest,
                                    codesSymmetricBesideAbsmax,
                                    codesSymmetricBesideWidenAbsmax,
                                    codesStochastic,
                                    decodeSigned,
                                    decodeUnsigned,
                                    packNibbles,
                                    unpackNibbles,
                                    avx2QuantKernels()->packCrumbs,
                                    avx2QuantKernels()->unpackCrumbs,
                                    widenFloat16,
                                    widenBfloat16,
                                    narrowFloat16,
                                    narrowBfloat16,
                                    accumulate,
                                    sumIntoBfloat16,
                                    divide,
                                    codeResidualBlocks,
                                    addResidualBlocks,
                                    walshHadamardLanes,
                                    flipSigns};
  return &kernels;
}

}  // namespace zccl
