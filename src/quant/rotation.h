// Smoothing's rotation on the CPU: smoothGroup() and unsmoothGroup() of group_math.h, the
// same additions in the same order for every element, four lanes at a time where the CPU has
// SSE2 (every x86-64), so that its results are the definition's, and the GPU's, to the bit.
#pragma once

#include <cstdint>

namespace zccl {

void smoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first);
void unsmoothGroupHost(float* v, uint32_t n, uint32_t seed, uint64_t first);

}  // namespace zccl
