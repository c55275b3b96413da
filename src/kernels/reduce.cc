// Host reductions (reduce.h): reduce_loops.inc compiled three times, for the baseline, AVX2
// and AVX-512, each under a target of its own (not a file compiled with other flags: the
// inline element arithmetic it uses stays compiled for the baseline wherever it is not
// inlined, so no AVX instruction reaches code that a CPU without them runs).
#include "kernels/reduce.h"

#include <algorithm>
#include <cstdint>

#include "kernels/reduce_math.h"

namespace zccl {
namespace {

namespace baseline {
constexpr const char* kName = "baseline";
#include "kernels/reduce_loops.inc"
}  // namespace baseline

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
namespace avx2 {
constexpr const char* kName = "avx2";
#include "kernels/reduce_loops.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl"))), \
                             apply_to = function)
#else
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
#endif
namespace avx512 {
constexpr const char* kName = "avx512";
#include "kernels/reduce_loops.inc"
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const ReduceLoops& bestReduceLoops() {
  static const ReduceLoops& best = []() -> const ReduceLoops& {
    if (const ReduceLoops* loops = avx512ReduceLoops()) return *loops;
    if (const ReduceLoops* loops = avx2ReduceLoops()) return *loops;
    return baselineReduceLoops();
  }();
  return best;
}

}  // namespace

const ReduceLoops& baselineReduceLoops() { return baseline::kLoops; }

const ReduceLoops* avx2ReduceLoops() {
  return __builtin_cpu_supports("avx2") ? &avx2::kLoops : nullptr;
}

const ReduceLoops* avx512ReduceLoops() {
  const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return supported ? &avx512::kLoops : nullptr;
}

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
