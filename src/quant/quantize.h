// Blockwise INT8 / INT4 / INT2 quantization of float32, float16 and bfloat16 data into one
// self-describing wire message (quant/wire_format.h), and back.
//
// Symmetric:  scale = absmax / Q (Q = 127 for INT8, 7 for INT4, 1 for INT2), code =
//             round(x / scale) in [-Q, Q], x^ = code * scale.
// Asymmetric: scale = (max - min) / L (L = 255, 15, 3), offset = the midpoint
//             (max + min) / 2, code = round((x - offset) / scale + L/2) in [0, L],
//             x^ = (code - L/2) * scale + offset. Centring on the midpoint keeps every
//             intermediate finite even when max - min exceeds FLT_MAX.
//
// Error bound (round to nearest even), for every finite element x of a finite group:
//   |x - x^| <= scale / 2 + 2^-21 * max(|x|, |offset|) + 2^-140
// The first term is the rounding of the code; the others cover float32 arithmetic (the
// products x * (1/scale) and code * scale each round once) and groups of subnormal values.
// Stochastic rounding instead gives |x - x^| < scale (+ the same small terms) and
// E[x^] = x: the code is floor(v + u) with u uniform in [0, 1) from a hash of (seed, index),
// so the result is reproducible for a given seed.
//
// Relative RMS error on N(0, 1) data, group 256, round to nearest: the model is a rounding
// error uniform over one step, sqrt(E[scale^2] / 12), with E[absmax^2] (symmetric) or
// E[(max - min)^2] (asymmetric) of 256 normals from their order statistics. The tests
// assert the measurement within 10% of it (docs/measurements.md has the figures). INT2 has
// too few levels for a uniform rounding error: there only the bound above holds (tested).
//
// Non-finite input: a group holding any NaN or +-Inf stores a NaN scale (and offset) and
// dequantizes to NaN in every element. Overflow is never hidden inside a group, so a
// dynamic loss scaler downstream sees it; finite groups are unaffected.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "common/types.h"
#include "quant/group_math.h"
#include "quant/wire_format.h"

