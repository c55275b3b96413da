// Smoothing's rotation on the CPU (rotation.h): the butterflies of the first two stages
// inside each four-lane vector by shuffles (a + (b with its sign flipped) is a - b to the
// bit), the later ones between vectors; the signs 32 at a time by XOR of the sign bit.
#include "quant/rotation.h"

#include <cstring>

#include "quant/group_math.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace zccl {
namespace {

void flipSigns(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  for (uint32_t word = 0; word < n / 32; ++word) {
    const uint32_t signs = smoothingSignWord(seed, first, word);
    uint32_t bits[32];
    std::memcpy(bits, v + 32 * word, sizeof(bits));
    for (uint32_t j = 0; j < 32; ++j) bits[j] ^= ((signs >> j) & 1u) << 31;
    std::memcpy(v + 32 * word, bits, sizeof(bits));
  }
}

#if defined(__SSE2__)
void walshHadamardVectors(float* v, uint32_t n) {
  const __m128 oddLanes = _mm_castsi128_ps(_mm_set_epi32(INT32_MIN, 0, INT32_MIN, 0));
  const __m128 highLanes = _mm_castsi128_ps(_mm_set_epi32(INT32_MIN, INT32_MIN, 0, 0));
  for (uint32_t at = 0; at < n; at += 4) {
    __m128 x = _mm_loadu_ps(v + at);
    // half 1: (x0 + x1, x0 - x1, x2 + x3, x2 - x3); half 2: likewise between pairs.
    __m128 a = _mm_shuffle_ps(x, x, _MM_SHUFFLE(2, 2, 0, 0));
    __m128 b = _mm_shuffle_ps(x, x, _MM_SHUFFLE(3, 3, 1, 1));
    x = _mm_add_ps(a, _mm_xor_ps(b, oddLanes));
    a = _mm_shuffle_ps(x, x, _MM_SHUFFLE(1, 0, 1, 0));
    b = _mm_shuffle_ps(x, x, _MM_SHUFFLE(3, 2, 3, 2));
    _mm_storeu_ps(v + at, _mm_add_ps(a, _mm_xor_ps(b, highLanes)));
  }
  for (uint32_t half = 4; half < n; half *= 2) {
    for (uint32_t start = 0; start < n; start += 2 * half) {
      for (uint32_t i = start; i < start + half; i += 4) {
        const __m128 a = _mm_loadu_ps(v + i);
        const __m128 b = _mm_loadu_ps(v + i + half);
        _mm_storeu_ps(v + i, _mm_add_ps(a, b));
        _mm_storeu_ps(v + i + half, _mm_sub_ps(a, b));
      }
    }
  }
}
#else
void walshHadamardVectors(float* v, uint32_t n) { walshHadamard(v, n); }
#endif

}  // namespace

void smoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  flipSigns(v, n, seed, first);
  walshHadamardVectors(v, n);
  const float inverse = 1.0f / static_cast<float>(n);
  for (uint32_t i = 0; i < n; ++i) v[i] *= inverse;
}

void unsmoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  walshHadamardVectors(v, n);
  flipSigns(v, n, seed, first);
}

}  // namespace zccl
