// The reductions of the device path as CUDA kernels queued on a stream: the host functions'
// semantics (kernels/reduce.h; accumulateAsFloat and storeFloatAs of quant/quantize.h) with
// the same element arithmetic (kernels/reduce_math.h, common/half.h), so results are
// byte-identical to the CPU's. Built only with CUDA (ZCCL_HAVE_CUDA).
#pragma once

#include <cstddef>

#include "common/status.h"
#include "common/types.h"
#include "quant/quantize_cuda.h"

namespace zccl {

// The most inputs reduceOrderedCuda takes: their pointers travel as kernel arguments.
constexpr int kMaxOrderedInputsCuda = 128;

Status reduceIntoCuda(void* inout, const void* in, size_t count, DataType type, RedOp op,
                      DeviceStream stream);
// `inputs` is a host array of device pointers (read before the call returns).
Status reduceOrderedCuda(void* out, const void* const* inputs, int numInputs, size_t count,
                         DataType type, RedOp op, DeviceStream stream);
Status divideByCountCuda(void* data, size_t count, DataType type, int divisor, DeviceStream stream);
Status accumulateAsFloatCuda(const void* x, DataType type, size_t count, float* accumulator,
                             DeviceStream stream);
Status storeFloatAsCuda(float* values, size_t count, int divisor, DataType type, void* out,
                        DeviceStream stream);
Status negateFloatsCuda(float* data, size_t count, DeviceStream stream);
// Loads every kernel above into the current device's context (common/cuda_status.h says why).
Status preloadReduceKernelsCuda();

}  // namespace zccl
