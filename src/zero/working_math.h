// The optimizer's element-wise arithmetic, shared by the host's loops and the GPU's kernels so
// that both compute the same bits: conversions between float32 and the working precision
// (common/half.h's rounding), and one Adam update of one parameter.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/half.h"
#include "common/host_device.h"
#include "zccl/zero.hpp"

namespace zccl::zero {

// Bytes of one value in the working precision.
inline size_t elementSize(Precision p) { return p == Precision::kFloat32 ? 4 : 2; }

ZCCL_HOST_DEVICE inline float workingToFloat(Precision precision, const void* values, size_t i) {
  const auto* bits = static_cast<const uint16_t*>(values);
  switch (precision) {
    case Precision::kFloat32:
      return static_cast<const float*>(values)[i];
    case Precision::kBfloat16:
      return toFloat(bfloat16_t{bits[i]});
    case Precision::kFloat16:
      break;
  }
  return toFloat(float16_t{bits[i]});
}

// float32 arithmetic in PyTorch's order, the bias corrections folded into the step's
// constants; the GPU's is compiled without contraction into fused multiply-adds, as the host's.
ZCCL_HOST_DEVICE inline void adamElement(const AdamStep& s, float grad, float* param,
                                         float* moment1, float* moment2) {
  const float g = grad / s.lossScale + s.coupledDecay * *param;
  *moment1 = s.beta1 * *moment1 + (1 - s.beta1) * g;
  *moment2 = s.beta2 * *moment2 + (1 - s.beta2) * g * g;
  *param -= s.stepSize * *moment1 / (sqrtf(*moment2) * s.rootCorrection2 + s.epsilon) +
            s.decoupledDecay * *param;
}

// The host's loops: the precision chosen once per call, so that they vectorize, with the best
// instruction set the CPU has (every set gives the same bits, NaN payloads aside).
void toWorking(Precision precision, const float* in, size_t count, void* out);
void fromWorking(Precision precision, const void* in, size_t count, float* out);
// `working`: where the updated parameters go in the working precision, or nullptr.
void adamUpdate(const AdamStep& step, Precision precision, const void* grads, size_t count,
                float* params, float* moment1, float* moment2, void* working);

// The three, compiled for one instruction set.
struct HostLoops {
  void (*toWorking)(Precision precision, const float* in, size_t count, void* out);
  void (*fromWorking)(Precision precision, const void* in, size_t count, float* out);
  void (*adamUpdate)(const AdamStep& step, Precision precision, const void* grads, size_t count,
                     float* params, float* moment1, float* moment2, void* working);
};
const HostLoops& baselineHostLoops();
const HostLoops* avx2HostLoops();  // nullptr where the CPU lacks AVX2

}  // namespace zccl::zero
