// The steps of an algorithm that touch data (copying, zeroing, reducing, quantizing), behind
// one interface with an implementation per kind of memory, so that each algorithm is written
// once and runs on host or device buffers alike. Algorithms call these and nothing else on
// their buffers; the transport moves the bytes.
//
// Every operation has the semantics of its host function (kernels/reduce.h, quant/quantize.h)
// and must give byte-identical results. A device implementation queues its work on the
// collective's stream, the stream its transport copies or sends on, so what a kernel wrote
// is complete before it travels.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "common/types.h"
#include "quant/quantize.h"

namespace zccl {

class Kernels {
 public:
  virtual ~Kernels() = default;

  virtual MemoryKind memory() const = 0;

  // memmove: the ranges may overlap.
  virtual Status copy(void* to, const void* from, size_t bytes) = 0;
  // `count` float32 zeros: a float32 accumulator's start.
  virtual Status zeroFloats(float* data, size_t count) = 0;

  virtual Status reduceInto(void* inout, const void* in, size_t count, DataType type, RedOp op) = 0;
  // `inputs` is a host array of pointers into this memory.
  virtual Status reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count,
                               DataType type, RedOp op) = 0;
  virtual Status divideByCount(void* data, size_t count, DataType type, int divisor) = 0;

  virtual Status quantize(const void* in, DataType type, size_t count, const QuantParams& params,
                          void* out, size_t capacity) = 0;
  // `format` holds the bits, scheme and group size the message must have (the plan's: every
  // rank agreed on them). The host's kernels check the header at once; a device's check it on
  // the device, so that a collective never waits for a header to reach the host, decode
  // nothing from a message that differs, and say so in deviceErrors().
  virtual Status dequantize(const void* message, size_t bytes, const QuantParams& format, void* out,
                            DataType type, size_t count) = 0;
  virtual Status dequantizeAccumulate(const void* message, size_t bytes, const QuantParams& format,
                                      float* accumulator, size_t count) = 0;
  virtual Status accumulateAsFloat(const void* x, DataType type, size_t count,
                                   float* accumulator) = 0;
  // out[i] = x[i] in float32: a float32 accumulator's start from a reduction's own
  // contribution. By default zeroFloats then accumulateAsFloat.
  virtual Status convertToFloat(const void* x, DataType type, size_t count, float* out) {
    ZCCL_CHECK(zeroFloats(out, count));
    return accumulateAsFloat(x, type, count, out);
  }
  virtual Status storeFloatAs(float* values, size_t count, int divisor, DataType type,
                              void* out) = 0;
  // data[i] = -data[i] (exact): with accumulations, a difference (error feedback's residual, a
  // weight's change from its reference).
  virtual Status negateFloats(float* data, size_t count) = 0;
  // out[i] = -reference[i] + x[i] in float32, both in `type`: a weight's change from its
  // reference. By default convertToFloat, negateFloats and accumulateAsFloat.
  virtual Status differenceAsFloat(const void* x, const void* reference, DataType type,
                                   size_t count, float* out) {
    ZCCL_CHECK(convertToFloat(reference, type, count, out));
    ZCCL_CHECK(negateFloats(out, count));
    return accumulateAsFloat(x, type, count, out);
  }

  // out = x + addend in `type`, and copy = out where `copy` is given (quant/quantize.h's
  // storeSumAs). By default accumulateAsFloat, storeFloatAs and copy, which leave `addend`
  // holding the float32 sum: callers must not read it after.
  virtual Status storeSumAs(const void* x, DataType type, size_t count, float* addend, void* out,
                            void* copy) {
    ZCCL_CHECK(accumulateAsFloat(x, type, count, addend));
    ZCCL_CHECK(storeFloatAs(addend, count, 1, type, out));
    return copy != nullptr ? this->copy(copy, out, count * elementSize(type)) : Status::kSuccess;
  }
  // A message decoded onto typed values (quant/quantize.h's dequantizeOnto): out = x + x^ in
  // the target's type. By default dequantize into `work` (count float32 values) and storeSumAs;
  // the fused kernel leaves `work` alone.
  virtual Status dequantizeOnto(const void* message, size_t bytes, const QuantParams& format,
                                size_t count, const SumTarget& target, float* work) {
    ZCCL_CHECK(dequantize(message, bytes, format, work, DataType::kFloat32, count));
    return storeSumAs(target.x, target.type, count, work, target.out, target.copy);
  }
  // Quantization with error feedback (quant/quantize.h's quantizeWithFeedback). By default its
  // unfused steps, through `work`: -(-work + x^) is what the message lost, stored as the
  // residuals' type.
  virtual Status quantizeWithFeedback(const void* x, DataType type, size_t count,
                                      const QuantParams& params, void* message, size_t capacity,
                                      const Residuals& residual, float* work) {
    ZCCL_CHECK(checkResidualType(residual.type, "residual type"));
    // int8 residuals, with their scales, on the host: the state of error feedback is host
    // memory (calls on a device's memory refuse it).
    const bool int8 = residual.type == DataType::kInt8;
    if (x != work) ZCCL_CHECK(convertToFloat(x, type, count, work));
    if (int8) {
      accumulateInt8Residuals(residual, count, work);
    } else {
      ZCCL_CHECK(accumulateAsFloat(residual.values, residual.type, count, work));
    }
    ZCCL_CHECK(quantize(work, DataType::kFloat32, count, params, message, capacity));
    ZCCL_CHECK(negateFloats(work, count));
    ZCCL_CHECK(dequantizeAccumulate(message, capacity, params, work, count));
    ZCCL_CHECK(negateFloats(work, count));
    if (int8) {
      keepInt8Residuals(work, count, residual);
      return Status::kSuccess;
    }
    return storeFloatAs(work, count, 1, residual.type, residual.values);
  }

  // Elements a pipelined algorithm handles per step: on the host a few hundred KiB that stay
  // in the cache between steps; on a device, where every step costs kernel launches, more.
  virtual size_t pipelineElements() const { return size_t{1} << 22; }

  // Once the work queued so far has finished: what the checks made on the device found since
  // the last call (a message whose header differs from its format). The host's find nothing
  // here: they fail the call itself.
  virtual Status deviceErrors() { return Status::kSuccess; }
};

// The message's header against `format` and `count` (host memory).
Status checkMessageFormat(const QuantHeader& header, const QuantParams& format, size_t count);

// The kernels of host memory: the CPU's (SIMD where the CPU has it), synchronous.
Kernels& hostKernels();
// The same with Kernels' unfused defaults for storeSumAs, dequantizeOnto and
// quantizeWithFeedback, the steps a device runs: what the fused ones are tested and measured
// against.
Kernels& unfusedHostKernels();

}  // namespace zccl