namespace zccl {

Status checkQuantParams(const QuantParams& params);
// float32, float16 and bfloat16 quantize; anything else is an error naming `argument`.
Status checkQuantizableType(DataType type, const char* argument);
// Total message bytes for `count` elements (header, payload, padding, group parameters).
size_t quantizedBytes(size_t count, const QuantParams& params);

// Quantizes `count` elements of `type` (float32, float16 or bfloat16) into `out`, which must
// hold quantizedBytes(count, params) bytes (`capacity` is checked).
Status quantize(const void* in, DataType type, size_t count, const QuantParams& params, void* out,
                size_t capacity);

// Checks a message's header against its length and returns it; never reads past `bytes`.
Status readQuantHeader(const void* message, size_t bytes, QuantHeader* header);

// Decodes into `count` elements of `type` (float32, float16, bfloat16); `count` must equal
// the message's element count.
Status dequantize(const void* message, size_t bytes, void* out, DataType type, size_t count);

// accumulator[i] += x^[i] in float32: the reduction step of quantized reduce-scatter.
Status dequantizeAccumulate(const void* message, size_t bytes, float* accumulator, size_t count);

// accumulator[i] += x[i] in float32, for x of float32, float16 or bfloat16: a reduction's
// own, unquantized contribution.
Status accumulateAsFloat(const void* x, DataType type, size_t count, float* accumulator);

// out[i] = x[i] in float32, for x of float32, float16 or bfloat16: an accumulator's start.
Status convertToFloat(const void* x, DataType type, size_t count, float* out);

// out[i] = -reference[i] + x[i] in float32, both given in `type`: a value's change from its
// reference (the weight differences' all-gather), a block at a time in the cache where
// convertToFloat, a negation and accumulateAsFloat take three passes over memory. Same bits.
Status differenceAsFloat(const void* x, const void* reference, DataType type, size_t count,
                         float* out);

// out[i] = values[i] / divisor (skipped for 1), rounded once to `type` (float32, float16 or
// bfloat16); `values` is overwritten. out may alias values only for float32.
Status storeFloatAs(float* values, size_t count, int divisor, DataType type, void* out);

// out[i] = x[i] + addend[i] in float32, rounded once to `type` (of x: float32, float16 or
// bfloat16), and copy[i] = out[i] where `copy` is not NULL: accumulateAsFloat, storeFloatAs and
// a copy in one pass over memory (a gathered change added to its reference). out may alias x,
// not addend.
Status storeSumAs(const void* x, DataType type, size_t count, const float* addend, void* out,
                  void* copy);

// Typed values that decoded changes are added to (weight differences' reference):
// out[i] = x[i] + change[i] in float32, rounded once to `type` (float32, float16 or bfloat16),
// and copy[i] = out[i] where `copy` is not NULL. out may alias x.
struct SumTarget {
  const void* x;
  DataType type;
  void* out;
  void* copy;
  // The same target from element `first` on.
  SumTarget from(size_t first) const;
};

// Decodes a message (`count` elements) onto `target`: dequantize() into float32 and
// storeSumAs() in one pass over memory, with their bits; the float32 changes are never stored.
Status dequantizeOnto(const void* message, size_t bytes, size_t count, const SumTarget& target);

// Error feedback's residuals: float32; bfloat16 to halve what a rank keeps and streams; or
// int8, LoCo's compressed error, about 1.13 bytes each: each block of kResidualBlock elements of
// a message, from its first, as int8 codes times a float32 scale (group_math.h's
// residualScale). Each residual but float32's is rounded once as it is kept; what that
// rounding loses is not fed back.
struct Residuals {
  void* values = nullptr;  // one per element: float32, bfloat16, or int8 codes
  DataType type = DataType::kFloat32;
  float* scales = nullptr;  // int8: the blocks' scales
  // The residuals of the message that starts at element `first` of block `owner` (one of the
  // call's blocks, in order): an int8 message's blocks take scales of their own, the same at
  // every call of the same count (none where there are none).
  Residuals at(size_t first, size_t owner) const;
};

// Whether residuals can be kept in `type` (float32, bfloat16 or int8; float16's range would
// lose the small residuals of small gradients), else an error naming `argument`.
Status checkResidualType(DataType type, const char* argument);
// Bytes of the residuals of `count` elements that calls split into at most `owners` blocks.
size_t residualBytes(DataType type, size_t count, size_t owners);
// The residuals of residualBytes() bytes at `storage` (zeroed: all residuals 0).
Residuals residualsIn(void* storage, DataType type, size_t count);
// int8 residuals: values[i] += residual i, and residual i = what lost[i] rounds to (for the
// unfused steps; the fused kernel does the same a group at a time).
void accumulateInt8Residuals(const Residuals& residual, size_t count, float* values);
void keepInt8Residuals(const float* lost, size_t count, const Residuals& residual);

// Quantizes x + residual with error feedback (EF21, LoCo): the message is quantize() of the
// float32 sums x[i] + residual[i], and then residual[i] = -(-(x[i] + residual[i]) + x^[i]),
// what the message lost, for the next call, rounded once to the residuals' type. The bits of
// the unfused steps (convertToFloat, accumulateAsFloat, quantize, then the negation,
// dequantizeAccumulate, a second negation and storeFloatAs, all in `work`), a group at a time
// in the cache: one pass over memory instead of seven. `work` (count float32 values, or x
// itself when x is float32) is the unfused steps' scratch: its contents afterwards are
// unspecified.
Status quantizeWithFeedback(const void* x, DataType type, size_t count, const QuantParams& params,
                            void* message, size_t capacity, const Residuals& residual, float* work);

// Which CPU kernels run: "avx2" or "scalar" (ZCCL_QUANT_ISA=scalar forces the reference).
const char* quantKernelName();

}  // namespace zccl
