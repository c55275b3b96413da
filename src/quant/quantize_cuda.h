// The quantization operations on GPU memory, as CUDA kernels ordered on a stream. Same wire
// format and the same float32 operations as the CPU kernels (quant/group_math.h), so a
// message quantized on the GPU is byte-identical to one quantized on the CPU.
// Built only when CUDA is found (ZCCL_HAVE_CUDA); callers check quantCudaAvailable().
#pragma once

#include <cstddef>

#include "common/status.h"
#include "common/types.h"
#include "quant/quantize.h"

struct CUstream_st;  // cudaStream_t without including the CUDA headers

namespace zccl {

using DeviceStream = CUstream_st*;

// True when zccl was built with CUDA and a device is visible.
bool quantCudaAvailable();

// As quantize(), with `in` and `out` in device memory; asynchronous on `stream`.
Status quantizeCuda(const void* in, DataType type, size_t count, const QuantParams& params,
                    void* out, size_t capacity, DeviceStream stream);

// As dequantize() and dequantizeAccumulate(), on device memory. The header is copied to the
// host and checked against `bytes` first, which synchronizes `stream` once per call; the
// decoding itself is asynchronous.
Status dequantizeCuda(const void* message, size_t bytes, void* out, DataType type, size_t count,
                      DeviceStream stream);
Status dequantizeAccumulateCuda(const void* message, size_t bytes, float* accumulator, size_t count,
                                DeviceStream stream);

// Either of them (accumulate: into float32 `out`) for a message whose format the caller knows
// (a collective's: the plan's), without synchronizing: every thread block compares the
// message's header with the one `format` and `count` make, on the device, and where they
// differ decodes nothing and sets *mismatch (device memory), for the caller to read once the
// stream has finished.
Status dequantizeKnownCuda(const void* message, size_t bytes, const QuantParams& format,
                           size_t count, void* out, DataType type, bool accumulate, int* mismatch,
                           DeviceStream stream);

// Loads every kernel above into the current device's context (common/cuda_status.h says why).
Status preloadQuantizeKernelsCuda();

}  // namespace zccl
