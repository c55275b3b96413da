// Smoothing's rotation on the CPU (rotation.h): the signs and the butterflies by the active
// kernel set, several lanes at a time.
#include "quant/rotation.h"

#include "quant/kernels.h"

namespace zccl {

void smoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  const QuantKernels& k = activeQuantKernels();
  k.flipSigns(v, n, seed, first);
  k.walshHadamard(v, n);
  const float inverse = 1.0f / static_cast<float>(n);
  for (uint32_t i = 0; i < n; ++i) v[i] *= inverse;
}

void unsmoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first) {
  const QuantKernels& k = activeQuantKernels();
  k.walshHadamard(v, n);
  k.flipSigns(v, n, seed, first);
}

}  // namespace zccl
