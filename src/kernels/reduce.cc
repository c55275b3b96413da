// Host reductions (reduce.h): reduce_loops.inc compiled three times, for the baseline, AVX2
// and AVX-512 (common/target.h), the best the CPU has chosen once.
#include "kernels/reduce.h"

#include <algorithm>
#include <cstdint>

#include "common/target.h"
#include "kernels/reduce_math.h"

namespace zccl {
namespace {

namespace baseline {
#include "kernels/reduce_loops.inc"
}  // namespace baseline

ZCCL_BEGIN_TARGET("avx2")
namespace avx2 {
#include "kernels/reduce_loops.inc"
}  // namespace avx2
ZCCL_END_TARGET

ZCCL_BEGIN_TARGET("avx512f,avx512bw,avx512vl")
namespace avx512 {
#include "kernels/reduce_loops.inc"
}  // namespace avx512
ZCCL_END_TARGET

const ReduceLoops& bestReduceLoops() {
  static const ReduceLoops& best =
      firstSupported({avx512ReduceLoops(), avx2ReduceLoops()}, baselineReduceLoops());
  return best;
}

}  // namespace

const ReduceLoops& baselineReduceLoops() { return baseline::kLoops; }

const ReduceLoops* avx2ReduceLoops() { return cpuHasAvx2() ? &avx2::kLoops : nullptr; }

const ReduceLoops* avx512ReduceLoops() { return cpuHasAvx512() ? &avx512::kLoops : nullptr; }

void reduceInto(void* inout, const void* in, size_t count, DataType type, RedOp op) {
  bestReduceLoops().reduceInto(inout, in, count, type, op);
}

void reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count, DataType type,
                   RedOp op) {
  bestReduceLoops().reduceOrdered(out, inputs, numInputs, count, type, op);
}

void divideByCount(void* data, size_t count, DataType type, int divisor) {
  bestReduceLoops().divideByCount(data, count, type, divisor);
}

}  // namespace zccl
