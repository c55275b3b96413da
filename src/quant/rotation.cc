// Smoothing's rotation on the CPU (rotation.h): the signs 32 at a time by XOR of the sign
// bit, the butterflies by the active kernel set, several lanes at a time.
#include "quant/rotation.h"

#include <cstring>

#include "quant/group_math.h"
#include "quant/kernels.h"

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

}  // namespace

void smoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  flipSigns(v, n, seed, first);
  activeQuantKernels().walshHadamard(v, n);
  const float inverse = 1.0f / static_cast<float>(n);
  for (uint32_t i = 0; i < n; ++i) v[i] *= inverse;
}

void unsmoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  activeQuantKernels().walshHadamard(v, n);
  flipSigns(v, n, seed, first);
}

}  // namespace zccl
