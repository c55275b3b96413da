// Smoothing's rotation on the CPU: smoothGroup() and unsmoothGroup() of group_math.h, the
// same additions in the same order for every element, eight or sixteen lanes at a time with
// the AVX2 and AVX-512 kernel sets (quant/kernels.h), so that its results are the
// definition's, and the GPU's, to the bit. Groups of at least 32 values.
#pragma once

#include <cstdint>

namespace zccl {

void smoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first);
void unsmoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first);

}  // namespace zccl
