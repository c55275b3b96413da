// Element-wise reductions on host memory for every DataType and RedOp.
//
// Integers wrap like unsigned arithmetic of their width (no undefined overflow).
// Half-precision values are computed in float32. max/min propagate NaN.
#pragma once

#include <cstddef>

#include "common/types.h"

namespace zccl {

// inout[i] = inout[i] op in[i]. kAvg accumulates like kSum; divide with divideByCount().
// Half-precision results are rounded after every call (one rounding per hop).
void reduceInto(void* inout, const void* in, size_t count, DataType type, RedOp op);

// out[i] = inputs[0][i] op inputs[1][i] op ... in input order, accumulated in float32 for
// half precision (float64 and integers in their own type) and rounded once; kAvg then
// divides by `numInputs`. `out` may alias any input.
void reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count, DataType type,
                   RedOp op);

// data[i] /= divisor: the final step of kAvg after reduceInto (integers truncate).
void divideByCount(void* data, size_t count, DataType type, int divisor);

// The three, compiled for one instruction set. The functions above run the best set this CPU
// has (AVX-512, AVX2, else the baseline); every set gives the same values (of two NaN operands,
// which one passes on is the compiler's choice of operand order in any build).
struct ReduceLoops {
  void (*reduceInto)(void* inout, const void* in, size_t count, DataType type, RedOp op);
  void (*reduceOrdered)(void* out, const void* const* inputs, int numInputs, size_t count,
                        DataType type, RedOp op);
  void (*divideByCount)(void* data, size_t count, DataType type, int divisor);
};
const ReduceLoops& baselineReduceLoops();
const ReduceLoops* avx2ReduceLoops();    // nullptr where the CPU lacks AVX2
const ReduceLoops* avx512ReduceLoops();  // nullptr where it lacks AVX-512 F, BW and VL

}  // namespace zccl
